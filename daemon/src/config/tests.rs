use super::*;

#[test]
fn empty_file_means_defaults() {
    assert_eq!(Config::from_toml("").unwrap(), Config::default());
}

#[test]
fn file_values_are_read() {
    let config = Config::from_toml(
        r#"
        [server]
        listen = "0.0.0.0:9000"
        shutdown_grace_secs = 3
        [log]
        format = "json"
        filter = "debug"
        "#,
    )
    .unwrap();
    assert_eq!(config.server.listen, SocketAddr::from(([0, 0, 0, 0], 9000)));
    assert_eq!(config.shutdown_grace(), Duration::from_secs(3));
    assert_eq!(config.log.format, LogFormat::Json);
    assert_eq!(config.log.filter, "debug");
}

#[test]
fn unknown_keys_and_bad_values_are_errors() {
    let typo = Config::from_toml("[server]\nlisen = \"127.0.0.1:1\"").unwrap_err();
    assert!(format!("{typo:#}").contains("lisen"), "{typo:#}");
    let bad_addr = Config::from_toml("[server]\nlisten = \"nowhere\"").unwrap_err();
    assert!(format!("{bad_addr:#}").contains("listen"), "{bad_addr:#}");
    let bad_format = Config::from_toml("[log]\nformat = \"xml\"").unwrap_err();
    assert!(format!("{bad_format:#}").contains("xml"), "{bad_format:#}");
}

#[test]
fn overrides_beat_the_file() {
    let dir = std::env::temp_dir().join(format!("edgewised-config-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("edgewised.toml");
    std::fs::write(
        &path,
        "[server]\nlisten = \"127.0.0.1:1000\"\nshutdown_grace_secs = 7\n",
    )
    .unwrap();
    let overrides = Overrides {
        listen: Some(SocketAddr::from(([127, 0, 0, 1], 2000))),
        ..Overrides::default()
    };
    let config = Config::load(Some(&path), &overrides).unwrap();
    assert_eq!(config.server.listen.port(), 2000);
    assert_eq!(config.server.shutdown_grace_secs, 7);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn missing_file_names_the_path() {
    let err = Config::from_file(Path::new("/nonexistent/edgewised.toml")).unwrap_err();
    assert!(
        format!("{err:#}").contains("/nonexistent/edgewised.toml"),
        "{err:#}"
    );
}

#[test]
fn example_file_documents_the_defaults() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("dist/edgewised.example.toml");
    assert_eq!(Config::from_file(&path).unwrap(), Config::default());
}

#[test]
fn token_and_workspace_settings_are_validated() {
    let bad = [
        ("[tokens]\nkey_prefix = \"has space\"", "key_prefix"),
        ("[tokens.memcached]\nservers = [\"nohost\"]", "host:port"),
        (
            "[tokens.memcached]\nservers = [\"a:1\"]\nreplicas = 2",
            "replicas",
        ),
        (
            "[tokens.memcached]\nservers = [\"a:1\"]\nmax_batch = 0",
            "max_batch",
        ),
        ("[tokens.memcached]\ntimeout_ms = 0", "timeout_ms"),
        ("[workspace]\nscrub = \"sometimes\"", "workspace.scrub"),
        ("[features]\ningest_dir = \"/in\"", "need features.dir"),
        ("[features]\nsocket = \"/s.sock\"", "need features.dir"),
        (
            "[features]\ndir = \"/d\"\nreader_grace_ms = 0",
            "reader_grace_ms",
        ),
    ];
    for (text, needle) in bad {
        let error = Config::from_toml(text).and_then(|c| c.validate().map(|()| c));
        let message = format!("{:#}", error.unwrap_err());
        assert!(message.contains(needle), "{text}: {message}");
    }
    let good = Config::from_toml(
        "[tokens.memcached]\nservers = [\"10.0.0.1:11211\", \"mc.local:11211\", \"[::1]:11211\"]\nreplicas = 3\n[workspace]\nscrub = \"Shadow\"",
    )
    .unwrap();
    good.validate().unwrap();
    assert_eq!(good.workspace.mode().unwrap(), edgewise::ScrubMode::Shadow);
}
