//! Benchmarks live in `benches/`; this library is empty so the crate can hold shared workload
//! generators as benchmarks are added.
