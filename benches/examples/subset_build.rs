//! One subset build, over and over, for profilers: `perf record`, or cachegrind through
//! `scripts/build-instructions.sh`, which subtracts a run of one round from a run of three to
//! count the instructions of one build alone (the table's generation and encoding excluded).
//!
//!   cargo run --release -p edgewise-benches --example subset_build -- SCENARIO HOSTS ROUNDS [MODE [cold]]
//!
//! SCENARIO is `4x3`, `mosn`, `unique` or `pairs` (see `edgewise_benches::subset::Scenario`); MODE
//! is `bytes` (`SubsetLb::decode` of the daemon's bytes, the worker's path; the default), `build`
//! (`SubsetLb::build`), `validated` (`SubsetLb::build_validated`), `validate`
//! (`HostTable::validate`) or `walk` (a read of every host's address and of every label's key and
//! value, with no checks: the floor under any build from an owned table, which waits on those
//! separately allocated strings). Prints the median and fastest build to stderr.
//!
//! `cold` reads 64 MiB of other memory before each round, untimed: a worker builds its index
//! after serving requests, not in a loop of builds whose buffers and input stay in cache (a
//! build of 100k hosts reads and writes ~15 MB, several times this host's 2 MiB of L2 a core).

use std::hint::black_box;
use std::process::ExitCode;
use std::time::Instant;

use edgewise::{Host, HostTable, SubsetLb};
use edgewise_benches::subset::Scenario;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((scenario, hosts, rounds)) = Scenario::profile_args(&args) else {
        return usage();
    };
    let mode = args.get(3).map_or("bytes", String::as_str);
    let mut other = match args.get(4).map(String::as_str) {
        None => Vec::new(),
        Some("cold") => vec![1u64; 8 << 20],
        Some(_) => return usage(),
    };
    let table = scenario.table(hosts, 0x5eed);
    let Ok(bytes) = table.encode() else {
        eprintln!("the generated table does not encode");
        return ExitCode::FAILURE;
    };
    let mut times = Vec::with_capacity(rounds);
    for round in 0..rounds {
        evict(&mut other, round as u64);
        let start = Instant::now();
        let built = match mode {
            "bytes" => SubsetLb::decode(&bytes).map(|lb| lb.len()).is_ok(),
            "build" => SubsetLb::build(&table).map(|lb| lb.len()).is_ok(),
            "validated" => SubsetLb::build_validated(&table).map(|lb| lb.len()).is_ok(),
            "validate" => table.validate().is_ok(),
            "walk" => walk(&table) > 0,
            _ => return usage(),
        };
        times.push(start.elapsed().as_secs_f64() * 1e3);
        if !black_box(built) {
            eprintln!("the generated table was refused");
            return ExitCode::FAILURE;
        }
    }
    times.sort_by(f64::total_cmp);
    eprintln!(
        "median {:.3} ms min {:.3}",
        times[times.len() / 2],
        times[0]
    );
    ExitCode::SUCCESS
}

/// Reads and writes every word of `other`, so that the next build finds little of its own
/// memory in cache.
fn evict(other: &mut [u64], round: u64) {
    for word in other.iter_mut() {
        *word = word.wrapping_add(round);
    }
    black_box(other);
}

/// A byte of each host's address and of each of its labels' keys and values, summed.
fn walk(table: &HostTable) -> usize {
    let first = |s: &String| usize::from(s.as_bytes().first().copied().unwrap_or(0));
    let host = |h: &Host| {
        first(&h.address)
            + h.labels
                .iter()
                .map(|(k, v)| first(k) + first(v))
                .sum::<usize>()
    };
    black_box(table.hosts.iter().map(host).sum())
}

fn usage() -> ExitCode {
    eprintln!(
        "usage: subset_build 4x3|mosn|unique|pairs HOSTS ROUNDS [bytes|build|validated|validate|walk [cold]]"
    );
    ExitCode::from(2)
}
