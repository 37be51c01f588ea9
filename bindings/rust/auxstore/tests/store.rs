//! The store wrappers: options (log hook included), namespaces with their
//! whole identity, snapshots, manifests, reads, lookups, erase, stats,
//! flush, metrics.
mod common;
use auxstore::*;
use common::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

#[test]
fn options_and_log_callback() {
    let dir = TempDir::new("opts");
    let records: Arc<Mutex<Vec<(LogLevel, String, String)>>> = Arc::default();
    let sink = records.clone();
    let mut o = Options::new();
    o.capacity_bytes(64 << 20)
        .unwrap()
        .ttl_seconds(3600)
        .unwrap()
        .chunk_bytes(32 << 10)
        .unwrap()
        .durability(Durability::Async)
        .unwrap()
        .create_if_missing(true)
        .unwrap()
        .read_lanes(3)
        .unwrap()
        .shared_local_copies(false)
        .unwrap()
        .log_callback(LogLevel::Debug, move |lvl, src, msg| sink.lock().unwrap().push((lvl, src.into(), msg.into())))
        .unwrap();
    let err = Options::new().read_lanes(65).err().expect("65 read lanes are refused");
    assert!(err.to_string().contains("read lanes is 65, at most 64"), "{err}");
    let store = Store::open(dir.join("s"), &o).unwrap();
    drop(o); // the store keeps the hook alive
    let ns = store.register_namespace("m", &geometry()).unwrap();
    let b = seq_blobs(1, 48, 0);
    store.put_snapshot(ns, &prefix_of(1, 48), 48, &b.layers()).unwrap();
    store.flush().unwrap(); // async durability: flush makes it durable
    let s = store.stats().unwrap();
    assert_eq!(s.capacity_bytes, 64 << 20);
    assert_eq!((s.snapshots, s.puts), (1, 1));
    assert!(s.durable_watermark >= 1 && s.commit_seq >= 1, "{s:?}");
    store.close();
    let recs = records.lock().unwrap();
    assert!(!recs.is_empty(), "no log records at DEBUG");
    assert!(recs.iter().any(|(_, src, _)| src == "rocksdb"), "no rocksdb records");
    // (c.h says `message` is one line; RocksDB's option dumps at open arrive
    // as one record with embedded newlines, so that is not asserted.)
    for (_, src, m) in recs.iter() {
        assert!((src == "rocksdb" || src == "auxstore") && !m.is_empty(), "{src}: {m:?}");
    }

    // min_level filters.
    let count = Arc::new(AtomicUsize::new(0));
    let c = count.clone();
    let mut o = Options::new();
    o.log_callback(LogLevel::Error, move |lvl, _, _| {
        assert!(lvl >= LogLevel::Error);
        c.fetch_add(1, Ordering::Relaxed);
    })
    .unwrap();
    Store::open(dir.join("s"), &o).unwrap().close();
    assert_eq!(count.load(Ordering::Relaxed), 0);

    // Back to stderr.
    o.clear_log_callback().unwrap();
    Store::open(dir.join("s"), &o).unwrap().close();
}

#[test]
fn a_panicking_log_callback_is_caught_at_the_boundary() {
    let dir = TempDir::new("logpanic");
    let mut o = Options::new();
    let once = std::sync::atomic::AtomicBool::new(false);
    o.log_callback(LogLevel::Debug, move |_, _, _| {
        if !once.swap(true, Ordering::Relaxed) {
            panic!("the engine's logger failed (a test: caught at the boundary)")
        }
    })
    .unwrap();
    let store = Store::open(dir.join("s"), &o).unwrap();
    let ns = store.register_namespace("m", &geometry()).unwrap();
    store.put_snapshot(ns, &prefix_of(1, 16), 16, &[Layer::new(2, Kind::Opaque, &[7; 100])]).unwrap();
    assert_eq!(store.log_callback_panics(), 1, "the callback never ran");
    assert_eq!(store.get_layer(ns, &prefix_of(1, 16), 2).unwrap().to_vec(), vec![7u8; 100]);
}

