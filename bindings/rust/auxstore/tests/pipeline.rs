//! Pipelines: options and stats, write-behind snapshots and shedding,
//! restores (blocking, scoped handles, callbacks, cancel, stream waits,
//! leases), metrics.
mod common;
use auxstore::*;
use common::*;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{mpsc, Mutex};

// Fields drop in order: the store closes before its folder is removed.
struct Fixture {
    store: Store,
    backend: Backend,
    ns: Namespace,
    _dir: TempDir,
}

fn fixture(tag: &str) -> Fixture {
    let dir = TempDir::new(tag);
    let store = open_store(&dir);
    let ns = store.register_namespace("pipe", &geometry()).unwrap();
    Fixture { store, backend: Backend::host().unwrap(), ns, _dir: dir }
}

/// Three fresh targets (0 QSA, 1 DSA, 2 opaque).
fn targets(b: &Backend) -> (State<'_>, State<'_>, State<'_>) {
    let (kp, kn) = weights();
    (b.qsa_state(&geometry(), &kp, &kn).unwrap(), b.dsa_state(&geometry()).unwrap(), b.opaque_state(8192).unwrap())
}

fn check_restored(blobs: &SeqBlobs, tokens: usize, pooled: u64, q: &State<'_>, d: &State<'_>, o: &State<'_>) {
    assert_eq!(q.counters().unwrap(), Counters { count: tokens as u64, pooled });
    assert_eq!(&*q.read().unwrap(), &blobs.qsa[..]);
    assert_eq!(&*d.read().unwrap(), &blobs.dsa[..]);
    assert_eq!(&*o.read().unwrap(), &blobs.opaque[..]);
    let (kp, kn) = weights();
    if pooled > 0 {
        let want = qsa_block_pool_host(&geometry(), &blobs.raw, tokens as u64, &kp, &kn, pooled as u32).unwrap();
        assert_eq!(bf16_from_bytes(&q.qsa_block_keys().unwrap()), want, "re-pooled block keys");
    }
}

#[test]
fn options_stats_and_refusals() {
    let f = fixture("popts");
    let d = PipelineOptions::default();
    assert_eq!((d.staging_buffers, d.staging_bytes), (4, 4 << 20));
    // One lane and I/O thread per two cores, 2 to 8.
    assert_eq!(d.io_threads, d.restore_read_ahead);
    assert!((2..=8).contains(&d.io_threads), "{}", d.io_threads);
    assert_eq!((d.snapshot_queue, d.snapshot_bytes), (8, 64 << 20));
    let p = Pipeline::new(&f.store, &f.backend).unwrap();
    assert_ne!(p.stream().id(), 0);
    assert_eq!(p.stats().unwrap(), PipelineStats::default());
    drop(p);
    let p = Pipeline::with_options(&f.store, &f.backend, &small_pipeline_options()).unwrap();
    assert_eq!(p.stats().unwrap().restores_ok, 0);
    let bad = PipelineOptions { staging_bytes: 1024, ..PipelineOptions::default() };
    let e = Pipeline::with_options(&f.store, &f.backend, &bad).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)) && e.message().contains("chunk size"), "{e}");
}

