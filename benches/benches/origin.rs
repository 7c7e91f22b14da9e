//! Upstream URL construction per request: edgewise's validated join against the plain
//! `format!` a hand-written proxy would use (which validates nothing).

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use edgewise::Origin;

fn upstream_url(c: &mut Criterion) {
    let origin = Origin::parse("https://origin.example.com:8443/api").unwrap();
    let path = "/v1/users/12345/profile";
    let query = Some("fields=name,email&locale=en-US");
    let mut group = c.benchmark_group("upstream_url");
    group.bench_function("edgewise::Origin::upstream_url", |b| {
        b.iter(|| origin.upstream_url(black_box(path), black_box(query)))
    });
    group.bench_function("format! (no validation)", |b| {
        b.iter(|| match black_box(query) {
            Some(q) => format!("{}{}?{}", origin.as_str(), black_box(path), q),
            None => format!("{}{}", origin.as_str(), black_box(path)),
        })
    });
    group.finish();
}

criterion_group!(benches, upstream_url);
criterion_main!(benches);
