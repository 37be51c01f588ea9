//! `mem::forget` is safe Rust, so leaking a handle must not make the safe
//! API unsound. States, buffers, streams, leases and restore handles do no
//! work of their own once leaked; a pipeline does (its threads write the
//! snapshots it accepted). A leaked pipeline therefore keeps its store and
//! backend alive: dropping them then leaks them instead of closing them
//! under the pipeline's threads.
//!
//! Runs in a child process (the leaked store and threads stay there), so a
//! crash is reported as such; the parent owns the folder and removes it once
//! the child has exited.
mod common;
use auxstore::*;
use common::*;
use std::path::Path;
use std::process::Command;

const CASE_ENV: &str = "AUXSTORE_RS_LEAK_CASE";
const DIR_ENV: &str = "AUXSTORE_RS_LEAK_DIR";

/// `open_store` over a plain path (the child's folder is the parent's).
fn open_at(path: &Path) -> Store {
    let mut o = Options::new();
    o.chunk_bytes(64 * 1024).unwrap();
    Store::open(path, &o).unwrap()
}

fn forgotten_pipeline(dir: &Path) {
    let path = dir.join("store");
    let store = open_at(&path);
    let ns = store.register_namespace("m", &geometry()).unwrap();
    let backend = Backend::host().unwrap();
    let stream = backend.create_stream().unwrap();
    let b = seq_blobs(71, 512, 0);
    let pipeline = Pipeline::with_options(&store, &backend, &small_pipeline_options()).unwrap();
    let mut d = backend.dsa_state(&geometry()).unwrap();
    d.load(&b.dsa).unwrap();
    // Accepted and not flushed: the write is still the pipeline's to do.
    assert!(pipeline.snapshot(ns, &prefix_of(71, 512), 512, &[(1, &d)], &stream).unwrap().is_accepted());
    drop(d);
    drop(stream);
    std::mem::forget(pipeline);
    drop(store);
    drop(backend);
    // The store was not closed under the leaked pipeline: its handle still
    // holds the store, so a second writer is refused as Busy.
    let e = Store::open_default(&path).unwrap_err();
    assert!(matches!(e, Error::Busy(_)), "{e:?}");
    // Other stores and backends work as before.
    let store = open_at(&dir.join("other"));
    let ns = store.register_namespace("m", &geometry()).unwrap();
    store.put_snapshot(ns, &prefix_of(72, 512), 512, &b.layers()).unwrap();
    assert_eq!(&*store.get_layer(ns, &prefix_of(72, 512), 1).unwrap(), &b.dsa[..]);
}

fn forgotten_passive_handles(dir: &Path) {
    let store = open_at(&dir.join("store"));
    let ns = store.register_namespace("m", &geometry()).unwrap();
    let b = seq_blobs(73, 64, 0);
    let prefix = prefix_of(73, 64);
    store.put_snapshot(ns, &prefix, 64, &b.layers()).unwrap();
    let backend = Backend::host().unwrap();
    {
        let stream = backend.create_stream().unwrap();
        let mut buf = backend.alloc(4096).unwrap();
        buf.write(0, &[1; 16], &stream).unwrap();
        std::mem::forget(backend.borrow_opaque_state(&mut buf, 16).unwrap());
        std::mem::forget(backend.opaque_state(64).unwrap());
        std::mem::forget(store.lease(ns, &prefix, 60_000).unwrap());
        std::mem::forget(stream);
        // The borrow of `buf` ended with the forgotten state: the engine
        // uses its buffer again.
        let s = backend.create_stream().unwrap();
        buf.write(0, &[2; 16], &s).unwrap();
        assert_eq!(buf.read_vec(0, 16, &s).unwrap(), vec![2; 16]);
        std::mem::forget(buf);
    }
    // None of them works in the background: the backend and store close.
    drop(backend);
    drop(store);
    let store = open_at(&dir.join("store"));
    assert_eq!(&*store.get_layer(ns, &prefix, 2).unwrap(), &b.opaque[..]);
}

#[test]
#[ignore = "run by leaked_handles_keep_the_safe_api_sound in a child process"]
fn leak_case_child() {
    let name = std::env::var(CASE_ENV).expect("run by leaked_handles_keep_the_safe_api_sound");
    let dir = std::env::var(DIR_ENV).expect("run by leaked_handles_keep_the_safe_api_sound");
    match name.as_str() {
        "forgotten_pipeline" => forgotten_pipeline(Path::new(&dir)),
        "forgotten_passive_handles" => forgotten_passive_handles(Path::new(&dir)),
        other => panic!("no case {other}"),
    }
}

#[test]
fn leaked_handles_keep_the_safe_api_sound() {
    let exe = std::env::current_exe().unwrap();
    for case in ["forgotten_pipeline", "forgotten_passive_handles"] {
        let dir = TempDir::new(case);
        let out = Command::new(&exe)
            .args(["--ignored", "--exact", "leak_case_child", "--nocapture", "--test-threads", "1"])
            .env(CASE_ENV, case)
            .env(DIR_ENV, dir.path())
            .env("RUST_BACKTRACE", "0")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{case}: {:?}\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