#[test]
fn write_behind_snapshots_and_blocking_restores() {
    let f = fixture("pwb");
    let p = Pipeline::with_options(&f.store, &f.backend, &small_pipeline_options()).unwrap();
    let stream = f.backend.create_stream().unwrap();
    let tokens = 320;
    let pooled = (tokens / RATIO as usize) as u64;
    let b = seq_blobs(11, tokens, pooled);
    let prefix = prefix_of(11, tokens);
    {
        let (mut q, mut d, mut o) = targets(&f.backend);
        q.load(&b.qsa).unwrap();
        d.load(&b.dsa).unwrap();
        o.load(&b.opaque).unwrap();
        let out = p.snapshot(f.ns, &prefix, tokens as u64, &[(0, &q), (1, &d), (2, &o)], &stream).unwrap();
        assert_eq!(out, SnapshotOutcome::Accepted);
        // The safe call waited for the copies: the sources may go now.
    }
    p.flush().unwrap();
    let s = p.stats().unwrap();
    assert_eq!((s.snapshots_accepted, s.snapshots_written, s.snapshots_shed, s.snapshots_failed), (1, 1, 0, 0));
    assert_eq!(s.bytes_snapshotted, (b.qsa.len() + b.dsa.len() + b.opaque.len()) as u64);
    assert_eq!(&*f.store.get_layer(f.ns, &prefix, 0).unwrap(), &b.qsa[..], "stored bytes are the seed's QSA blob");
    assert_eq!(&*f.store.get_layer(f.ns, &prefix, 1).unwrap(), &b.dsa[..]);

    // A blocking restore into fresh targets.
    let (mut q, mut d, mut o) = targets(&f.backend);
    p.restore_wait(f.ns, &prefix, &mut [(0, &mut q), (1, &mut d), (2, &mut o)]).unwrap();
    check_restored(&b, tokens, pooled, &q, &d, &o);
    let s = p.stats().unwrap();
    assert_eq!(s.restores_ok, 1);
    assert_eq!(s.bytes_restored, (b.qsa.len() + b.dsa.len() + b.opaque.len()) as u64);
    assert_eq!(s.restore_latency_us.iter().sum::<u64>(), 1);
    assert!(s.restore_latency_us_sum > 0);

    // Refused or failed restores move no counter.
    let (mut q2, mut d2, mut o2) = targets(&f.backend);
    let e = p.restore_wait(f.ns, &prefix, &mut [(0, &mut d2), (1, &mut q2), (2, &mut o2)]).unwrap_err(); // kinds swapped
    assert!(e.code() != 0, "{e}");
    assert_eq!(q2.counters().unwrap(), Counters::default());
    assert_eq!(d2.counters().unwrap(), Counters::default());
    let e = p.restore_wait(f.ns, &prefix_of(99, 16), &mut [(2, &mut o2)]).unwrap_err();
    assert!(matches!(e, Error::NotFound(_)), "{e:?}");
    // Not fresh: q was restored already.
    assert!(p.restore_wait(f.ns, &prefix, &mut [(0, &mut q), (1, &mut d2), (2, &mut o2)]).is_err());
    // Another backend's state.
    let other = Backend::host().unwrap();
    let mut foreign = other.opaque_state(8192).unwrap();
    let e = p.restore_wait(f.ns, &prefix, &mut [(2, &mut foreign)]).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)) && e.message().contains("another backend"), "{e}");
    assert!(matches!(p.restore_wait(f.ns, &prefix, &mut []), Err(Error::InvalidArgument(_))));
    assert!(p.stats().unwrap().restores_failed >= 2);
}

#[test]
fn shedding_never_blocks_and_is_counted() {
    let f = fixture("shed");
    // 8 KiB of pinned snapshot memory: a 40 KiB snapshot cannot fit.
    let o = PipelineOptions { snapshot_bytes: 8 << 10, snapshot_queue: 1, ..small_pipeline_options() };
    let p = Pipeline::with_options(&f.store, &f.backend, &o).unwrap();
    let stream = f.backend.create_stream().unwrap();
    let b = seq_blobs(12, 256, 0);
    let (mut q, mut d, _) = targets(&f.backend);
    q.load(&b.qsa).unwrap();
    d.load(&b.dsa).unwrap();
    let prefix = prefix_of(12, 256);
    match p.snapshot(f.ns, &prefix, 256, &[(0, &q), (1, &d)], &stream).unwrap() {
        SnapshotOutcome::Shed(m) => assert!(m.contains("arena") || m.contains("queue"), "{m}"),
        other => panic!("not shed: {other:?}"),
    }
    // A small one fits.
    let mut small = f.backend.opaque_state(4096).unwrap();
    small.load(&[5u8; 1000]).unwrap();
    let p2 = prefix_of(13, 16);
    assert!(p.snapshot(f.ns, &p2, 16, &[(2, &small)], &stream).unwrap().is_accepted());
    p.flush().unwrap();
    let s = p.stats().unwrap();
    assert_eq!((s.snapshots_shed, s.snapshots_accepted, s.snapshots_written), (1, 1, 1));
    assert_eq!(f.store.get_manifests(f.ns, &[prefix, p2]).unwrap(), vec![None, Some(16)]);
    let text = p.metrics_text(None).unwrap();
    assert!(text.contains("auxstore_write_behind_snapshots_total{result=\"shed\"} 1"), "{text}");
    // Refusals (not sheds) are errors.
    assert!(matches!(p.snapshot(f.ns, &p2, 16, &[], &stream), Err(Error::InvalidArgument(_))));
    assert!(matches!(p.snapshot(f.ns, &p2, 16, &[(2, &small), (2, &small)], &stream), Err(Error::InvalidArgument(_))));
}

