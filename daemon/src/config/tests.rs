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

#[test]
fn a_source_is_checked_and_its_secrets_are_not_printed() {
    let source = |rest: &str| format!("[features]\ndir = \"/d\"\n[features.source]\n{rest}");
    let bad = [
        ("[features.source]\nurl = \"s3://b/p\"", "need features.dir"),
        (&source("manifest = \"x\"") as &str, "missing field `url`"),
        (&source("url = \"file:///tmp\""), "expected s3://"),
        (&source("url = \"ftp://host/p\""), "expected s3://"),
        (&source("url = \"not a url\""), "not a URL"),
        (
            &source("url = \"s3://b/p\"\noptions = { aws_colour = \"red\" }"),
            "aws_colour",
        ),
        (
            &source("url = \"s3://b/p\"\npoll_interval_secs = 0"),
            "at least 1",
        ),
        (
            &source("url = \"s3://b/p\"\nmanifest = \"/abs\""),
            "under the prefix",
        ),
    ];
    for (text, needle) in bad {
        let error = Config::from_toml(text).and_then(|c| c.validate().map(|()| c));
        let message = format!("{:#}", error.unwrap_err());
        assert!(message.contains(needle), "{text}: {message}");
    }
    let good = Config::from_toml(&source(
        "url = \"s3://b/p\"\noptions = { aws_region = \"auto\", aws_access_key_id = \"id\", aws_secret_access_key = \"hunter2\" }",
    ))
    .unwrap();
    good.validate().unwrap();
    let printed = format!("{good:#?}");
    assert!(
        printed.contains("\"auto\"") && !printed.contains("hunter2"),
        "{printed}"
    );
}

#[test]
fn any_field_can_be_set_from_the_environment_and_set_flags() {
    let env = [
        ("EDGEWISED__TOKENS__MEMCACHED__TIMEOUT_MS", "50"),
        ("EDGEWISED__TOKENS__MEMCACHED__SERVERS", r#"["a:1", "b:2"]"#),
        ("EDGEWISED__LOG__FILTER", "debug"),
        ("EDGEWISED__SERVER__REQUEST_TIMEOUT_MS", "7"),
        ("UNRELATED", "x"),
    ]
    .map(|(k, v)| (k.to_owned(), v.to_owned()));
    let overrides = Overrides {
        set: vec![
            "server.request_timeout_ms=9".into(),
            "workspace.scrub=full".into(),
            "tokens.key_prefix=\"123\"".into(),
        ],
        ..Overrides::default()
    };
    let config = Config::load_with_env(None, env, &overrides).unwrap();
    assert_eq!(config.tokens.memcached.timeout_ms, 50);
    assert_eq!(config.tokens.memcached.servers, ["a:1", "b:2"]);
    assert_eq!(config.log.filter, "debug");
    // --set beats the environment.
    assert_eq!(config.request_timeout(), Duration::from_millis(9));
    assert_eq!(config.workspace.scrub, "full");
    assert_eq!(config.tokens.key_prefix, "123");
}

#[test]
fn generic_settings_are_checked_like_the_file() {
    let load = |sets: &[&str]| {
        let overrides = Overrides {
            set: sets.iter().map(|s| (*s).to_owned()).collect(),
            ..Overrides::default()
        };
        Config::load_with_env(None, [], &overrides).map_err(|e| format!("{e:#}"))
    };
    let typo = load(&["server.lisen=1"]).unwrap_err();
    assert!(typo.contains("lisen"), "{typo}");
    let wrong_type = load(&["server.request_timeout_ms=soon"]).unwrap_err();
    assert!(wrong_type.contains("request_timeout_ms"), "{wrong_type}");
    let not_a_section = load(&["log.filter.x=1"]).unwrap_err();
    assert!(not_a_section.contains("filter"), "{not_a_section}");
    for bad in ["nothing", "=1", "a..b=1", "server.=1"] {
        assert!(load(&[bad]).is_err(), "{bad}");
    }
    let zero = load(&["server.request_timeout_ms=0"]).unwrap_err();
    assert!(zero.contains("request_timeout_ms"), "{zero}");
    for cap in ["0", "16777217"] {
        let refused = load(&[&format!("server.max_connections={cap}")]).unwrap_err();
        assert!(refused.contains("max_connections"), "{refused}");
    }
    assert!(load(&["server.max_connections=16777216"]).is_ok());
}

#[test]
fn the_file_is_overlaid_field_by_field() {
    let dir = std::env::temp_dir().join(format!("edgewised-overlay-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("edgewised.toml");
    std::fs::write(
        &path,
        "[tokens.memcached]\nservers = [\"m:1\"]\ntimeout_ms = 80\n",
    )
    .unwrap();
    let env = [(
        "EDGEWISED__TOKENS__MEMCACHED__TIMEOUT_MS".to_owned(),
        "40".to_owned(),
    )];
    let config = Config::load_with_env(Some(&path), env, &Overrides::default()).unwrap();
    assert_eq!(config.tokens.memcached.servers, ["m:1"]);
    assert_eq!(config.tokens.memcached.timeout_ms, 40);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Every key of `Config` (its dotted path, `tokens.memcached.servers`), from the defaults.
fn config_keys() -> Vec<String> {
    fn walk(prefix: &str, value: &serde_json::Value, keys: &mut Vec<String>) {
        match value {
            serde_json::Value::Object(map) => {
                for (name, value) in map {
                    let path = if prefix.is_empty() {
                        name.clone()
                    } else {
                        format!("{prefix}.{name}")
                    };
                    walk(&path, value, keys);
                }
            }
            _ => keys.push(prefix.to_owned()),
        }
    }
    let mut keys = Vec::new();
    // Optional tables are walked as they are when set.
    let mut config = Config::default();
    config.features.source = Some(crate::SourceConfig::new("s3://bucket/prefix"));
    walk("", &serde_json::to_value(config).unwrap(), &mut keys);
    keys
}

#[test]
fn every_key_is_documented_in_the_reference_and_the_example() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let reference = std::fs::read_to_string(root.join("../docs/configuration.md")).unwrap();
    let example = std::fs::read_to_string(root.join("dist/edgewised.example.toml")).unwrap();
    let keys = config_keys();
    assert!(keys.len() >= 30, "{keys:?}");
    for key in keys {
        assert!(
            reference.contains(&format!("| `{key}` |")),
            "{key} missing from docs/configuration.md's daemon table"
        );
        // In the example, under its section: `name =`, or `# name =` for keys without a default.
        let (section, name) = key.rsplit_once('.').unwrap();
        let body = example
            .split(&format!("[{section}]\n"))
            .nth(1)
            .unwrap_or_else(|| panic!("no [{section}] in the example"));
        let body = body.split("\n[").next().unwrap();
        assert!(
            body.lines().any(|l| l
                .trim_start_matches("# ")
                .starts_with(&format!("{name} = "))),
            "{key} missing from daemon/dist/edgewised.example.toml"
        );
    }
}