#[test]
fn namespaces_carry_the_whole_identity() {
    let dir = TempDir::new("ns");
    let store = open_store(&dir);
    let g = geometry();
    let a = store.register_namespace("model", &g).unwrap();
    assert_eq!(store.register_namespace("model", &g).unwrap(), a, "idempotent");
    assert_eq!(
        store.register_namespace_ex(&NamespaceSpec::new("model", g)).unwrap(),
        a,
        "the short form is the same identity"
    );
    let mut g2 = g;
    g2.qsa_rot = 16;
    assert_ne!(store.register_namespace("model", &g2).unwrap(), a, "geometry is in the id");

    let mut spec = NamespaceSpec::new("model", g);
    spec.weight_revision = Some("rev-7".into());
    let rev7 = store.register_namespace_ex(&spec).unwrap();
    assert_ne!(rev7, a);
    spec.weight_revision = Some("rev-8".into());
    let rev8 = store.register_namespace_ex(&spec).unwrap();
    assert_ne!(rev8, rev7);
    spec.tp_world_size = 2;
    spec.tp_rank = 1;
    let shard1 = store.register_namespace_ex(&spec).unwrap();
    spec.tp_rank = 0;
    let shard0 = store.register_namespace_ex(&spec).unwrap();
    assert_ne!(shard0, shard1);
    spec.opaque_layers = vec![OpaqueLayer { layer: 2, dtype: DType::F32, shape: vec![4, 64] }];
    let declared = store.register_namespace_ex(&spec).unwrap();
    assert_ne!(declared, shard0);
    assert_eq!(store.register_namespace_ex(&spec).unwrap(), declared);
    // dsa_capacity is not part of the id.
    let mut same = spec.clone();
    same.geometry.dsa_capacity = 4096;
    assert_eq!(store.register_namespace_ex(&same).unwrap(), declared);

    // A declared opaque layer must have exactly its size (4 * 64 * 4 bytes).
    let p = prefix_of(9, 16);
    let e = store.put_snapshot(declared, &p, 16, &[Layer::new(2, Kind::Opaque, &[0; 100])]).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_) | Error::Corruption(_)), "{e:?}");
    store.put_snapshot(declared, &p, 16, &[Layer::new(2, Kind::Opaque, &[1; 1024])]).unwrap();
    // Another revision never sees it.
    assert_eq!(store.get_manifests(rev7, &[p]).unwrap(), vec![None]);
    assert_eq!(store.get_manifests(declared, &[p]).unwrap(), vec![Some(16)]);

    // The wrapper refuses bad shapes before C sees them; C refuses the rest.
    spec.opaque_layers = vec![OpaqueLayer { layer: 2, dtype: DType::F32, shape: vec![] }];
    assert!(matches!(store.register_namespace_ex(&spec), Err(Error::InvalidArgument(_))));
    spec.opaque_layers = vec![
        OpaqueLayer { layer: 3, dtype: DType::U8, shape: vec![1] },
        OpaqueLayer { layer: 2, dtype: DType::U8, shape: vec![1] },
    ];
    assert!(matches!(store.register_namespace_ex(&spec), Err(Error::InvalidArgument(_))));
    for dtype in [DType::U8, DType::I8, DType::Bf16, DType::F16, DType::F32, DType::I32, DType::F64, DType::I64] {
        spec.opaque_layers = vec![OpaqueLayer { layer: 5, dtype, shape: vec![2, 3] }];
        store.register_namespace_ex(&spec).unwrap();
    }
}