#[test]
fn scoped_restores_with_handles_callbacks_and_stream_waits() {
    let f = fixture("scope");
    let p = Pipeline::with_options(&f.store, &f.backend, &small_pipeline_options()).unwrap();
    let tokens = 512;
    let pooled = (tokens / RATIO as usize) as u64;
    let b = seq_blobs(21, tokens, pooled);
    let prefix = prefix_of(21, tokens);
    f.store.put_snapshot(f.ns, &prefix, tokens as u64, &b.layers()).unwrap();
    let engine = f.backend.create_stream().unwrap();
    let (mut q, mut d, mut o) = targets(&f.backend);

    let layers_seen = Mutex::new(Vec::new());
    let done_calls = AtomicUsize::new(0);
    let (tx, rx) = mpsc::channel();
    let lease = f.store.lease(f.ns, &prefix, 60_000).unwrap();
    let lease_id = lease.id();
    let result = p.scope(|s| -> Result<Vec<u32>> {
        let opts = RestoreOptions::new()
            .stream(&engine)
            .lease(lease)
            .on_layer(|l| layers_seen.lock().unwrap().push(l))
            .on_done({
                let done_calls = &done_calls;
                move |r| {
                    done_calls.fetch_add(1, Ordering::SeqCst);
                    tx.send(r).unwrap();
                }
            });
        let h = s.start(f.ns, &prefix, [(0, &mut q), (1, &mut d), (2, &mut o)], opts)?;
        for l in [0u32, 1, 2] {
            h.wait_layer(l)?;
            assert!(h.layer_done(l));
            h.stream_wait_layer(l, &engine)?;
        }
        assert!(!h.layer_done(7));
        h.stream_wait_all(&engine)?;
        h.join()?;
        assert!(h.poll());
        let done = h.layers_done()?;
        assert!(matches!(h.wait_layer(9), Err(Error::NotFound(_))), "not a target");
        Ok(done)
    });
    assert_eq!(result.unwrap(), vec![0, 1, 2]);
    // The scope returned only after the done callback did.
    assert_eq!(done_calls.load(Ordering::SeqCst), 1);
    assert_eq!(rx.try_recv().unwrap(), Ok(()));
    let mut seen = layers_seen.into_inner().unwrap();
    seen.sort_unstable();
    assert_eq!(seen, vec![0, 1, 2]);
    engine.synchronize().unwrap();
    check_restored(&b, tokens, pooled, &q, &d, &o);
    // The restore released the lease.
    assert!(matches!(f.store.release_lease(lease_id), Err(Error::NotFound(_))));

    // A restore whose snapshot is missing: refused later, by the handle.
    let (mut q2, _, _) = targets(&f.backend);
    let (tx, rx) = mpsc::channel();
    p.scope(|s| {
        let h = s
            .start(
                f.ns,
                &prefix_of(77, 16),
                [(0, &mut q2)],
                RestoreOptions::new().on_done(move |r| tx.send(r).unwrap()),
            )
            .unwrap();
        assert!(matches!(h.join(), Err(Error::NotFound(_))));
        assert!(h.layers_done().unwrap().is_empty());
    });
    assert!(matches!(rx.recv().unwrap(), Err(Error::NotFound(_))));
    assert_eq!(q2.counters().unwrap(), Counters::default());

    // Refused up front: stream 0 (the legacy default stream), a lease of
    // another store; no callback runs, the lease is released.
    let other_dir = TempDir::new("scope-other");
    let other = open_store(&other_dir);
    let ons = other.register_namespace("pipe", &geometry()).unwrap();
    other.put_snapshot(ons, &prefix, 1, &[Layer::new(2, Kind::Opaque, &[1])]).unwrap();
    let foreign = other.lease(ons, &prefix, 60_000).unwrap();
    let foreign_id = foreign.id();
    let calls = AtomicUsize::new(0);
    p.scope(|s| {
        let zero = unsafe { StreamRef::from_raw(0) };
        let e = s
            .start(
                f.ns,
                &prefix,
                [(0, &mut q2)],
                RestoreOptions::new().stream(zero).on_done(|_| {
                    calls.fetch_add(1, Ordering::SeqCst);
                }),
            )
            .unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)) && e.message().contains("legacy default stream"), "{e}");
    });
    // (A refused start still borrows its targets until the scope ends: the
    // compiler cannot know it was refused. Hence a second scope.)
    p.scope(|s| {
        let e = s.start(f.ns, &prefix, [(0, &mut q2)], RestoreOptions::new().lease(foreign)).unwrap_err();
        assert!(e.message().contains("another store"), "{e}");
    });
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    assert!(
        matches!(other.release_lease(foreign_id), Err(Error::NotFound(_))),
        "the refused restore's lease was released"
    );
    assert_eq!(q2.counters().unwrap(), Counters::default());
}

