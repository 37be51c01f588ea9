//! RAII: what each Drop frees (and what it must not), and the order the
//! borrows impose: restores, then states / buffers / streams / pipelines,
//! then the backend and the store (the log hook last).
mod common;
use auxstore::*;
use common::*;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

#[test]
fn drops_free_what_they_own_and_only_that() {
    let backend = Backend::host().unwrap();
    // A dropped buffer is freed: freeing its address again is refused.
    let addr = backend.alloc(4096).unwrap().ptr();
    assert!(unsafe { backend.free_raw(addr) }.is_err(), "the buffer's drop freed it");
    // A dropped owned state frees its device memory.
    let st = backend.opaque_state(4096).unwrap();
    let mem = st.buffers().unwrap()[0];
    drop(st);
    assert!(unsafe { backend.free_raw(mem) }.is_err(), "the state's drop freed its memory");
    // A dropped borrowed state frees only the handle: the engine's buffer is
    // still allocated (its own drop frees it, without error).
    let stream = backend.create_stream().unwrap();
    let mut buf = backend.alloc(4096).unwrap();
    buf.write(0, &[3u8; 64], &stream).unwrap();
    let st = backend.borrow_opaque_state(&mut buf, 64).unwrap();
    st.release().unwrap();
    assert_eq!(buf.read_vec(0, 64, &stream).unwrap(), vec![3u8; 64]);
    let raw = buf.into_raw();
    unsafe { backend.free_raw(raw) }.unwrap();

    // Dropping a stream waits for its work first.
    let mut target = backend.alloc(1 << 20).unwrap();
    let src = vec![0xabu8; 1 << 20];
    {
        let s = backend.create_stream().unwrap();
        unsafe { target.write_async(0, &src, s.as_stream_ref()) }.unwrap();
        drop(s); // waits, then destroys
    }
    assert_eq!(target.read_vec((1 << 20) - 8, 8, &stream).unwrap(), vec![0xab; 8]);
}

#[test]
fn pipeline_drop_waits_for_accepted_snapshots() {
    let dir = TempDir::new("drop-pipe");
    let store = open_store(&dir);
    let ns = store.register_namespace("m", &geometry()).unwrap();
    let backend = Backend::host().unwrap();
    let stream = backend.create_stream().unwrap();
    let b = seq_blobs(61, 512, 0);
    let prefix = prefix_of(61, 512);
    {
        let p = Pipeline::with_options(&store, &backend, &small_pipeline_options()).unwrap();
        let mut d = backend.dsa_state(&geometry()).unwrap();
        d.load(&b.dsa).unwrap();
        assert!(p.snapshot(ns, &prefix, 512, &[(1, &d)], &stream).unwrap().is_accepted());
        drop(d); // the copies are done (the safe snapshot waited)
                 // no flush: the pipeline's drop waits for the write
    }
    assert_eq!(&*store.get_layer(ns, &prefix, 1).unwrap(), &b.dsa[..]);
}

#[test]
fn a_scope_waits_even_for_a_forgotten_handle() {
    let dir = TempDir::new("drop-scope");
    let store = open_store(&dir);
    let ns = store.register_namespace("m", &geometry()).unwrap();
    let backend = Backend::host().unwrap();
    let p = Pipeline::with_options(&store, &backend, &small_pipeline_options()).unwrap();
    let big = Rng::new(71).bytes(8 << 20);
    let prefix = prefix_of(71, 16);
    store.put_snapshot(ns, &prefix, 16, &[Layer::new(3, Kind::Opaque, &big)]).unwrap();
    let mut target = backend.opaque_state(8 << 20).unwrap();
    let finished = AtomicBool::new(false);
    p.scope(|s| {
        let h = s
            .start(
                ns,
                &prefix,
                [(3, &mut target)],
                RestoreOptions::new().on_done(|r| {
                    r.unwrap();
                    finished.store(true, Ordering::SeqCst);
                }),
            )
            .unwrap();
        std::mem::forget(h); // leaks the C handle; the scope still waits
    });
    assert!(finished.load(Ordering::SeqCst), "the scope returned before the restore completed");
    assert_eq!(target.counters().unwrap().count, 8 << 20);
    assert_eq!(&*target.read().unwrap(), &big[..]);

    // A dropped (released) handle: the restore goes on, the scope waits.
    let mut t2 = backend.opaque_state(8 << 20).unwrap();
    p.scope(|s| drop(s.start(ns, &prefix, [(3, &mut t2)], RestoreOptions::new()).unwrap()));
    assert_eq!(t2.counters().unwrap().count, 8 << 20);
}

#[test]
fn the_log_hook_lives_until_the_store_is_closed_and_no_longer() {
    let dir = TempDir::new("drop-log");
    let calls = Arc::new(AtomicUsize::new(0));
    let after_close = Arc::new(AtomicUsize::new(0));
    let closed = Arc::new(AtomicBool::new(false));
    let (c, a, cl) = (calls.clone(), after_close.clone(), closed.clone());
    let store = {
        let mut o = Options::new();
        o.log_callback(LogLevel::Debug, move |_, _, _| {
            c.fetch_add(1, Ordering::SeqCst);
            if cl.load(Ordering::SeqCst) {
                a.fetch_add(1, Ordering::SeqCst);
            }
        })
        .unwrap();
        Store::open(dir.join("s"), &o).unwrap()
        // the options drop here; the store holds the hook
    };
    let ns = store.register_namespace("m", &geometry()).unwrap();
    store.put_snapshot(ns, &prefix_of(1, 16), 16, &[Layer::new(2, Kind::Opaque, &[1; 16])]).unwrap();
    let backend = Backend::host().unwrap();
    {
        let p = Pipeline::new(&store, &backend).unwrap();
        let mut t = backend.opaque_state(16).unwrap();
        p.restore_wait(ns, &prefix_of(1, 16), &mut [(2, &mut t)]).unwrap();
        // t, then p, drop here (reverse order); then backend, then store
    }
    let during = calls.load(Ordering::SeqCst);
    assert!(during > 0);
    drop(backend);
    drop(store); // close may still log (c.h); the hook is freed after it
    closed.store(true, Ordering::SeqCst);
    std::thread::sleep(std::time::Duration::from_millis(100));
    assert_eq!(after_close.load(Ordering::SeqCst), 0, "the hook ran after the store was closed");
    assert_eq!(Arc::strong_count(&calls), 1, "the store dropped its hook");
}
