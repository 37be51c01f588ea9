//! Huge sizes through the safe API are errors, never undefined behaviour
//! (issue 23: `backend.alloc(usize::MAX)?` followed by a write crashed).
//!
//! Each case runs in a child process (this test binary again, running the
//! ignored `huge_case_child` with the case's name in the environment), so a
//! case that crashes is reported by name with its signal instead of taking
//! the other cases with it. A case fails when the call it makes succeeds —
//! it then uses what it got the way an engine would (writes into it), which
//! is what crashed before — or when the error is not the documented one.
mod common;
use auxstore::*;
use common::*;
use std::process::Command;

const CASE_ENV: &str = "AUXSTORE_RS_HUGE_CASE";

const CASES: &[&str] = &[
    "alloc_usize_max",
    "alloc_half_plus_one",
    "alloc_sizes_whose_rounding_wraps",
    "alloc_isize_max",
    "opaque_state_huge_capacity",
    "dsa_state_geometry_overflows",
    "qsa_state_geometry_overflows",
    "borrow_dsa_state_rows_overflow",
    "pipeline_staging_overflows",
    "buffer_ranges_near_usize_max",
    "qsa_block_pool_host_huge_block_count",
];

fn invalid(r: Result<()>, what: &str, needle: &str) {
    match r {
        Err(Error::InvalidArgument(m)) => {
            assert!(m.contains(needle), "{what}: the message does not say {needle:?}: {m}")
        }
        other => panic!("{what}: expected InvalidArgument, got {other:?}"),
    }
}

/// What an engine does with a buffer it was given: write at its start and
/// at its claimed end. On an allocation smaller than claimed this is the
/// write that crashed.
fn use_buffer(b: &Backend, mut buf: DeviceBuffer<'_>) -> Result<()> {
    let s = b.create_stream()?;
    let data = vec![0xa5u8; 1 << 20];
    buf.write(0, &data, &s)?;
    let end = buf.len() - data.len();
    buf.write(end, &data, &s)?;
    Ok(())
}

/// What a restore does with a fresh state: fill it.
fn use_state(mut st: State<'_>, blob: &[u8]) -> Result<()> {
    st.load(blob)?;
    Ok(())
}