#[test]
fn callback_restores_cancel_and_many_threads() {
    let f = fixture("cancel");
    let p = Pipeline::with_options(&f.store, &f.backend, &small_pipeline_options()).unwrap();
    // A big opaque snapshot (16 MiB in 64 KiB chunks) to cancel.
    let big = Rng::new(31).bytes(16 << 20);
    let big_prefix = prefix_of(31, 16);
    f.store.put_snapshot(f.ns, &big_prefix, 16, &[Layer::new(5, Kind::Opaque, &big)]).unwrap();
    let mut target = f.backend.opaque_state(16 << 20).unwrap();
    let r = p.scope(|s| {
        let h = s.start(f.ns, &big_prefix, [(5, &mut target)], RestoreOptions::new()).unwrap();
        h.cancel();
        h.join()
    });
    match r {
        Err(Error::Unavailable(m)) => {
            assert!(m.contains("cancel"), "{m}");
            assert_eq!(target.counters().unwrap().count, 0, "a cancelled restore moves no counter");
            assert_eq!(p.stats().unwrap().restores_cancelled, 1);
        }
        Ok(()) => assert_eq!(&*target.read().unwrap(), &big[..]), // it had committed already
        Err(e) => panic!("{e:?}"),
    }

    // start_with_callback (auxstore_restore): the done callback only.
    let b = seq_blobs(32, 128, 16);
    let prefix = prefix_of(32, 128);
    f.store.put_snapshot(f.ns, &prefix, 128, &b.layers()).unwrap();
    let (mut q, mut d, mut o) = targets(&f.backend);
    let (tx, rx) = mpsc::channel();
    p.scope(|s| {
        s.start_with_callback(f.ns, &prefix, [(0, &mut q), (1, &mut d), (2, &mut o)], move |r| tx.send(r).unwrap())
            .unwrap();
    });
    assert_eq!(rx.recv().unwrap(), Ok(()));
    check_restored(&b, 128, 16, &q, &d, &o);
    let (mut q3, _, _) = targets(&f.backend);
    p.scope(|s| {
        assert!(s.start_with_callback(f.ns, &prefix, [(0, &mut q3), (0, &mut q)], |_| unreachable!()).is_err());
    });

    // Eight restores from four threads in one scope (the scope is Sync,
    // handles are Send + Sync, states are Send).
    let mut sets: Vec<(State<'_>, State<'_>, State<'_>)> = (0..8).map(|_| targets(&f.backend)).collect();
    let ok = AtomicU32::new(0);
    p.scope(|s| {
        std::thread::scope(|t| {
            for chunk in sets.chunks_mut(2) {
                let ok = &ok;
                let prefix = &prefix;
                t.spawn(move || {
                    let mut handles = Vec::new();
                    for (q, d, o) in chunk.iter_mut() {
                        handles.push(s.start(f.ns, prefix, [(0, q), (1, d), (2, o)], RestoreOptions::new()).unwrap());
                    }
                    for h in handles {
                        h.join().unwrap();
                        ok.fetch_add(1, Ordering::Relaxed);
                    }
                });
            }
        });
    });
    assert_eq!(ok.load(Ordering::Relaxed), 8);
    for (q, d, o) in &sets {
        check_restored(&b, 128, 16, q, d, o);
    }
}

#[test]
fn a_panicking_callback_surfaces_after_the_restore_completes() {
    let f = fixture("cbpanic");
    let p = Pipeline::with_options(&f.store, &f.backend, &small_pipeline_options()).unwrap();
    let b = seq_blobs(41, 64, 0);
    let prefix = prefix_of(41, 64);
    f.store.put_snapshot(f.ns, &prefix, 64, &b.layers()).unwrap();
    let (mut q, mut d, mut o) = targets(&f.backend);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        p.scope(|s| {
            s.start(
                f.ns,
                &prefix,
                [(0, &mut q), (1, &mut d), (2, &mut o)],
                RestoreOptions::new().on_done(|_| panic!("engine bug (a test)")),
            )
            .unwrap();
        })
    }));
    assert!(r.is_err(), "the scope re-raises the callback's panic");
    // The restore itself completed; the targets are intact and usable.
    check_restored(&b, 64, 0, &q, &d, &o);
    // And a panic in the scope body still waits for the restores.
    let (mut q2, mut d2, mut o2) = targets(&f.backend);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        p.scope(|s| {
            let _h = s.start(f.ns, &prefix, [(0, &mut q2), (1, &mut d2), (2, &mut o2)], RestoreOptions::new()).unwrap();
            panic!("the engine's own code failed (a test)");
        })
    }));
    assert!(r.is_err());
    check_restored(&b, 64, 0, &q2, &d2, &o2);
    assert_eq!(p.stats().unwrap().restores_ok, 2);
}

