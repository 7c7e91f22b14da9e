#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use super::*;

const TWO_HOSTS: &str = r#"
[subset]
fallback_policy = "ANY_ENDPOINT"
selectors = [{ keys = ["zone"] }]

[[hosts]]
address = "http://127.0.0.1:8081"
labels = { zone = "a" }

[[hosts]]
address = "http://127.0.0.1:8082"
labels = { zone = "b" }
"#;

/// A file in a directory of its own, both removed when dropped.
struct TempFile(PathBuf);

impl TempFile {
    fn new(name: &str, text: &str) -> TempFile {
        let dir =
            std::env::temp_dir().join(format!("edgewised-hosts-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = TempFile(dir.join(name));
        file.write(text);
        file
    }

    fn write(&self, text: &str) {
        std::fs::write(&self.0, text).unwrap();
    }

    fn tables(&self) -> HostTables {
        HostTables::load(&HostsConfig {
            file: Some(self.0.clone()),
            watch_interval_ms: 0,
        })
        .unwrap()
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if let Some(dir) = self.0.parent() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

#[test]
fn a_table_without_version_gets_one_from_its_content() {
    let file = TempFile::new("derived.toml", TWO_HOSTS);
    let tables = file.tables();
    let first = tables.current().unwrap();
    assert_ne!(first.table.version, 0);
    assert_eq!(first.table.hosts.len(), 2);
    assert_eq!(HostTable::decode(&first.bytes).unwrap(), first.table);
    // The same content from another daemon gets the same version and ETag.
    let again = TempFile::new("derived-again.toml", TWO_HOSTS).tables();
    assert_eq!(again.current().unwrap().table.version, first.table.version);
    assert_eq!(again.current().unwrap().etag, first.etag);

    file.write(&TWO_HOSTS.replace("8082", "8083"));
    assert!(matches!(tables.reload().unwrap(), Reload::Updated { .. }));
    let second = tables.current().unwrap();
    assert_ne!(second.table.version, first.table.version);
    assert_ne!(second.etag, first.etag);
}

#[test]
fn unchanged_content_is_not_republished() {
    let file = TempFile::new("unchanged.toml", TWO_HOSTS);
    let tables = file.tables();
    let before = tables.current().unwrap();
    // Reformatting is not a change.
    file.write(&TWO_HOSTS.replace("\n\n", "\n# a comment\n\n"));
    assert_eq!(tables.reload().unwrap(), Reload::Unchanged);
    assert!(Arc::ptr_eq(&before, &tables.current().unwrap()));
}

#[test]
fn hosts_are_served_in_address_order() {
    let swapped = TWO_HOSTS.replace("8081", "8090").replace("8082", "8081");
    let file = TempFile::new("order.toml", &swapped);
    let tables = file.tables();
    let served = tables.current().unwrap();
    let addresses: Vec<&str> = served.table.hosts.iter().map(|h| &*h.address).collect();
    assert_eq!(
        addresses,
        ["http://127.0.0.1:8081", "http://127.0.0.1:8090"]
    );
    assert_eq!(served.table.hosts[0].labels["zone"], "b");
    assert_eq!(HostTable::decode(&served.bytes).unwrap(), served.table);
    // Hosts that only moved in the file are no change.
    let (head, hosts) = swapped.split_at(swapped.find("[[hosts]]").unwrap());
    let (first, second) = hosts.split_at(hosts.rfind("[[hosts]]").unwrap());
    file.write(&format!("{head}{second}\n{first}"));
    assert_eq!(tables.reload().unwrap(), Reload::Unchanged);
}

/// Addresses are served in normal form, whatever their spelling in the file; two spellings
/// of one origin are one address twice, and the file is refused.
#[test]
fn addresses_are_served_in_normal_form() {
    let spelled = TWO_HOSTS.replace("http://127.0.0.1:8082", "HTTP://127.0.0.1:8082/");
    let file = TempFile::new("normal.toml", &spelled);
    let tables = file.tables();
    let served = tables.current().unwrap();
    assert_eq!(served.table.hosts[1].address, "http://127.0.0.1:8082");
    file.write(&TWO_HOSTS.replace("http://127.0.0.1:8082", "http://127.0.0.1:8081/"));
    let refused = format!("{:#}", tables.reload().unwrap_err());
    assert!(refused.contains("duplicate address"), "{refused}");
}

#[test]
fn an_explicit_version_must_move_with_the_content() {
    let file = TempFile::new("explicit.toml", &format!("version = 7\n{TWO_HOSTS}"));
    let tables = file.tables();
    assert_eq!(tables.current().unwrap().table.version, 7);
    file.write(&format!(
        "version = 7\n{}",
        TWO_HOSTS.replace("8082", "8084")
    ));
    let error = format!("{:#}", tables.reload().unwrap_err());
    assert!(error.contains("version is still 7"), "{error}");
    assert_eq!(
        tables.current().unwrap().table.hosts[1].address,
        "http://127.0.0.1:8082"
    );
    file.write(&format!(
        "version = 8\n{}",
        TWO_HOSTS.replace("8082", "8084")
    ));
    assert_eq!(tables.reload().unwrap(), Reload::Updated { version: 8 });
}

#[test]
fn a_bad_file_keeps_the_last_good_table() {
    let file = TempFile::new("bad.toml", TWO_HOSTS);
    let tables = file.tables();
    let good = tables.current().unwrap();
    for (text, reason) in [
        ("[[hosts]]\naddress = ", "parsing"),
        ("[[hosts]]\nadress = \"http://x\"", "parsing"),
        (&TWO_HOSTS.replace("8082", "8081"), "validating"),
        ("", "validating"),
        (&wide_lists(), "1056 subsets (list_as_any), at most 1024"),
    ] {
        file.write(text);
        let error = format!("{:#}", tables.reload().unwrap_err());
        assert!(error.contains(reason), "{text:?}: {error}");
        assert!(error.contains("bad.toml"), "{error}");
        assert!(Arc::ptr_eq(&good, &tables.current().unwrap()));
    }
    std::fs::remove_file(&file.0).unwrap();
    assert!(format!("{:#}", tables.reload().unwrap_err()).contains("reading"));
    let mut page = Exposition::default();
    tables.render(&mut page);
    let page = page.finish();
    assert!(
        page.contains("edgewise_hosts_reload_errors_total 6"),
        "{page}"
    );
    assert!(page.contains("edgewise_hosts_hosts 2"), "{page}");
}

/// A host whose lists under a selector's two keys put it in 32 x 33 subsets.
fn wide_lists() -> String {
    let list = |prefix: &str, n: usize| {
        let items: Vec<String> = (0..n).map(|i| format!("{prefix}{i}")).collect();
        items.join(",")
    };
    format!(
        "[subset]\nlist_as_any = true\nselectors = [{{ keys = [\"zone\", \"v\"] }}]\n\n\
         [[hosts]]\naddress = \"http://127.0.0.1:8081\"\nlabels = {{ zone = \"{}\", v = \"{}\" }}\n",
        list("z", 32),
        list("v", 33)
    )
}

#[test]
fn a_bad_file_at_start_is_an_error_and_no_file_is_no_table() {
    let file = TempFile::new("bad-start.toml", "[[hosts]]");
    let config = HostsConfig {
        file: Some(file.0.clone()),
        watch_interval_ms: 0,
    };
    assert!(HostTables::load(&config).is_err());
    let none = HostTables::load(&HostsConfig::default()).unwrap();
    assert!(none.current().is_none());
    assert_eq!(none.reload().unwrap(), Reload::Unchanged);
}

#[test]
fn the_example_table_is_valid() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("dist/hosts.example.toml");
    let tables = HostTables::load(&HostsConfig {
        file: Some(path),
        watch_interval_ms: 0,
    })
    .unwrap();
    let table = &tables.current().unwrap().table;
    assert_eq!(table.hosts.len(), 4);
    assert_eq!(table.subset.selectors.len(), 2);
}

/// TWO_HOSTS with `n` hosts more in zone c.
fn with_more(n: usize) -> String {
    let mut text = TWO_HOSTS.to_owned();
    for i in 0..n {
        text.push_str(&format!(
            "[[hosts]]\naddress = \"http://127.0.1.{i}:8080\"\nlabels = {{ zone = \"c\" }}\n"
        ));
    }
    text
}

#[test]
fn deltas_lead_from_recent_tables_to_the_current_one() {
    let file = TempFile::new("deltas.toml", &with_more(0));
    let tables = file.tables();
    let mut served = vec![tables.current().unwrap()];
    for n in 1..=5 {
        file.write(&with_more(n));
        assert!(matches!(tables.reload().unwrap(), Reload::Updated { .. }));
        served.push(tables.current().unwrap());
    }
    let current = tables.current().unwrap();
    // The last HISTORY tables before the current one, not older ones, nor the current itself.
    for (age, old) in served.iter().rev().enumerate() {
        let delta = current.delta(&old.etag);
        assert_eq!(delta.is_some(), (1..=HISTORY).contains(&age), "age {age}");
        if let Some(bytes) = delta {
            let delta = HostDelta::decode(bytes).unwrap();
            assert_eq!(
                (delta.from, delta.version),
                (old.table.version, current.table.version)
            );
            assert_eq!(delta.upserts.len(), age);
            let mut lb = edgewise::SubsetLb::build(&old.table).unwrap();
            lb.apply(&delta).unwrap();
            assert_eq!(lb.len(), current.table.hosts.len());
        }
    }
}

#[test]
fn no_delta_across_a_configuration_change_or_past_the_budget() {
    let file = TempFile::new("no-delta.toml", &with_more(0));
    let tables = file.tables();
    let first = tables.current().unwrap();
    file.write(&with_more(0).replace("ANY_ENDPOINT", "NO_FALLBACK"));
    assert!(matches!(tables.reload().unwrap(), Reload::Updated { .. }));
    assert!(tables.current().unwrap().delta(&first.etag).is_none());

    let second = tables.current().unwrap();
    file.write(&with_more(delta_budget(2) + 1).replace("ANY_ENDPOINT", "NO_FALLBACK"));
    assert!(matches!(tables.reload().unwrap(), Reload::Updated { .. }));
    assert!(tables.current().unwrap().delta(&second.etag).is_none());
    assert_eq!(delta_budget(1600), 50);
}
