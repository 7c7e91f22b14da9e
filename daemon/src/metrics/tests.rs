use super::*;

#[test]
fn histogram_renders_cumulative_buckets() {
    let h = Histogram::default();
    h.observe(Duration::from_micros(40));
    h.observe(Duration::from_micros(700));
    h.observe(Duration::from_secs(60));
    let mut page = Exposition::default();
    page.family("x_seconds", "histogram", "test");
    page.histogram("x_seconds", &[("route", "a\"b")], &h);
    let text = page.finish();
    assert!(
        text.contains("x_seconds_bucket{route=\"a\\\"b\",le=\"0.00005\"} 1\n"),
        "{text}"
    );
    assert!(
        text.contains("x_seconds_bucket{route=\"a\\\"b\",le=\"0.001\"} 2\n"),
        "{text}"
    );
    assert!(
        text.contains("x_seconds_bucket{route=\"a\\\"b\",le=\"10\"} 2\n"),
        "{text}"
    );
    assert!(
        text.contains("x_seconds_bucket{route=\"a\\\"b\",le=\"+Inf\"} 3\n"),
        "{text}"
    );
    assert!(
        text.contains("x_seconds_count{route=\"a\\\"b\"} 3\n"),
        "{text}"
    );
}

#[test]
fn counters_and_gauges_render_plainly() {
    let c = Counter::default();
    c.add(5);
    let g = Gauge::default();
    g.inc();
    g.inc();
    g.dec();
    let mut page = Exposition::default();
    page.counter("c_total", "a counter", c.get());
    page.gauge("g", "a gauge", g.get());
    assert_eq!(
        page.finish(),
        "# HELP c_total a counter\n# TYPE c_total counter\nc_total 5\n\
         # HELP g a gauge\n# TYPE g gauge\ng 1\n"
    );
}