#[test]
fn metrics_text_of_store_and_pipeline() {
    let f = fixture("metrics");
    let p = Pipeline::with_options(&f.store, &f.backend, &small_pipeline_options()).unwrap();
    let b = seq_blobs(51, 64, 0);
    let prefix = prefix_of(51, 64);
    f.store.put_snapshot(f.ns, &prefix, 64, &b.layers()).unwrap();
    let (mut q, mut d, mut o) = targets(&f.backend);
    p.restore_wait(f.ns, &prefix, &mut [(0, &mut q), (1, &mut d), (2, &mut o)]).unwrap();
    let text = metrics_text(Some(&f.store), Some(&p), Some("engine=\"rs\"")).unwrap();
    for want in [
        "auxstore_snapshots{engine=\"rs\"} 1",
        "auxstore_restores_total{engine=\"rs\",result=\"ok\"} 1",
        "# TYPE auxstore_restore_latency_seconds histogram",
        "auxstore_restore_latency_seconds_count{engine=\"rs\"} 1",
        "auxstore_restored_bytes_total{engine=\"rs\"}",
    ] {
        assert!(text.contains(want), "missing {want:?} in\n{text}");
    }
    let only = p.metrics_text(None).unwrap();
    assert!(
        only.contains("auxstore_restores_total{result=\"ok\"} 1") && !only.contains("auxstore_snapshots "),
        "{only}"
    );
}

