//! Per-call figures of the connector calls from Rust (issue 24;
//! bench/RESULTS.md, "Connector calls"): a trivial call (count_leading_stored
//! of no key) and exists of 64 keys whose first key misses, each the median
//! of 7 runs. A bench, not a test: ignored unless asked for,
//!   cargo test --release -p auxstore --test connector_bench -- --ignored --nocapture
mod common;
use auxstore::*;
use common::*;
use std::time::Instant;

/// Seconds per call of `f`, `calls` times a run; (median, min, max) of 7 runs.
fn per_call(calls: u32, mut f: impl FnMut()) -> (f64, f64, f64) {
    let mut samples: Vec<f64> = (0..7)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..calls {
                f();
            }
            start.elapsed().as_secs_f64() / calls as f64
        })
        .collect();
    samples.sort_by(|a, b| a.partial_cmp(b).unwrap());
    (samples[3], samples[0], samples[6])
}

#[test]
#[ignore]
fn per_call_figures() {
    let dir = TempDir::new("connector-bench");
    let store = open_store(&dir);
    let ns = store.register_namespace("connector-bench", &Geometry::default()).unwrap();
    let stored: Vec<Prefix> = (0..64u8).map(|i| Prefix([i.wrapping_add(1); 16])).collect();
    for p in &stored[1..] {
        store.put_snapshot(ns, p, 64, &[Layer::new(0, Kind::Opaque, &[7u8; 256])]).unwrap();
    }
    let (m, lo, hi) = per_call(200_000, || {
        assert_eq!(store.count_leading_stored(ns, &[]).unwrap(), 0);
    });
    println!(
        "| trivial call from Rust (count_leading_stored of 0 keys) | {:.0} [{:.0}, {:.0}] ns |",
        m * 1e9,
        lo * 1e9,
        hi * 1e9
    );
    let (m, lo, hi) = per_call(20_000, || {
        assert_eq!(store.count_leading_stored(ns, &stored).unwrap(), 0); // the first is not stored
    });
    println!("| exists of 64 keys from Rust, first-key miss | {:.2} [{:.2}, {:.2}] us |", m * 1e6, lo * 1e6, hi * 1e6);
}
