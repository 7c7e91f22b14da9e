//! `include/edgewise.h` is what cbindgen makes of `src/lib.rs` now: a change to the ABI that
//! forgot the header fails here. `EDGEWISE_BLESS=1` writes the header instead.

use std::path::Path;

#[test]
fn the_committed_header_is_current() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml")).unwrap();
    let mut generated = Vec::new();
    cbindgen::Builder::new()
        .with_crate(crate_dir)
        .with_config(config)
        .generate()
        .unwrap()
        .write(&mut generated);
    let path = crate_dir.join("include/edgewise.h");
    if std::env::var_os("EDGEWISE_BLESS").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let committed = std::fs::read(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "{} is out of date: run EDGEWISE_BLESS=1 cargo test -p edgewise-ffi --test header",
        path.display()
    );
}
