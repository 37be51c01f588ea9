//! Backends, device memory, streams, and states (auxstore-allocated and
//! engine-owned), with the QSA re-pool against its CPU reference.
mod common;
use auxstore::*;
use common::*;

#[test]
fn backends_device_memory_and_streams() {
    let host = Backend::host().unwrap();
    assert_eq!(host.kind(), BackendKind::Host);
    assert_eq!(host.name(), "host");
    assert_eq!(host.device(), 0);
    let auto = Backend::new(BackendKind::Auto).unwrap();
    assert!(auto.name() == "host" || auto.name().starts_with("cuda:"), "{}", auto.name());
    let on = Backend::on_device(BackendKind::Host, 0).unwrap();
    assert_eq!(on.kind(), BackendKind::Host);
    assert!(matches!(Backend::on_device(BackendKind::Host, -1), Err(Error::InvalidArgument(_))));

    let s = host.create_stream().unwrap();
    assert_ne!(s.id(), 0);
    let s2 = host.create_stream().unwrap();
    assert_ne!(s.id(), s2.id());
    let mut buf = host.alloc(4096).unwrap();
    assert_eq!(buf.len(), 4096);
    assert_ne!(buf.ptr(), 0);
    let data = Rng::new(5).bytes(1000);
    buf.write(100, &data, &s).unwrap();
    assert_eq!(buf.read_vec(100, 1000, &s2).unwrap(), data);
    let mut part = [0u8; 10];
    buf.read(105, &mut part, &s).unwrap();
    assert_eq!(&part[..], &data[5..15]);
    // Out of bounds: refused by the wrapper, nothing copied.
    assert!(matches!(buf.write(4000, &data, &s), Err(Error::OutOfRange(_))));
    assert!(matches!(buf.read(usize::MAX, &mut part, &s), Err(Error::OutOfRange(_))));
    // A stream of another backend is refused.
    let other_stream = auto.create_stream().unwrap();
    assert!(matches!(buf.write(0, &data, &other_stream), Err(Error::InvalidArgument(_))));
    s.synchronize().unwrap();
    host.synchronize(&s2).unwrap();
    host.synchronize(s2.as_stream_ref()).unwrap();

    // Raw memory an engine manages itself.
    let raw = host.alloc(64).unwrap().into_raw();
    unsafe {
        host.copy_h2d_raw(raw, 0, &[9u8; 64], s.as_stream_ref()).unwrap();
        host.synchronize(&s).unwrap();
        let mut back = [0u8; 64];
        host.copy_d2h_raw(&mut back, raw, 0, s.as_stream_ref()).unwrap();
        assert_eq!(back, [9u8; 64]);
        host.free_raw(raw).unwrap();
        assert!(host.free_raw(raw).is_err(), "double free is refused on the host backend");
    }
}