#[test]
fn snapshots_manifests_reads_lookups_erase_stats_metrics() {
    let dir = TempDir::new("snap");
    let store = open_store(&dir);
    let ns = store.register_namespace("m", &geometry()).unwrap();
    let toks = tokens(1, 256);
    let hashes = prefix_hashes(&toks, BLOCK, SALT).unwrap();
    assert_eq!(hashes.len(), 16);
    assert_eq!(prefix_hashes(&toks[..20], BLOCK, SALT).unwrap(), hashes[..1].to_vec());
    assert_eq!(prefix_hashes(&toks, BLOCK, SALT + 1).unwrap().len(), 16);
    assert_ne!(prefix_hashes(&toks, BLOCK, SALT + 1).unwrap()[0], hashes[0], "the salt seeds the chain");
    assert!(prefix_hashes(&[], BLOCK, SALT).unwrap().is_empty());

    // Snapshots at 64 and 128 tokens; 128 with its token digest.
    let b64 = seq_blobs(1, 64, 0);
    let b128 = seq_blobs(2, 128, 128 / RATIO as u64);
    store.put_snapshot(ns, &hashes[3], 64, &b64.layers()).unwrap();
    let digest = token_digest(&toks[..128], SALT).unwrap();
    assert_eq!(digest, token_digest(&toks[..128], SALT).unwrap());
    assert_ne!(digest, token_digest(&toks[..127], SALT).unwrap());
    store.put_snapshot_with_digest(ns, &hashes[7], 128, &digest, &b128.layers()).unwrap();
    store.put_snapshot(ns, &hashes[7], 128, &b128.layers()).unwrap(); // already stored: a no-op
    let s = store.stats().unwrap();
    assert_eq!((s.snapshots, s.puts, s.duplicate_puts), (2, 2, 1), "{s:?}");
    // No shared tier: its counters say so.
    assert_eq!(store.shared_stats().unwrap(), SharedStats::default());

    // Manifest
    let m = store.get_manifest(ns, &hashes[7]).unwrap();
    assert_eq!(m.token_count, 128);
    let kinds: Vec<(u32, Kind, u64)> = m.layers.iter().map(|l| (l.layer, l.kind, l.bytes)).collect();
    assert_eq!(
        kinds,
        vec![(0, Kind::Qsa, b128.qsa.len() as u64), (1, Kind::Dsa, b128.dsa.len() as u64), (2, Kind::Opaque, 4096)]
    );
    assert!(m.layers.iter().all(|l| l.xxh3 != 0));
    // Batched manifests
    assert_eq!(store.get_manifests(ns, &[hashes[3], hashes[5], hashes[7]]).unwrap(), vec![Some(64), None, Some(128)]);
    assert!(store.get_manifests(ns, &[]).unwrap().is_empty());

    // Whole layers, every byte.
    assert_eq!(&*store.get_layer(ns, &hashes[7], 0).unwrap(), &b128.qsa[..]);
    assert_eq!(&*store.get_layer(ns, &hashes[7], 1).unwrap(), &b128.dsa[..]);
    assert_eq!(&*store.get_layer(ns, &hashes[3], 2).unwrap(), &b64.opaque[..]);
    // Into caller buffers (larger than needed).
    let mut q = vec![0u8; b128.qsa.len() + 100];
    let mut d = vec![0u8; b128.dsa.len()];
    let mut dests = [LayerDest::new(0, &mut q), LayerDest::new(1, &mut d)];
    store.read_layers(ns, &hashes[7], &mut dests).unwrap();
    assert_eq!(dests[0].size, b128.qsa.len());
    assert_eq!(dests[0].bytes(), &b128.qsa[..]);
    assert_eq!(dests[1].bytes(), &b128.dsa[..]);

    // Longest prefix among candidates (shortest first).
    assert_eq!(store.longest_prefix(ns, &hashes).unwrap(), Some(7));
    assert_eq!(store.longest_prefix(ns, &hashes[..7]).unwrap(), Some(3));
    assert_eq!(store.longest_prefix(ns, &hashes[..3]).unwrap(), None);
    assert_eq!(store.longest_prefix(ns, &[]).unwrap(), None);
    // ... and for tokens: the request is longer than any snapshot.
    let m = store.longest_prefix_for_tokens(ns, &toks, BLOCK, SALT).unwrap().unwrap();
    assert_eq!(m, PrefixMatch { prefix: hashes[7], tokens: 128 });
    let m = store.longest_prefix_for_tokens(ns, &toks[..100], BLOCK, SALT).unwrap().unwrap();
    assert_eq!(m, PrefixMatch { prefix: hashes[3], tokens: 64 });
    assert_eq!(store.longest_prefix_for_tokens(ns, &toks[..40], BLOCK, SALT).unwrap(), None);
    assert_eq!(store.longest_prefix_for_tokens(ns, &tokens(5, 256), BLOCK, SALT).unwrap(), None);
    assert!(matches!(store.longest_prefix_for_tokens(ns, &toks, 0, SALT), Err(Error::InvalidArgument(_))));
    // A snapshot stored with the digest of other tokens is never returned
    // for these tokens.
    let wrong = token_digest(&tokens(6, 192), SALT).unwrap();
    store.put_snapshot_with_digest(ns, &hashes[11], 192, &wrong, &[Layer::new(2, Kind::Opaque, &[3; 64])]).unwrap();
    let m = store.longest_prefix_for_tokens(ns, &toks, BLOCK, SALT).unwrap().unwrap();
    assert_eq!(m.tokens, 128, "the digest mismatch at 192 tokens must fall back to 128");

    let before = store.stats().unwrap();
    assert!(before.hits >= 3 && before.misses >= 2, "{before:?}");
    assert!(before.bytes_read > 0 && before.bytes_written > 0 && before.payload_bytes > 0, "{before:?}");

    // Erase (twice: the second is a no-op).
    store.erase(ns, &hashes[7]).unwrap();
    store.erase(ns, &hashes[7]).unwrap();
    assert!(matches!(store.get_manifest(ns, &hashes[7]), Err(Error::NotFound(_))));
    assert_eq!(store.longest_prefix(ns, &hashes[..8]).unwrap(), Some(3));
    store.flush().unwrap();
    assert_eq!(store.stats().unwrap().snapshots, 2);

    // Metrics: Prometheus text with the labels on every sample.
    let text = store.metrics_text(Some("instance=\"rs\"")).unwrap();
    assert!(text.contains("# TYPE auxstore_snapshots gauge"), "{text}");
    assert!(text.contains("auxstore_snapshots{instance=\"rs\"} 2"), "{text}");
    assert!(text.contains("auxstore_puts_total{instance=\"rs\"} 3"), "{text}");
    for line in text.lines().filter(|l| !l.starts_with('#') && !l.is_empty()) {
        assert!(line.starts_with("auxstore_") && line.contains("instance=\"rs\""), "{line}");
    }
    let plain = metrics_text(Some(&store), None, None).unwrap();
    assert!(plain.contains("auxstore_snapshots 2"), "{plain}");
    assert!(matches!(metrics_text(None, None, None), Err(Error::InvalidArgument(_))));
}

