//! `daemon/dist/edgewised.service` as systemd would use it: the unit verifies, and its
//! ExecStartPre / ExecStart / ExecReload / KillSignal lines, run as written against the
//! example config, start, reload and stop the real daemon the way the unit promises.

use std::{
    collections::BTreeMap,
    io::{BufRead, BufReader},
    net::SocketAddr,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    sync::mpsc,
    thread,
    time::{Duration, Instant},
};

use edgewise_tests::{daemon_bin, http};

const INSTALLED_BIN: &str = "/usr/local/bin/edgewised";
const INSTALLED_CONFIG: &str = "/etc/edgewise/edgewised.toml";

fn dist(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../daemon/dist")
        .join(name)
}

/// The `[Service]` section's settings.
fn service_settings(unit: &str) -> BTreeMap<String, String> {
    let mut section = "";
    let mut settings = BTreeMap::new();
    for line in unit.lines().map(str::trim) {
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = name;
        } else if section == "Service"
            && let Some((key, value)) = line.split_once('=')
        {
            settings.insert(key.to_owned(), value.to_owned());
        }
    }
    settings
}

/// A unit command line with the installed paths replaced by this build's.
fn command_line(line: &str, config: &Path) -> Vec<String> {
    let bin = daemon_bin();
    line.replace(INSTALLED_BIN, bin.to_str().unwrap())
        .replace(INSTALLED_CONFIG, config.to_str().unwrap())
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("edgewise-systemd-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn the_unit_verifies() {
    let dir = scratch("verify");
    let unit = std::fs::read_to_string(dist("edgewised.service")).unwrap();
    let local = dir.join("edgewised.service");
    std::fs::write(
        &local,
        unit.replace(INSTALLED_BIN, daemon_bin().to_str().unwrap()),
    )
    .unwrap();
    // systemd-analyze comes with Debian's systemd package (`scripts/setup.sh --test` installs it).
    let out = Command::new("systemd-analyze")
        .args(["verify", "--man=no"])
        .arg(&local)
        .output()
        .expect("running systemd-analyze (apt-get install systemd)");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        !stderr.contains(local.to_str().unwrap()),
        "warnings: {stderr}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_units_commands_start_reload_and_stop_the_daemon() {
    let dir = scratch("run");
    let unit = std::fs::read_to_string(dist("edgewised.service")).unwrap();
    let service = service_settings(&unit);
    assert_eq!(service["KillSignal"], "SIGTERM");
    assert_eq!(service["Restart"], "on-failure");
    let stop_timeout = Duration::from_secs(service["TimeoutStopSec"].parse().unwrap());

    let config = dir.join("edgewised.toml");
    std::fs::copy(dist("edgewised.example.toml"), &config).unwrap();
    let hosts = dir.join("hosts.toml");
    std::fs::copy(dist("hosts.example.toml"), &hosts).unwrap();
    // What an operator's /etc/edgewise/edgewised.toml would add; a free port for the test, and
    // reloads on SIGHUP only so that the reload seen is ExecReload's.
    let env = [
        ("EDGEWISED_LISTEN", "127.0.0.1:0"),
        ("EDGEWISED_HOSTS_FILE", hosts.to_str().unwrap()),
        ("EDGEWISED__HOSTS__WATCH_INTERVAL_MS", "0"),
        ("EDGEWISED_API_SECRET", "systemd-test-secret-0123456789"),
        ("NO_COLOR", "1"),
    ];

    let pre = command_line(&service["ExecStartPre"], &config);
    let out = Command::new(&pre[0])
        .args(&pre[1..])
        .envs(env)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let start = command_line(&service["ExecStart"], &config);
    let mut child = Command::new(&start[0])
        .args(&start[1..])
        .envs(env)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = json_lines(child.stderr.take().unwrap());
    let listening = wait_for(&lines, "listening");
    let addr: SocketAddr = listening["fields"]["addr"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(http(addr, "GET", "/readyz").0, 200);

    // ExecReload after an edit: the new table is published.
    let table = std::fs::read_to_string(&hosts).unwrap();
    std::fs::write(&hosts, table.replace("10.0.2.10", "10.0.2.11")).unwrap();
    let reload = service["ExecReload"].replace("$MAINPID", &child.id().to_string());
    let reload = command_line(&reload, &config);
    let status = Command::new(&reload[0])
        .args(&reload[1..])
        .status()
        .unwrap();
    assert!(status.success());
    wait_for(&lines, "host table published");

    // systemctl stop: KillSignal, then a clean exit within TimeoutStopSec (a non-zero exit
    // would make Restart=on-failure start it again).
    let kill = Command::new("kill")
        .args(["-s", service["KillSignal"].trim_start_matches("SIG")])
        .arg(child.id().to_string())
        .status()
        .unwrap();
    assert!(kill.success());
    let deadline = Instant::now() + stop_timeout;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "not stopped within {stop_timeout:?}"
        );
        thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status}");
    wait_for(&lines, "stopped");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The daemon's JSON log lines (ExecStart asks for `--log-format json`), parsed.
fn json_lines(stderr: std::process::ChildStderr) -> mpsc::Receiver<serde_json::Value> {
    let (send, receive) = mpsc::channel();
    thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let parsed = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("not a JSON log line ({e}): {line}"));
            if send.send(parsed).is_err() {
                return;
            }
        }
    });
    receive
}

fn wait_for(lines: &mpsc::Receiver<serde_json::Value>, message: &str) -> serde_json::Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = lines
            .recv_timeout(left)
            .unwrap_or_else(|_| panic!("no {message:?} log line"));
        if line["fields"]["message"].as_str() == Some(message) {
            return line;
        }
    }
}
