//! `GET /v1/hosts` on the real `edgewised` binary: the table from its file, ETags, reloads on
//! SIGHUP and on file change, and a bad file that leaves the served table alone.

use std::{
    path::PathBuf,
    thread,
    time::{Duration, Instant},
};

use edgewise::{HostDelta, HostTable, SubsetLb};
use edgewise_tests::{
    Daemon, HttpResponse, http, http_authorized, http_exchange, sample, wait_until,
};

const SECRET: &str = "test-secret-0123456789abcdef";
const BEARER: &str = "Bearer test-secret-0123456789abcdef";

fn table(zone_b_port: u16) -> String {
    format!(
        r#"
[subset]
fallback_policy = "ANY_ENDPOINT"
selectors = [{{ keys = ["zone"] }}]

[[hosts]]
address = "http://127.0.0.1:8081"
labels = {{ zone = "a" }}

[[hosts]]
address = "http://127.0.0.1:{zone_b_port}"
weight = 3
labels = {{ zone = "b" }}
"#
    )
}

/// A scratch directory with the host table and a config pointing at it.
struct Setup {
    dir: PathBuf,
}

impl Setup {
    fn new(name: &str, watch_interval_ms: u64) -> Setup {
        let dir =
            std::env::temp_dir().join(format!("edgewise-hosts-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let setup = Setup { dir };
        setup.write_table(&table(8082));
        let config = format!(
            "[hosts]\nfile = {:?}\nwatch_interval_ms = {watch_interval_ms}\n",
            setup.table_path()
        );
        std::fs::write(setup.dir.join("edgewised.toml"), config).unwrap();
        setup
    }

    fn table_path(&self) -> PathBuf {
        self.dir.join("hosts.toml")
    }

    /// Writes through a rename, as deploy tools do, so the daemon never reads half a file.
    fn write_table(&self, text: &str) {
        let tmp = self.dir.join(".hosts.toml.tmp");
        std::fs::write(&tmp, text).unwrap();
        std::fs::rename(&tmp, self.table_path()).unwrap();
    }

    fn start(&self) -> Daemon {
        let config = self.dir.join("edgewised.toml");
        Daemon::start_with_env(
            &["--config", config.to_str().unwrap()],
            &[("EDGEWISED_API_SECRET", SECRET)],
        )
    }
}

impl Drop for Setup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn get(daemon: &Daemon, headers: &[(&str, &str)]) -> HttpResponse {
    let mut all = vec![("Authorization", BEARER)];
    all.extend_from_slice(headers);
    http_exchange(daemon.addr, "GET", "/v1/hosts", &all, b"")
}

/// Polls until the served table's port of zone b is `port`.
fn wait_for_port(daemon: &Daemon, port: u16, within: Duration) -> HttpResponse {
    let deadline = Instant::now() + within;
    loop {
        let response = get(daemon, &[]);
        let table = HostTable::decode(&response.body).unwrap();
        if table.hosts[1].address.ends_with(&format!(":{port}")) {
            return response;
        }
        assert!(
            Instant::now() < deadline,
            "table still {:?}",
            table.hosts[1]
        );
        thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn the_table_is_served_encoded_with_an_etag() {
    let setup = Setup::new("serve", 0);
    let daemon = setup.start();
    assert_eq!(http(daemon.addr, "GET", "/v1/hosts").0, 401);

    let response = get(&daemon, &[]);
    assert_eq!(response.status, 200);
    assert_eq!(
        response.header("content-type"),
        Some("application/x-edgewise-hosts")
    );
    let table = HostTable::decode(&response.body).unwrap();
    assert_eq!(table.hosts.len(), 2);
    assert_eq!(table.hosts[1].weight, 3);
    assert_eq!(
        response.header("x-edgewise-hosts-version"),
        Some(table.version.to_string().as_str())
    );
    let etag = response.header("etag").unwrap().to_owned();
    assert!(etag.starts_with('"') && etag.len() > 10, "{etag}");

    let revalidated = get(&daemon, &[("If-None-Match", &etag)]);
    assert_eq!(revalidated.status, 304);
    assert!(revalidated.body.is_empty());
    assert_eq!(revalidated.header("etag"), Some(etag.as_str()));
    assert_eq!(get(&daemon, &[("If-None-Match", "\"other\"")]).status, 200);

    let json = get(&daemon, &[("Accept", "application/json")]);
    assert_eq!(json.status, 200);
    let from_json: HostTable = serde_json::from_slice(&json.body).unwrap();
    assert_eq!(from_json, table);
    // Another representation, another strong ETag: neither revalidates the other.
    let json_etag = json.header("etag").unwrap().to_owned();
    assert_ne!(json_etag, etag);
    let json_with = |tag: &str| {
        get(
            &daemon,
            &[("Accept", "application/json"), ("If-None-Match", tag)],
        )
    };
    assert_eq!(json_with(&json_etag).status, 304);
    assert_eq!(json_with(&etag).status, 200);
    assert_eq!(get(&daemon, &[("If-None-Match", &json_etag)]).status, 200);
}

#[test]
fn sighup_reloads_and_a_bad_file_keeps_the_last_good_table() {
    let setup = Setup::new("sighup", 0);
    let mut daemon = setup.start();
    let first = get(&daemon, &[]);

    setup.write_table(&table(9092));
    thread::sleep(Duration::from_millis(100));
    assert_eq!(
        get(&daemon, &[]).body,
        first.body,
        "no reload without SIGHUP (polling is off)"
    );
    daemon.signal("HUP");
    let second = wait_for_port(&daemon, 9092, Duration::from_secs(5));
    assert_ne!(second.header("etag"), first.header("etag"));

    setup.write_table("[[hosts]]\naddress = 42\n");
    daemon.signal("HUP");
    daemon.wait_for_log("host table rejected", Duration::from_secs(5));
    setup.write_table(&table(9092).replace("8081", "9092"));
    daemon.signal("HUP");
    daemon.wait_for_log("host table rejected", Duration::from_secs(5));
    assert_eq!(get(&daemon, &[]).body, second.body);
    let (_, metrics) = http_authorized(daemon.addr, "/metrics");
    assert!(
        metrics.contains("edgewise_hosts_reload_errors_total 2"),
        "{metrics}"
    );
    assert!(metrics.contains("edgewise_hosts_hosts 2"), "{metrics}");
}

#[test]
fn a_changed_file_is_picked_up_without_a_signal() {
    let setup = Setup::new("watch", 50);
    let daemon = setup.start();
    setup.write_table(&table(9093));
    wait_for_port(&daemon, 9093, Duration::from_secs(5));
}

/// A file written slowly, a host at a time (each prefix a valid table), is read once it held
/// still: one table published, all thirty hosts. Each tick that saw it changed read it, and
/// published the half tables it caught.
#[test]
fn a_file_being_written_is_read_once_it_holds_still() {
    // Writes 40 ms apart for 1.2 s, polls 1 s apart: at least one poll falls mid-write, and a
    // partial table is read only if the writer stalls a whole interval (the old reload read
    // one at the first poll mid-write). Polls 300 ms apart left a loaded 2-core VM's stall of
    // one test thread as the only margin.
    let setup = Setup::new("slow-write", 1000);
    let daemon = setup.start();
    let host = |i: u16| format!("\n[[hosts]]\naddress = \"http://127.0.0.1:{}\"\n", 9100 + i);
    let mut file = std::fs::File::create(setup.table_path()).unwrap();
    for i in 0..30 {
        use std::io::Write as _;
        file.write_all(host(i).as_bytes()).unwrap();
        file.flush().unwrap();
        thread::sleep(Duration::from_millis(40));
    }
    drop(file);
    let whole = || {
        HostTable::decode(&get(&daemon, &[]).body)
            .unwrap()
            .hosts
            .len()
            == 30
    };
    wait_until(Duration::from_secs(10), whole);
    let (_, metrics) = http_authorized(daemon.addr, "/metrics");
    // The start-up load, then the whole table.
    let reloads = sample(&metrics, "edgewise_hosts_reloads_total");
    assert_eq!(reloads, Some(2.0), "only the whole table is published");
}

/// SIGHUP to a daemon without a host table is logged, not fatal: its default action ended the
/// daemon (status 129), and systemd counts SIGHUP as a clean exit, so it stayed down.
#[test]
fn sighup_without_a_host_table_is_harmless() {
    let mut daemon = Daemon::start(&[]);
    daemon.signal("HUP");
    daemon.wait_for_log("nothing to reload", Duration::from_secs(5));
    assert_eq!(http(daemon.addr, "GET", "/healthz").0, 200);
}

#[test]
fn no_table_is_404_and_a_bad_table_stops_the_start() {
    let daemon = Daemon::start_with_env(&[], &[("EDGEWISED_API_SECRET", SECRET)]);
    assert_eq!(get(&daemon, &[]).status, 404);

    let setup = Setup::new("bad-start", 0);
    setup.write_table("[[hosts]]\naddress = \"not a url\"\n");
    let output = std::process::Command::new(edgewise_tests::daemon_bin())
        .args([
            "--config",
            setup.dir.join("edgewised.toml").to_str().unwrap(),
        ])
        .args(["--listen", "127.0.0.1:0"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("hosts.toml"), "{stderr}");
    let check = std::process::Command::new(edgewise_tests::daemon_bin())
        .args([
            "check-config",
            setup.dir.join("edgewised.toml").to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(
        !check.status.success(),
        "check-config must check the host table too"
    );
}

#[test]
fn a_worker_holding_an_earlier_table_gets_its_changes() {
    const DELTA: &str = "application/x-edgewise-hosts-delta";
    let setup = Setup::new("delta", 0);
    let daemon = setup.start();
    let first = get(&daemon, &[]);
    let old_etag = first.header("etag").unwrap().to_owned();
    setup.write_table(&table(9094));
    daemon.signal("HUP");
    let second = wait_for_port(&daemon, 9094, Duration::from_secs(5));

    let accept = (
        "Accept",
        "application/x-edgewise-hosts-delta, application/x-edgewise-hosts",
    );
    let answer = get(&daemon, &[accept, ("If-None-Match", &old_etag)]);
    assert_eq!(answer.status, 200);
    assert_eq!(answer.header("content-type"), Some(DELTA));
    assert_eq!(answer.header("etag"), second.header("etag"));
    let delta = HostDelta::decode(&answer.body).unwrap();
    assert_eq!((delta.upserts.len(), delta.removed.len()), (1, 1));
    let mut lb = SubsetLb::decode(&first.body).unwrap();
    lb.apply(&delta).unwrap();
    let new = HostTable::decode(&second.body).unwrap();
    assert_eq!(lb.version(), new.version);
    assert!(lb.host_id("http://127.0.0.1:9094").is_some());
    assert!(lb.host_id("http://127.0.0.1:8082").is_none());

    // Without the media type in Accept, or from a table the daemon does not know: the table.
    let plain = get(&daemon, &[("If-None-Match", &old_etag)]);
    assert_eq!(
        plain.header("content-type"),
        Some("application/x-edgewise-hosts")
    );
    assert_eq!(plain.body, second.body);
    let refused = ("Accept", "application/x-edgewise-hosts-delta;q=0, */*");
    let plain = get(&daemon, &[refused, ("If-None-Match", &old_etag)]);
    assert_eq!(plain.body, second.body);
    let unknown = get(&daemon, &[accept, ("If-None-Match", "\"other\"")]);
    assert_eq!(unknown.body, second.body);
    // The current table's ETag is still a 304.
    let current = second.header("etag").unwrap();
    assert_eq!(
        get(&daemon, &[accept, ("If-None-Match", current)]).status,
        304
    );
    let (_, metrics) = http_authorized(daemon.addr, "/metrics");
    assert!(
        metrics.contains("edgewise_hosts_deltas_served_total 1"),
        "{metrics}"
    );
}