#[test]
fn owned_states_load_read_counters_and_repool() {
    let backend = Backend::host().unwrap();
    let g = geometry();
    let (kp, kn) = weights();
    let tokens = 256usize;
    let pooled = (tokens / RATIO as usize) as u64;
    let b = seq_blobs(7, tokens, pooled);

    // QSA: load a blob with pooled blocks; the block keys are re-pooled.
    let mut q = backend.qsa_state(&g, &kp, &kn).unwrap();
    assert_eq!(q.kind(), Kind::Qsa);
    assert!(!q.is_borrowed());
    assert_eq!(q.counters().unwrap(), Counters { count: 0, pooled: 0 });
    assert_eq!(q.buffers().unwrap().len(), 2);
    q.load(&b.qsa).unwrap();
    assert_eq!(q.counters().unwrap(), Counters { count: tokens as u64, pooled });
    assert_eq!(&*q.read().unwrap(), &b.qsa[..]);
    let keys = bf16_from_bytes(&q.qsa_block_keys().unwrap());
    let want = qsa_block_pool_host(&g, &b.raw, tokens as u64, &kp, &kn, pooled as u32).unwrap();
    assert_eq!(keys.len(), pooled as usize * HD as usize);
    assert_eq!(keys, want, "re-pooled block keys differ from the CPU reference");
    // Loading twice is refused (only into a fresh state).
    assert!(matches!(q.load(&b.qsa), Err(Error::InvalidArgument(_))));
    q.release().unwrap();

    // DSA and opaque.
    let mut d = backend.dsa_state(&g).unwrap();
    assert_eq!((d.kind(), d.buffers().unwrap().len()), (Kind::Dsa, 3));
    d.load(&b.dsa).unwrap();
    assert_eq!(d.counters().unwrap(), Counters { count: tokens as u64, pooled: 0 });
    assert_eq!(&*d.read().unwrap(), &b.dsa[..]);
    assert!(matches!(d.qsa_block_keys(), Err(Error::InvalidArgument(_))));
    let mut o = backend.opaque_state(8192).unwrap();
    assert_eq!((o.kind(), o.buffers().unwrap().len()), (Kind::Opaque, 1));
    o.load(&b.opaque).unwrap();
    assert_eq!(o.counters().unwrap().count, 4096);
    assert_eq!(&*o.read().unwrap(), &b.opaque[..]);
    // set_counters is checked as a restored header is.
    o.set_counters(100, 0).unwrap();
    assert_eq!(o.counters().unwrap().count, 100);
    assert!(o.set_counters(100, 1).is_err());
    assert!(o.set_counters(9000, 0).is_err());
    assert!(d.set_counters(DSA_CAP as u64 + 1, 0).is_err());

    // Bad inputs.
    assert!(matches!(backend.qsa_state(&g, &kp[..10], &kn), Err(Error::InvalidArgument(_))));
    let no_qsa = Geometry { dsa_index_head_dim: 8, dsa_capacity: 8, ..Geometry::default() };
    assert!(matches!(backend.qsa_state(&no_qsa, &[], &[]), Err(Error::InvalidArgument(_))));
    assert!(matches!(backend.dsa_state(&Geometry::default()), Err(Error::InvalidArgument(_))));
    let mut short = backend.qsa_state(&g, &kp, &kn).unwrap();
    assert!(matches!(short.load(&b.qsa[..10]), Err(Error::Corruption(_) | Error::InvalidArgument(_))));
    assert_eq!(short.counters().unwrap(), Counters::default());

    // The CPU reference refuses what the kernel would.
    assert!(qsa_block_pool_host(&g, &b.raw, tokens as u64, &kp, &kn, pooled as u32 + 1).is_err());
    assert!(matches!(
        qsa_block_pool_host(&g, &b.raw[..10], tokens as u64, &kp, &kn, 1),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(qsa_block_pool_host(&g, &b.raw, tokens as u64, &kp, &kn, 0), Err(Error::InvalidArgument(_))));
}

#[test]
fn borrowed_states_over_engine_buffers() {
    let backend = Backend::host().unwrap();
    let other = Backend::host().unwrap();
    let g = geometry();
    let stream = backend.create_stream().unwrap();
    let (kp, kn) = weights();
    let raw_bytes = (MAX_TOKENS * HD * 2) as usize;
    let block_bytes = (MAX_TOKENS / RATIO * HD * 2) as usize;
    let mut raw = backend.alloc(raw_bytes).unwrap();
    let mut blocks = backend.alloc(block_bytes).unwrap();
    let mut wk = backend.alloc(HD as usize * 2).unwrap();
    let mut wn = backend.alloc(HD as usize * 2).unwrap();
    wk.write(0, &bf16_to_bytes(&kp), &stream).unwrap();
    wn.write(0, &bf16_to_bytes(&kn), &stream).unwrap();

    // The engine's ingest wrote 128 tokens.
    let tokens = 128usize;
    let b = seq_blobs(8, tokens, 0);
    raw.write(0, &b.qsa[16..], &stream).unwrap();
    {
        let q = backend
            .borrow_qsa_state(
                &g,
                QsaBuffers { raw_keys: &mut raw, block_keys: &mut blocks, k_pool_k: &wk, k_norm_w: &wn },
                tokens as u64,
                0,
            )
            .unwrap();
        assert!(q.is_borrowed());
        assert_eq!(q.counters().unwrap(), Counters { count: tokens as u64, pooled: 0 });
        assert_eq!(&*q.read().unwrap(), &b.qsa[..], "a snapshot of a borrowed state takes the engine's bytes");
        // The state's buffers are the engine's.
        let addrs = q.buffers().unwrap();
        assert_eq!(addrs.len(), 2);
        drop(q); // frees the handle only
    }
    // Still the engine's: readable, writable.
    assert_eq!(raw.read_vec(0, 16, &stream).unwrap(), b.qsa[16..32].to_vec());

    // Two layers' states share the weights.
    let mut raw2 = backend.alloc(raw_bytes).unwrap();
    let mut blocks2 = backend.alloc(block_bytes).unwrap();
    {
        let mut q1 = backend
            .borrow_qsa_state(
                &g,
                QsaBuffers { raw_keys: &mut raw, block_keys: &mut blocks, k_pool_k: &wk, k_norm_w: &wn },
                0,
                0,
            )
            .unwrap();
        let q2 = backend
            .borrow_qsa_state(
                &g,
                QsaBuffers { raw_keys: &mut raw2, block_keys: &mut blocks2, k_pool_k: &wk, k_norm_w: &wn },
                0,
                0,
            )
            .unwrap();
        // A fresh borrowed state loads (and re-pools) like an owned one.
        let pooled = (tokens / RATIO as usize) as u64;
        let bp = qsa_blob(tokens as u64, pooled, &b.raw);
        q1.load(&bp).unwrap();
        let want = qsa_block_pool_host(&g, &b.raw, tokens as u64, &kp, &kn, pooled as u32).unwrap();
        assert_eq!(bf16_from_bytes(&q1.qsa_block_keys().unwrap()), want);
        assert_eq!(q2.counters().unwrap().count, 0);
    }
    let want = qsa_block_pool_host(&g, &b.raw, tokens as u64, &kp, &kn, (tokens / RATIO as usize) as u32).unwrap();
    assert_eq!(
        bf16_from_bytes(&blocks.read_vec(0, want.len() * 2, &stream).unwrap()),
        want,
        "the re-pool wrote the engine's block keys"
    );

    // DSA and opaque.
    let row = DSA_DIM as usize * 2;
    let mut kb = backend.alloc(DSA_CAP as usize * row).unwrap();
    let mut gb = backend.alloc(DSA_CAP as usize * row).unwrap();
    let mut vb = backend.alloc(DSA_CAP as usize).unwrap();
    let off_g = 16 + tokens * row;
    kb.write(0, &b.dsa[16..off_g], &stream).unwrap();
    gb.write(0, &b.dsa[off_g..off_g + tokens * row], &stream).unwrap();
    vb.write(0, &b.dsa[off_g + tokens * row..], &stream).unwrap();
    {
        let mut d = backend
            .borrow_dsa_state(
                &g,
                DsaBuffers { capacity_rows: DSA_CAP as u64, k_normed: &mut kb, gate: &mut gb, valid: &mut vb },
                tokens as u64,
            )
            .unwrap();
        assert_eq!(&*d.read().unwrap(), &b.dsa[..]);
        d.set_counters(10, 0).unwrap();
        assert_eq!(d.read().unwrap().len(), 16 + 10 * (4 * DSA_DIM as usize + 1));
    }
    let mut ob = backend.alloc(8192).unwrap();
    ob.write(0, &b.opaque, &stream).unwrap();
    {
        let o = backend.borrow_opaque_state(&mut ob, 4096).unwrap();
        assert_eq!(&*o.read().unwrap(), &b.opaque[..]);
    }

    // Refused: a buffer of another backend, a too-small buffer, too many rows.
    let mut foreign = other.alloc(8192).unwrap();
    let e = backend.borrow_opaque_state(&mut foreign, 0).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)) && e.message().contains("another backend"), "{e}");
    let mut tiny = backend.alloc(16).unwrap();
    let e = backend
        .borrow_qsa_state(
            &g,
            QsaBuffers { raw_keys: &mut tiny, block_keys: &mut blocks, k_pool_k: &wk, k_norm_w: &wn },
            0,
            0,
        )
        .unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)) && e.message().starts_with("auxstore_qsa_state_borrow: "), "{e}");
    assert!(backend
        .borrow_dsa_state(
            &g,
            DsaBuffers { capacity_rows: DSA_CAP as u64 + 1, k_normed: &mut kb, gate: &mut gb, valid: &mut vb },
            0
        )
        .is_err());
    assert!(backend.borrow_opaque_state(&mut ob, 9000).is_err());

    // The unsafe raw path, as an engine with cudaMalloc'd memory uses it.
    let st = unsafe { backend.borrow_opaque_state_raw(ob.ptr(), ob.len() as u64, 4096) }.unwrap();
    assert!(st.is_borrowed());
    assert_eq!(&*st.read().unwrap(), &b.opaque[..]);
    drop(st);
    let raw_q = sys::auxstore_qsa_buffers_t {
        raw_keys: raw.ptr(),
        raw_keys_bytes: raw_bytes as u64,
        block_keys: blocks.ptr(),
        block_keys_bytes: block_bytes as u64,
        k_pool_k: wk.ptr(),
        k_norm_w: wn.ptr(),
    };
    let q = unsafe { backend.borrow_qsa_state_raw(&g, &raw_q, 0, 0) }.unwrap();
    assert_eq!(q.counters().unwrap(), Counters::default());
    drop(q);
    let raw_d = sys::auxstore_dsa_buffers_t {
        capacity_rows: DSA_CAP as u64,
        k_normed: kb.ptr(),
        k_normed_bytes: kb.len() as u64,
        gate: gb.ptr(),
        gate_bytes: gb.len() as u64,
        valid: vb.ptr(),
        valid_bytes: vb.len() as u64,
    };
    let d = unsafe { backend.borrow_dsa_state_raw(&g, &raw_d, 5) }.unwrap();
    assert_eq!(d.counters().unwrap().count, 5);
}