#[test]
fn read_only_handles_and_reopen() {
    let dir = TempDir::new("ro");
    let b = seq_blobs(3, 32, 0);
    let p = prefix_of(3, 32);
    {
        let store = open_store(&dir);
        let ns = store.register_namespace("m", &geometry()).unwrap();
        store.put_snapshot(ns, &p, 32, &b.layers()).unwrap();
    }
    let mut o = Options::new();
    o.read_only(true).unwrap();
    let ro = Store::open(dir.join("store"), &o).unwrap();
    let ns = ro.register_namespace("m", &geometry()).unwrap();
    assert_eq!(&*ro.get_layer(ns, &p, 1).unwrap(), &b.dsa[..]);
    assert!(matches!(ro.erase(ns, &p), Err(Error::Unavailable(_))));
    // A read-only handle and a writer may coexist.
    let rw = open_store(&dir);
    assert_eq!(rw.get_manifests(ns, &[p]).unwrap(), vec![Some(32)]);
}

#[test]
fn a_batch_of_puts_gives_each_snapshot_its_own_outcome() {
    let dir = TempDir::new("batch");
    let store = open_store(&dir);
    let ns = store.register_namespace("m", &geometry()).unwrap();
    let pages: Vec<Vec<u8>> = (0..3u8).map(|i| vec![i + 1; 500 + usize::from(i)]).collect();
    let good: Vec<Vec<Layer>> = pages.iter().map(|p| vec![Layer::new(2, Kind::Opaque, p)]).collect();
    let refused = [Layer::new(0, Kind::Qsa, &[9; 10])]; // not a QSA blob
    let chain = prefix_hashes(&tokens(5, 32), BLOCK, SALT).unwrap();
    let chained = PutOptions::new().block_chain(&chain, BLOCK);
    let puts = [
        SnapshotPut { ns, prefix: prefix_of(1, 16), token_count: 16, layers: &good[0], options: None },
        SnapshotPut { ns, prefix: prefix_of(2, 16), token_count: 16, layers: &refused, options: None },
        SnapshotPut { ns, prefix: prefix_of(3, 16), token_count: 16, layers: &good[1], options: None },
        SnapshotPut {
            ns: Namespace(ns.0 + 1),
            prefix: prefix_of(4, 16),
            token_count: 16,
            layers: &good[2],
            options: None,
        },
        SnapshotPut { ns, prefix: *chain.last().unwrap(), token_count: 32, layers: &good[2], options: Some(&chained) },
    ];
    let out = store.put_snapshots(&puts);
    assert_eq!(out.len(), 5);
    assert!(out[0].is_ok() && out[2].is_ok() && out[4].is_ok(), "{out:?}");
    let first = out[1].as_ref().unwrap_err();
    assert!(first.to_string().contains("snapshots[1]"), "{first}");
    assert!(matches!(out[3], Err(Error::NotFound(_))), "{:?}", out[3]);
    assert_eq!(store.get_layer(ns, &prefix_of(3, 16), 2).unwrap().to_vec(), pages[1]);
    assert_eq!(store.get_layer(ns, chain.last().unwrap(), 2).unwrap().to_vec(), pages[2]);
    assert!(store.put_snapshots(&[]).is_empty());
}
