use super::*;

fn pool() -> Arc<WorkspacePool> {
    WorkspacePool::new(
        "test",
        WorkspaceConfig::new(4096)
            .with_mode(ScrubMode::Watermark)
            .with_verify_one_in(1),
    )
}

#[test]
fn workspaces_are_reused_scrubbed_and_counted() {
    let pool = pool();
    for secret in [&b"token-a"[..], b"token-b"] {
        let mut ws = pool.take();
        let mut scope = ws.begin();
        scope.arena().copy(secret).unwrap();
        let report = scope.reset();
        ws.pool().record(&report);
        assert!(ws.is_scrubbed());
    }
    assert_eq!(
        pool.counters.created.get(),
        1,
        "the second use reused the first workspace"
    );
    assert_eq!(pool.counters.resets.get(), 2);
    assert_eq!(pool.counters.bytes_full_clear.get(), 2 * 4096);
    assert!(
        pool.counters.bytes_zeroed.get() < 4096,
        "watermark mode zeroes only what was used"
    );
    assert_eq!(pool.counters.verifications.get(), 2);
    assert_eq!(pool.counters.failures.get(), 0);
}

#[test]
fn concurrent_holders_get_distinct_workspaces() {
    let pool = pool();
    let a = pool.take();
    let b = pool.take();
    drop((a, b));
    assert_eq!(pool.counters.created.get(), 2);
    assert_eq!(pool.free.lock().unwrap().len(), 2);
}

#[test]
fn metrics_name_pool_and_mode() {
    let pool = pool();
    let mut ws = pool.take();
    let report = ws.begin().reset();
    pool.record(&report);
    let mut page = Exposition::default();
    WorkspacePool::render(&mut page, &[&pool]);
    let page = page.finish();
    assert!(
        page.contains("edgewise_workspace_resets_total{pool=\"test\",mode=\"watermark\"} 1\n"),
        "{page}"
    );
}