fn run_case(name: &str) {
    let b = Backend::host().unwrap();
    match name {
        "alloc_usize_max" => {
            invalid(b.alloc(usize::MAX).and_then(|buf| use_buffer(&b, buf)), name, "auxstore::Backend::alloc");
        }
        "alloc_half_plus_one" => {
            invalid(b.alloc(usize::MAX / 2 + 1).and_then(|buf| use_buffer(&b, buf)), name, "isize::MAX");
        }
        "alloc_sizes_whose_rounding_wraps" => {
            // Sizes a round-up to 256 B, 4 KiB or 2 MiB takes past usize::MAX.
            for k in [1usize, 255, 256, 4095, 4096, (2 << 20) - 1, 2 << 20, (256 << 20) - 1] {
                let what = format!("alloc(usize::MAX - {k})");
                invalid(b.alloc(usize::MAX - k).and_then(|buf| use_buffer(&b, buf)), &what, "bytes");
            }
        }
        "alloc_isize_max" => {
            // Allowed by Rust's bound, but no memory holds it: auxstore's
            // own refusal, whatever its code.
            let r = b.alloc(isize::MAX as usize).and_then(|buf| use_buffer(&b, buf));
            assert!(r.is_err(), "alloc(isize::MAX) succeeded");
        }
        "opaque_state_huge_capacity" => {
            let blob = vec![7u8; 1 << 20];
            for cap in [u64::MAX, u64::MAX - 255, (u64::MAX >> 1) + 1] {
                let what = format!("opaque_state({cap})");
                invalid(b.opaque_state(cap).and_then(|st| use_state(st, &blob)), &what, "capacity");
            }
        }
        "dsa_state_geometry_overflows" => {
            let blob = dsa_blob(1, 1 << 20, &[1; 2 << 20], &[2; 2 << 20], &[1]);
            for (cap, dim) in [(u32::MAX, u32::MAX), (1u32 << 31, 1u32 << 31), (u32::MAX, 1 << 31)] {
                let g = Geometry { dsa_index_head_dim: dim, dsa_capacity: cap, ..Geometry::default() };
                let what = format!("dsa_state(capacity {cap}, head dim {dim})");
                invalid(b.dsa_state(&g).and_then(|st| use_state(st, &blob)), &what, "overflow");
            }
        }
        "qsa_state_geometry_overflows" => {
            let g = Geometry {
                qsa_hd: u32::MAX - 1,
                qsa_max_tokens: u32::MAX,
                qsa_ratio: 1,
                qsa_rot: 0,
                qsa_theta: 10000.0,
                qsa_eps: 1e-6,
                ..Geometry::default()
            };
            // Short weights on purpose: the size check comes first and says
            // what overflows.
            let (k, w) = weights();
            invalid(b.qsa_state(&g, &k, &w).map(drop), "qsa_state(u32::MAX tokens of u32::MAX - 1)", "overflow");
        }
        "borrow_dsa_state_rows_overflow" => {
            let g = geometry();
            let (mut k, mut gate, mut valid) = (b.alloc(4096).unwrap(), b.alloc(4096).unwrap(), b.alloc(64).unwrap());
            for rows in [u64::MAX, 1u64 << 62] {
                let buffers = DsaBuffers { capacity_rows: rows, k_normed: &mut k, gate: &mut gate, valid: &mut valid };
                let r = b.borrow_dsa_state(&g, buffers, 0).map(drop);
                invalid(r, &format!("borrow_dsa_state(capacity_rows {rows})"), "overflow");
            }
        }
        "pipeline_staging_overflows" => {
            let dir = TempDir::new("huge-staging");
            let store = open_store(&dir);
            let huge = [
                PipelineOptions { staging_bytes: usize::MAX, ..PipelineOptions::default() },
                PipelineOptions { staging_bytes: usize::MAX / 2 + 1, staging_buffers: 1, ..PipelineOptions::default() },
                PipelineOptions { staging_buffers: usize::MAX, ..PipelineOptions::default() },
                PipelineOptions { staging_buffers: 1 << 40, staging_bytes: 1 << 30, ..PipelineOptions::default() },
            ];
            for o in huge {
                let r = Pipeline::with_options(&store, &b, &o).map(drop);
                invalid(r, &format!("{o:?}"), "staging");
            }
        }
        "buffer_ranges_near_usize_max" => {
            let mut buf = b.alloc(64).unwrap();
            let s = b.create_stream().unwrap();
            for (off, n) in [(0usize, usize::MAX), (1, usize::MAX), (usize::MAX, 1), (64, 1), (0, 65)] {
                let what = format!("read_vec({off}, {n})");
                assert!(matches!(buf.read_vec(off, n, &s), Err(Error::OutOfRange(_))), "{what}");
            }
            assert!(matches!(buf.write(usize::MAX, &[1], &s), Err(Error::OutOfRange(_))));
            assert!(matches!(buf.write(63, &[1, 2], &s), Err(Error::OutOfRange(_))));
            // The buffer is intact and usable.
            buf.write(0, &[9; 64], &s).unwrap();
            assert_eq!(buf.read_vec(0, 64, &s).unwrap(), vec![9; 64]);
        }
        "qsa_block_pool_host_huge_block_count" => {
            let g = geometry();
            let (k, w) = weights();
            let raw = vec![0u16; 64 * HD as usize];
            let r = qsa_block_pool_host(&g, &raw, 64, &k, &w, u32::MAX);
            assert!(matches!(r, Err(Error::OutOfRange(_))), "{r:?}");
            let out = qsa_block_pool_host(&g, &raw, 64, &k, &w, 8).unwrap();
            assert_eq!(out.len(), 8 * HD as usize);
        }
        other => panic!("no case {other}"),
    }
    // Whatever was refused changed nothing: the backend still allocates,
    // writes and reads.
    let mut buf = b.alloc(4096).unwrap();
    let s = b.create_stream().unwrap();
    buf.write(100, &[1, 2, 3], &s).unwrap();
    assert_eq!(buf.read_vec(100, 3, &s).unwrap(), vec![1, 2, 3]);
}

/// One case, in the child process the parent test starts.
#[test]
#[ignore = "run by huge_sizes_are_errors_never_crashes in a child process"]
fn huge_case_child() {
    let name = std::env::var(CASE_ENV).expect("run by huge_sizes_are_errors_never_crashes");
    run_case(&name);
}

#[test]
fn huge_sizes_are_errors_never_crashes() {
    let exe = std::env::current_exe().unwrap();
    let mut failures = Vec::new();
    for case in CASES {
        let out = Command::new(&exe)
            .args(["--ignored", "--exact", "huge_case_child", "--nocapture", "--test-threads", "1"])
            .env(CASE_ENV, case)
            .env("RUST_BACKTRACE", "0")
            .output()
            .unwrap();
        if !out.status.success() {
            use std::os::unix::process::ExitStatusExt;
            let how = match out.status.signal() {
                Some(sig) => format!("crashed with signal {sig}"),
                None => format!("failed ({})", out.status),
            };
            let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
            let tail: String =
                text.lines().rev().take(15).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join("\n");
            failures.push(format!("{case}: {how}\n{tail}"));
        }
    }
    assert!(failures.is_empty(), "{} of {} cases:\n{}", failures.len(), CASES.len(), failures.join("\n\n"));
}
