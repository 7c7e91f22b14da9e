//! The benchmark's output: Markdown tables, durations with units, peer ratios.

use super::Histogram;

/// The quantiles of a latency row: p50, p90, p99, p999, p9999 and max.
pub const QUANTILES: [f64; 6] = [0.5, 0.9, 0.99, 0.999, 0.9999, 1.0];

/// `ns` with a unit: `612 ns`, `1.13 µs`, `12.9 ms`.
pub fn duration(ns: f64) -> String {
    let (value, unit) = match ns {
        ns if ns.is_nan() => return "-".to_owned(),
        ns if ns < 1e3 => (ns, "ns"),
        ns if ns < 1e6 => (ns / 1e3, "µs"),
        ns if ns < 1e9 => (ns / 1e6, "ms"),
        ns => (ns / 1e9, "s"),
    };
    if value < 10.0 && unit != "ns" {
        format!("{value:.2} {unit}")
    } else if value < 100.0 && unit != "ns" {
        format!("{value:.1} {unit}")
    } else {
        format!("{value:.0} {unit}")
    }
}

/// `theirs / ours` as `1.23x` (above 1: edgewise is faster or smaller); `-` if undefined.
pub fn ratio(theirs: f64, ours: f64) -> String {
    if theirs.is_nan() || ours.is_nan() || ours <= 0.0 {
        "-".to_owned()
    } else {
        format!("{:.2}x", theirs / ours)
    }
}

/// A `q` quantile per [`QUANTILES`], formatted.
pub fn quantile_cells(hist: &Histogram) -> Vec<String> {
    QUANTILES
        .iter()
        .map(|&q| duration(hist.quantile(q)))
        .collect()
}

/// Prints a Markdown table under `title`; the first `left` columns are left-aligned (labels),
/// the rest right-aligned (figures).
pub fn table(title: &str, header: &[&str], left: usize, rows: &[Vec<String>]) {
    println!("\n{title}\n");
    let widths: Vec<usize> = (0..header.len())
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .chain([header[c].chars().count(), 3])
                .max()
                .unwrap_or(3)
        })
        .collect();
    let cell = |c: usize, s: &str| {
        let pad = widths[c].saturating_sub(s.chars().count());
        if c < left {
            format!(" {s}{} ", " ".repeat(pad))
        } else {
            format!(" {}{s} ", " ".repeat(pad))
        }
    };
    let line = |cells: Vec<String>| println!("|{}|", cells.join("|"));
    line(header.iter().enumerate().map(|(c, h)| cell(c, h)).collect());
    line(
        widths
            .iter()
            .enumerate()
            .map(|(c, &w)| {
                if c < left {
                    format!(" {} ", "-".repeat(w))
                } else {
                    format!(" {}: ", "-".repeat(w - 1))
                }
            })
            .collect(),
    );
    for row in rows {
        line(row.iter().enumerate().map(|(c, s)| cell(c, s)).collect());
    }
}
