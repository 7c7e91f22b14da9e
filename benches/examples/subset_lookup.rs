//! Subset lookups, over and over, for profilers: cachegrind through
//! `scripts/lookup-instructions.sh`, which subtracts a run of 10 rounds from a run of 30 to count
//! the instructions of one lookup alone (the table's build and the requests excluded), or `perf`.
//!
//!   cargo run --release -p edgewise-benches --example subset_lookup -- SCENARIO HOSTS ROUNDS [MODE]
//!
//! SCENARIO is `4x3`, `mosn`, `unique` or `pairs` (see `edgewise_benches::subset::Scenario`); a
//! round is 1,024 requests of random hosts' labels, each `select` + `release` as in `subset_wasm`'s
//! lookup row. MODE is `pre` (metadata set once per request beforehand: pre-interned; the default),
//! `raw` (metadata set from the request's strings each time: `SubsetLb::set_all`) or `keys` (from
//! the request's value strings each time, its keys resolved once: `SubsetLb::set_values`). Prints
//! ns per lookup to stderr.

use std::hint::black_box;
use std::process::ExitCode;
use std::time::Instant;

use edgewise::{Metadata, SubsetLb};
use edgewise_benches::subset::{Parsed, Scenario};

const REQUESTS: usize = 1024;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((scenario, hosts, rounds)) = Scenario::profile_args(&args) else {
        return usage();
    };
    let Some(mode) = Mode::named(args.get(3).map_or("pre", String::as_str)) else {
        return usage();
    };
    let table = scenario.table(hosts, 0x5eed);
    let Ok(mut lb) = SubsetLb::build(&table) else {
        eprintln!("the generated table was refused");
        return ExitCode::FAILURE;
    };
    let requests = scenario.requests(&table, REQUESTS, 0x5eed ^ 1);
    let metadata = |lb: &SubsetLb, r: &[(String, String)]| {
        let mut md = lb.metadata();
        r.iter().for_each(|(k, v)| lb.set(&mut md, k, v));
        md
    };
    let interned: Vec<Metadata> = requests.iter().map(|r| metadata(&lb, r)).collect();
    let keys = lb.request_keys(scenario.keys().iter().copied());
    let parsed = Parsed::new(&requests);
    let parsed = parsed.requests();
    let keyed = scenario.keyed(&parsed);
    let (mut entropy, mut missed) = (0u64, 0usize);
    let start = Instant::now();
    for _ in 0..rounds {
        match mode {
            Mode::Raw => {
                for r in &parsed {
                    entropy = entropy.wrapping_add(0x9e37_79b9_7f4a_7c15);
                    let mut md = lb.metadata();
                    lb.set_all(&mut md, r.iter().copied());
                    missed += usize::from(!pick(&mut lb, &md, entropy));
                }
            }
            Mode::Keys => {
                for r in &keyed {
                    entropy = entropy.wrapping_add(0x9e37_79b9_7f4a_7c15);
                    let mut md = lb.metadata();
                    lb.set_values(&mut md, &keys, r.iter().copied());
                    missed += usize::from(!pick(&mut lb, &md, entropy));
                }
            }
            Mode::Pre => {
                for md in &interned {
                    entropy = entropy.wrapping_add(0x9e37_79b9_7f4a_7c15);
                    missed += usize::from(!pick(&mut lb, md, entropy));
                }
            }
        }
    }
    let ns = start.elapsed().as_nanos() as f64 / (rounds * REQUESTS) as f64;
    if black_box(missed) > 0 {
        eprintln!("{missed} lookups found no host");
        return ExitCode::FAILURE;
    }
    eprintln!("{ns:.2} ns per lookup");
    ExitCode::SUCCESS
}

#[derive(Clone, Copy)]
enum Mode {
    Pre,
    Raw,
    Keys,
}

impl Mode {
    fn named(name: &str) -> Option<Mode> {
        match name {
            "pre" => Some(Mode::Pre),
            "raw" => Some(Mode::Raw),
            "keys" => Some(Mode::Keys),
            _ => None,
        }
    }
}

/// One lookup, not inlined into the loop (as a request handler calls it).
#[inline(never)]
fn pick(lb: &mut SubsetLb, md: &Metadata, entropy: u64) -> bool {
    match lb.select(md, entropy) {
        Some(s) => {
            lb.release(s.host);
            true
        }
        None => false,
    }
}

fn usage() -> ExitCode {
    eprintln!("usage: subset_lookup 4x3|mosn|unique|pairs HOSTS ROUNDS [pre|raw|keys]");
    ExitCode::from(2)
}
