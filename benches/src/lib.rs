//! Shared pieces of the edgewise benchmarks: deterministic workloads and the peers edgewise is
//! measured against. Both the criterion benches (native) and the `headers_wasm` binary (native and
//! `wasm32-wasip1` under Node) use them, so every target measures the same inputs and the same
//! loops.

pub mod batch;
#[cfg(not(target_family = "wasm"))]
pub mod loadgen;
pub mod peers;
pub mod rfc9578;
#[cfg(not(target_family = "wasm"))]
pub mod store;
pub mod subset;
pub mod workload;
pub mod workspace;