/// When a scope returns, its targets are free: releasing each one reports
/// no error (auxstore no longer counts them as restore targets) and counts
/// no misuse — whether the restore was joined, only had a done callback, or
/// its handle was dropped while it ran.
#[test]
fn targets_release_cleanly_once_the_scope_returned() {
    let f = fixture("release-after");
    let p = Pipeline::with_options(&f.store, &f.backend, &small_pipeline_options()).unwrap();
    let b = seq_blobs(31, 128, 0);
    let prefix = prefix_of(31, 128);
    f.store.put_snapshot(f.ns, &prefix, 128, &b.layers()).unwrap();
    let misuse_before = unsafe { sys::auxstore_misuse_count() };
    for round in 0..60 {
        let (mut q, mut d, mut o) = targets(&f.backend);
        p.scope(|s| match round % 3 {
            0 => s
                .start(f.ns, &prefix, [(0, &mut q), (1, &mut d), (2, &mut o)], Default::default())
                .unwrap()
                .join()
                .unwrap(),
            1 => s.start_with_callback(f.ns, &prefix, [(0, &mut q), (1, &mut d), (2, &mut o)], |r| r.unwrap()).unwrap(),
            _ => drop(s.start(f.ns, &prefix, [(0, &mut q), (1, &mut d), (2, &mut o)], Default::default()).unwrap()),
        });
        assert_eq!(&*d.read().unwrap(), &b.dsa[..], "round {round}");
        for (name, st) in [("qsa", q), ("dsa", d), ("opaque", o)] {
            st.release().unwrap_or_else(|e| panic!("round {round}: releasing the {name} target: {e}"));
        }
    }
    assert_eq!(unsafe { sys::auxstore_misuse_count() }, misuse_before);
}

/// A batched restore: several snapshots with one handle, per-snapshot and
/// per-layer waits, get_finished, a missing snapshot that fails alone, a
/// lease released by its restore, and refusals that start nothing.
#[test]
fn batched_restores_of_many_snapshots_with_one_handle() {
    let f = fixture("batch");
    let p = Pipeline::with_options(&f.store, &f.backend, &small_pipeline_options()).unwrap();
    let (t1, t2) = (512usize, 256usize);
    let (b1, b2) = (seq_blobs(31, t1, (t1 / RATIO as usize) as u64), seq_blobs(32, t2, (t2 / RATIO as usize) as u64));
    let (p1, p2, missing) = (prefix_of(31, t1), prefix_of(32, t2), prefix_of(33, 16));
    f.store.put_snapshot(f.ns, &p1, t1 as u64, &b1.layers()).unwrap();
    f.store.put_snapshot(f.ns, &p2, t2 as u64, &b2.layers()).unwrap();
    let lease = f.store.lease(f.ns, &p2, 60_000).unwrap();
    let lease_id = lease.id();
    let engine = f.backend.create_stream().unwrap();
    let (mut q1, mut d1, mut o1) = targets(&f.backend);
    let (mut q2, mut d2, mut o2) = targets(&f.backend);
    let (mut q3, _, _) = targets(&f.backend);
    let finished = p.scope(|s| -> Result<Vec<usize>> {
        let batch = s.start_batch(
            vec![
                BatchSnapshot::new(f.ns, &p1, [(0, &mut q1), (1, &mut d1), (2, &mut o1)]),
                BatchSnapshot::new(f.ns, &p2, [(0, &mut q2), (1, &mut d2), (2, &mut o2)]).lease(lease),
                BatchSnapshot::new(f.ns, &missing, [(0, &mut q3)]),
            ],
            Some((&engine).into()),
        )?;
        assert_eq!(batch.len(), 3);
        for l in [0u32, 1, 2] {
            batch.wait_layer(0, l)?;
            assert!(batch.layer_done(0, l));
        }
        batch.wait_snapshot(1)?;
        assert!(matches!(batch.wait_snapshot(2), Err(Error::NotFound(_))), "the missing one fails alone");
        assert!(matches!(batch.wait_layer(2, 0), Err(Error::NotFound(_))));
        assert!(matches!(batch.wait(), Err(Error::NotFound(_))), "wait reports the first failure");
        assert!(batch.poll() && batch.snapshot_done(0) && batch.snapshot_done(2));
        assert!(!batch.snapshot_done(3));
        assert!(matches!(batch.wait_snapshot(3), Err(Error::InvalidArgument(_))));
        let done = batch.finished()?;
        assert!(batch.finished()?.is_empty(), "each snapshot is reported once");
        Ok(done)
    });
    assert_eq!(finished.unwrap(), vec![0, 1, 2]);
    engine.synchronize().unwrap();
    check_restored(&b1, t1, (t1 / RATIO as usize) as u64, &q1, &d1, &o1);
    check_restored(&b2, t2, (t2 / RATIO as usize) as u64, &q2, &d2, &o2);
    assert_eq!(q3.counters().unwrap(), Counters::default(), "the missing snapshot's state is untouched");
    assert!(matches!(f.store.release_lease(lease_id), Err(Error::NotFound(_))), "its restore released the lease");

    // A dropped batch handle still restores, and the scope waits for it.
    let (mut q4, mut d4, mut o4) = targets(&f.backend);
    p.scope(|s| {
        drop(
            s.start_batch(vec![BatchSnapshot::new(f.ns, &p1, [(0, &mut q4), (1, &mut d4), (2, &mut o4)])], None)
                .unwrap(),
        );
    });
    check_restored(&b1, t1, (t1 / RATIO as usize) as u64, &q4, &d4, &o4);

    // Refused up front: a lease of another store (released); nothing
    // starts. (One state in two snapshots does not compile: each target is
    // borrowed mutably.)
    let other_dir = TempDir::new("batch-other");
    let other = open_store(&other_dir);
    let ons = other.register_namespace("pipe", &geometry()).unwrap();
    other.put_snapshot(ons, &p1, 1, &[Layer::new(2, Kind::Opaque, &[1])]).unwrap();
    let foreign = other.lease(ons, &p1, 60_000).unwrap();
    let foreign_id = foreign.id();
    let (mut q5, _, _) = targets(&f.backend);
    p.scope(|s| {
        let e = s.start_batch(vec![BatchSnapshot::new(f.ns, &p1, [(0, &mut q5)]).lease(foreign)], None).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)) && e.message().contains("snapshots[0]"), "{e}");
    });
    assert!(matches!(other.release_lease(foreign_id), Err(Error::NotFound(_))), "the refused batch's lease went");
    assert_eq!(q5.counters().unwrap(), Counters::default());
}

