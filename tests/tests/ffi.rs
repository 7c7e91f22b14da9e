//! The C ABI (`ffi/`) read by a C program: `ffi/examples/read_features.c`, compiled against
//! the committed header and linked statically and dynamically, reads what a real `edgewised`
//! published from a snapshot dropped into its ingest directory.

use std::{path::Path, process::Command, time::Duration};

use edgewise::FeatureReader;
use edgewise_tests::{Daemon, SECRET, daemon_bin, scratch_dir, wait_until};

/// Compiles the example with `cc`, linked to the static or the shared library.
fn compile(out: &Path, shared: bool) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let libs = daemon_bin().parent().unwrap().to_owned();
    let mut cc = Command::new("cc");
    cc.args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(root.join("ffi/include"))
        .arg(root.join("ffi/examples/read_features.c"))
        .arg("-o")
        .arg(out);
    if shared {
        cc.arg("-L").arg(&libs).arg("-ledgewise_ffi");
    } else {
        cc.arg(libs.join("libedgewise_ffi.a"));
        cc.args(["-lpthread", "-ldl", "-lm"]);
    }
    let output = cc.output().expect("running cc");
    assert!(
        output.status.success(),
        "cc: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

fn run(program: &Path, args: &[&str]) -> (bool, String, String) {
    let libs = daemon_bin().parent().unwrap().to_owned();
    let output = Command::new(program)
        .args(args)
        .env("LD_LIBRARY_PATH", libs)
        .output()
        .unwrap();
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn a_c_program_reads_what_the_daemon_published() {
    let dir = scratch_dir("ffi");
    let store = dir.join("store");
    let config = dir.join("edgewised.toml");
    let text = format!(
        "[features]\ndir = {store:?}\ningest_dir = {:?}\ningest_interval_ms = 20\n",
        dir.join("ingest")
    );
    std::fs::write(&config, text).unwrap();
    let _daemon = Daemon::start_with_env(
        &["--config", config.to_str().unwrap()],
        &[("EDGEWISED_API_SECRET", SECRET)],
    );
    std::fs::write(dir.join("ingest/.users.csv"), "7,0.5,-1.25\n8,2,3\n").unwrap();
    std::fs::rename(dir.join("ingest/.users.csv"), dir.join("ingest/users.csv")).unwrap();
    let version = || {
        FeatureReader::open(&store)
            .and_then(|mut r| r.read().map(|g| g.version()))
            .unwrap_or(0)
    };
    wait_until(Duration::from_secs(20), || version() >= 2);

    for shared in [false, true] {
        let program = dir.join(if shared { "read_shared" } else { "read_static" });
        compile(&program, shared);
        let store = store.to_str().unwrap();
        let (ok, stdout, stderr) = run(&program, &[store, "users", "7", "8", "9"]);
        assert!(ok, "{stderr}");
        assert_eq!(
            stdout,
            format!(
                "version {}\n7: 0.5 -1.25\n8: 2 3\n9: not found\n",
                version()
            )
        );
        let missing = dir.join("nowhere");
        let (ok, _, stderr) = run(&program, &[missing.to_str().unwrap(), "users", "7"]);
        assert!(!ok);
        assert!(
            stderr.starts_with("open: ") && stderr.contains("nowhere"),
            "{stderr}"
        );
    }
}
