//! Counters, gauges and histograms updated with single atomic operations on hot paths, and a
//! writer for the Prometheus text format that `/metrics` serves. A framework would add a
//! registry lookup or a lock per update; these are plain fields of the structs that own them.

use std::{
    fmt::{Display, Write},
    sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed},
    time::Duration,
};

/// A monotonically increasing count.
#[derive(Debug, Default)]
pub struct Counter(AtomicU64);

impl Counter {
    pub fn inc(&self) {
        self.add(1);
    }

    pub fn add(&self, n: u64) {
        self.0.fetch_add(n, Relaxed);
    }

    pub fn get(&self) -> u64 {
        self.0.load(Relaxed)
    }
}

/// A value that goes up and down.
#[derive(Debug, Default)]
pub struct Gauge(AtomicI64);

impl Gauge {
    pub fn inc(&self) {
        self.0.fetch_add(1, Relaxed);
    }

    pub fn dec(&self) {
        self.0.fetch_sub(1, Relaxed);
    }

    pub fn set(&self, value: i64) {
        self.0.store(value, Relaxed);
    }

    pub fn get(&self) -> i64 {
        self.0.load(Relaxed)
    }
}

/// Latency histogram with fixed bucket bounds from 50 µs to 10 s.
#[derive(Debug)]
pub struct Histogram {
    buckets: [AtomicU64; BOUNDS_MICROS.len()],
    count: AtomicU64,
    sum_micros: AtomicU64,
}

const BOUNDS_MICROS: [u64; 16] = [
    50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000,
    1_000_000, 2_500_000, 10_000_000,
];

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            buckets: std::array::from_fn(|_| AtomicU64::new(0)),
            count: AtomicU64::new(0),
            sum_micros: AtomicU64::new(0),
        }
    }
}

impl Histogram {
    pub fn observe(&self, elapsed: Duration) {
        let micros = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX);
        // Buckets are stored non-cumulatively (one increment per observation); rendering sums.
        if let Some(i) = BOUNDS_MICROS.iter().position(|&bound| micros <= bound) {
            self.buckets[i].fetch_add(1, Relaxed);
        }
        self.count.fetch_add(1, Relaxed);
        self.sum_micros.fetch_add(micros, Relaxed);
    }

    pub fn count(&self) -> u64 {
        self.count.load(Relaxed)
    }
}

/// Builds a Prometheus text-format page.
#[derive(Debug, Default)]
pub struct Exposition {
    text: String,
}

/// A sample's labels as (name, value) pairs.
pub type Labels<'a> = &'a [(&'a str, &'a str)];

/// A metric family read off a struct of counters: name, type, help, and the field's value.
pub type Family<T> = (&'static str, &'static str, &'static str, fn(&T) -> i64);

impl Exposition {
    /// Starts a metric family; its samples follow.
    pub fn family(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.text, "# HELP {name} {help}\n# TYPE {name} {kind}");
    }

    /// One sample line.
    pub fn sample(&mut self, name: &str, labels: Labels<'_>, value: impl Display) {
        self.text.push_str(name);
        write_labels(&mut self.text, labels, None);
        let _ = writeln!(self.text, " {value}");
    }

    /// A one-sample counter family.
    pub fn counter(&mut self, name: &str, help: &str, value: u64) {
        self.family(name, "counter", help);
        self.sample(name, &[], value);
    }

    /// A one-sample gauge family.
    pub fn gauge(&mut self, name: &str, help: &str, value: impl Display) {
        self.family(name, "gauge", help);
        self.sample(name, &[], value);
    }

    /// Every family in `families`, one sample per labelled source.
    pub fn families<T>(&mut self, families: &[Family<T>], sources: &[(Labels<'_>, &T)]) {
        for (name, kind, help, value) in families {
            self.family(name, kind, help);
            for (labels, source) in sources {
                self.sample(name, labels, value(source));
            }
        }
    }

    /// The bucket, sum and count lines of one histogram (the family header comes first).
    pub fn histogram(&mut self, name: &str, labels: Labels<'_>, histogram: &Histogram) {
        let mut cumulative = 0;
        for (bound, bucket) in BOUNDS_MICROS.iter().zip(&histogram.buckets) {
            cumulative += bucket.load(Relaxed);
            let le = format!("{}", *bound as f64 / 1e6);
            self.bucket(name, labels, &le, cumulative);
        }
        let count = histogram.count();
        self.bucket(name, labels, "+Inf", count);
        let sum = histogram.sum_micros.load(Relaxed) as f64 / 1e6;
        self.sample(&format!("{name}_sum"), labels, sum);
        self.sample(&format!("{name}_count"), labels, count);
    }

    fn bucket(&mut self, name: &str, labels: Labels<'_>, le: &str, value: u64) {
        let _ = write!(self.text, "{name}_bucket");
        write_labels(&mut self.text, labels, Some(le));
        let _ = writeln!(self.text, " {value}");
    }

    pub fn finish(self) -> String {
        self.text
    }
}

fn write_labels(out: &mut String, labels: Labels<'_>, le: Option<&str>) {
    if labels.is_empty() && le.is_none() {
        return;
    }
    out.push('{');
    let le = le.map(|le| ("le", le));
    for (i, (name, value)) in labels.iter().copied().chain(le).enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(out, "{name}=\"");
        escape_into(out, value);
        out.push('"');
    }
    out.push('}');
}

fn escape_into(out: &mut String, value: &str) {
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests;