/// Row ranges (`RestoreOptions::rows`): QSA and DSA states that hold rows
/// `0..n` restore rows `n..m`; step by step they end exactly as a whole
/// restore (bytes, counters, re-pooled block keys). A range that does not
/// start at the rows a state holds, and an opaque target, fail the restore.
#[test]
fn row_ranges_restore_into_states_holding_the_rows_before() {
    let f = fixture("rows");
    let p = Pipeline::with_options(&f.store, &f.backend, &small_pipeline_options()).unwrap();
    let tokens = 512usize;
    let pooled = (tokens / RATIO as usize) as u64;
    let b = seq_blobs(41, tokens, pooled);
    let prefix = prefix_of(41, tokens);
    f.store.put_snapshot(f.ns, &prefix, tokens as u64, &b.layers()).unwrap();
    let (mut q, mut d, mut o) = targets(&f.backend);
    for (first, last) in [(0u64, 100u64), (100, 333), (333, tokens as u64)] {
        p.scope(|s| {
            let h =
                s.start(f.ns, &prefix, [(0, &mut q), (1, &mut d)], RestoreOptions::new().rows(first..last)).unwrap();
            h.join().unwrap();
        });
        assert_eq!(q.counters().unwrap().count, last);
        assert_eq!(d.counters().unwrap().count, last);
    }
    p.restore_wait(f.ns, &prefix, &mut [(2, &mut o)]).unwrap();
    check_restored(&b, tokens, pooled, &q, &d, &o);

    let (mut q2, _, mut o2) = targets(&f.backend);
    p.scope(|s| {
        let h = s.start(f.ns, &prefix, [(0, &mut q2)], RestoreOptions::new().rows(10..20)).unwrap();
        assert!(matches!(h.join(), Err(Error::InvalidArgument(m)) if m.contains("holds 0 rows")));
        let h = s.start(f.ns, &prefix, [(2, &mut o2)], RestoreOptions::new().rows(0..20)).unwrap();
        assert!(matches!(h.join(), Err(Error::InvalidArgument(m)) if m.contains("opaque")));
    });
    assert_eq!(q2.counters().unwrap(), Counters::default());
}
