//! Paged storage through the safe crate: chained puts (`put_snapshot_with`)
//! share the pages of one growing sequence, `Stats::unique_bytes` counts
//! them once, a bad chain is refused before anything is written, and
//! `NamespaceSpec::page_tokens` is part of the namespace id.
mod common;
use auxstore::*;
use common::*;

/// The QSA layer of the first `n` tokens of one sequence: the rows of a
/// shorter snapshot are the first rows of a longer one.
fn qsa_of(raw: &[u16], n: usize) -> Vec<u8> {
    qsa_blob(n as u64, (n / RATIO as usize) as u64, &raw[..n * HD as usize])
}

const ROW: u64 = HD as u64 * 2; // one QSA row: qsa_hd bf16

#[test]
fn chained_puts_of_a_growing_sequence_share_pages() {
    let dir = TempDir::new("paged");
    let store = open_store(&dir);
    let ns = store.register_namespace("m", &geometry()).unwrap();
    let toks = tokens(1, 128);
    let chain = prefix_hashes(&toks, BLOCK, SALT).unwrap();
    assert_eq!(chain.len(), 8);
    let raw = Rng::new(7).bf16s(128 * HD as usize);
    let (a, b) = (qsa_of(&raw, 64), qsa_of(&raw, 128));
    assert_eq!(&a[16..], &b[16..16 + 64 * ROW as usize], "the 128-token rows start with the 64");

    store
        .put_snapshot_with(
            ns,
            &chain[3],
            64,
            &[Layer::new(0, Kind::Qsa, &a)],
            &PutOptions::new().block_chain(&chain[..4], BLOCK),
        )
        .unwrap();
    let after_first = store.stats().unwrap();
    assert_eq!(after_first.unique_bytes, 64 * ROW, "{after_first:?}");
    let digest = token_digest(&toks, SALT).unwrap();
    let opts = PutOptions::new().token_digest(digest).block_chain(&chain, BLOCK);
    assert_eq!(opts, PutOptions { token_digest: Some(digest), block_chain: &chain, block_size: BLOCK });
    store.put_snapshot_with(ns, &chain[7], 128, &[Layer::new(0, Kind::Qsa, &b)], &opts).unwrap();

    // Every byte reads back, whole and into caller memory.
    assert_eq!(&*store.get_layer(ns, &chain[3], 0).unwrap(), &a[..]);
    assert_eq!(&*store.get_layer(ns, &chain[7], 0).unwrap(), &b[..]);
    let mut buf = vec![0u8; b.len()];
    let mut dests = [LayerDest::new(0, &mut buf)];
    store.read_layers(ns, &chain[7], &mut dests).unwrap();
    assert_eq!(dests[0].bytes(), &b[..]);

    let s = store.stats().unwrap();
    assert_eq!((s.snapshots, s.puts), (2, 2), "{s:?}");
    assert_eq!(s.payload_bytes, (a.len() + b.len()) as u64, "each snapshot in full: {s:?}");
    assert_eq!(s.unique_bytes, 128 * ROW, "each row stored once: {s:?}");
    assert!(s.unique_bytes < s.payload_bytes, "{s:?}");
    assert_eq!(s.bytes_written, 128 * ROW, "the second put wrote only its new rows: {s:?}");

    // The digest went into the manifest: the token lookup checks it.
    let m = store.longest_prefix_for_tokens(ns, &toks, BLOCK, SALT).unwrap().unwrap();
    assert_eq!(m, PrefixMatch { prefix: chain[7], tokens: 128 });
    let manifest = store.get_manifest(ns, &chain[7]).unwrap();
    assert_eq!(manifest.layers[0].bytes, b.len() as u64);

    // The same layer put whole (no options) shares nothing.
    let other = prefix_of(9, 128);
    store.put_snapshot_with(ns, &other, 128, &[Layer::new(0, Kind::Qsa, &b)], &PutOptions::default()).unwrap();
    assert_eq!(&*store.get_layer(ns, &other, 0).unwrap(), &b[..]);
    let s2 = store.stats().unwrap();
    assert_eq!(s2.payload_bytes, s.payload_bytes + b.len() as u64, "{s2:?}");
    assert_eq!(s2.unique_bytes, s.unique_bytes + 128 * ROW, "{s2:?}");

    // Erasing the first snapshot keeps the pages the second still uses.
    store.erase(ns, &chain[3]).unwrap();
    assert_eq!(&*store.get_layer(ns, &chain[7], 0).unwrap(), &b[..]);
}

#[test]
fn a_bad_chain_is_refused_and_changes_nothing() {
    let dir = TempDir::new("badchain");
    let store = open_store(&dir);
    let ns = store.register_namespace("m", &geometry()).unwrap();
    let toks = tokens(2, 128);
    let chain = prefix_hashes(&toks, BLOCK, SALT).unwrap();
    let raw = Rng::new(8).bf16s(128 * HD as usize);
    let a = qsa_of(&raw, 64);
    let layers = [Layer::new(0, Kind::Qsa, &a)];
    let before = store.stats().unwrap();

    // A chain without a block size.
    let o = PutOptions { block_chain: &chain[..4], ..PutOptions::default() };
    let e = store.put_snapshot_with(ns, &chain[3], 64, &layers, &o).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
    assert!(e.message().contains("auxstore_put_snapshot_ex") && e.message().contains("block size"), "{e}");

    // A chain longer than the snapshot's tokens (8 blocks of 16 > 64 tokens).
    let e =
        store.put_snapshot_with(ns, &chain[3], 64, &layers, &PutOptions::new().block_chain(&chain, BLOCK)).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
    assert!(e.message().contains("the block chain has 8 blocks of 16 tokens"), "{e}");

    let after = store.stats().unwrap();
    assert_eq!((after.puts, after.snapshots, after.unique_bytes), (before.puts, 0, 0), "{after:?}");
    assert_eq!(store.get_manifests(ns, &[chain[3]]).unwrap(), vec![None]);

    // The chain's right length is fine.
    store.put_snapshot_with(ns, &chain[3], 64, &layers, &PutOptions::new().block_chain(&chain[..4], BLOCK)).unwrap();
    assert_eq!(store.stats().unwrap().puts, before.puts + 1);
}

#[test]
fn page_tokens_is_part_of_the_namespace_id() {
    let dir = TempDir::new("pagetokens");
    let store = open_store(&dir);
    let base = NamespaceSpec::new("m", geometry());
    assert_eq!(base.page_tokens, 0);
    let plain = store.register_namespace_ex(&base).unwrap();
    assert_eq!(plain, store.register_namespace("m", &geometry()).unwrap(), "0 is the short form's");
    let mut spec = base.clone();
    spec.page_tokens = 32;
    let p32 = store.register_namespace_ex(&spec).unwrap();
    assert_ne!(p32, plain);
    assert_eq!(store.register_namespace_ex(&spec).unwrap(), p32, "idempotent");
    spec.page_tokens = 64;
    assert_ne!(store.register_namespace_ex(&spec).unwrap(), p32);

    // Pages of 32 tokens from chains of 16-token blocks.
    let toks = tokens(3, 128);
    let chain = prefix_hashes(&toks, BLOCK, SALT).unwrap();
    let raw = Rng::new(9).bf16s(128 * HD as usize);
    let (a, b) = (qsa_of(&raw, 64), qsa_of(&raw, 128));
    store
        .put_snapshot_with(
            p32,
            &chain[3],
            64,
            &[Layer::new(0, Kind::Qsa, &a)],
            &PutOptions::new().block_chain(&chain[..4], BLOCK),
        )
        .unwrap();
    store
        .put_snapshot_with(
            p32,
            &chain[7],
            128,
            &[Layer::new(0, Kind::Qsa, &b)],
            &PutOptions::new().block_chain(&chain, BLOCK),
        )
        .unwrap();
    assert_eq!(&*store.get_layer(p32, &chain[3], 0).unwrap(), &a[..]);
    assert_eq!(&*store.get_layer(p32, &chain[7], 0).unwrap(), &b[..]);
    assert_eq!(store.stats().unwrap().unique_bytes, 128 * ROW);
    // Another namespace never sees them.
    assert_eq!(store.get_manifests(plain, &[chain[3], chain[7]]).unwrap(), vec![None, None]);

    // A page that is not a whole number of the put's blocks is refused.
    spec.page_tokens = 24;
    let p24 = store.register_namespace_ex(&spec).unwrap();
    let e = store
        .put_snapshot_with(
            p24,
            &chain[3],
            64,
            &[Layer::new(0, Kind::Qsa, &a)],
            &PutOptions::new().block_chain(&chain[..4], BLOCK),
        )
        .unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)) && e.message().contains("not a whole number"), "{e}");
}

/// Paged puts straight from registered host memory (`put_from_host_with`):
/// the two snapshots of one growing sequence share their pages exactly as
/// `put_snapshot_with` makes them, every byte reads back, and options that
/// are not one per snapshot, or a bad chain, are refused writing nothing.
#[test]
fn paged_puts_from_registered_memory_share_pages() {
    let dir = TempDir::new("paged-host");
    let store = open_store(&dir);
    let ns = store.register_namespace("m", &geometry()).unwrap();
    let toks = tokens(2, 128);
    let chain = prefix_hashes(&toks, BLOCK, SALT).unwrap();
    let raw = Rng::new(8).bf16s(128 * HD as usize);
    let (a, b) = (qsa_of(&raw, 64), qsa_of(&raw, 128));
    let mut memory = a.clone();
    memory.extend_from_slice(&b);
    let layers = [
        [HostLayer { layer: 0, kind: Kind::Qsa, offset: 0, size: a.len() }],
        [HostLayer { layer: 0, kind: Kind::Qsa, offset: a.len(), size: b.len() }],
    ];
    let snaps = [
        HostSnapshot { ns, prefix: chain[3], token_count: 64, layers: &layers[0] },
        HostSnapshot { ns, prefix: chain[7], token_count: 128, layers: &layers[1] },
    ];
    let mut buffer = store.register_host_buffer(&mut memory).unwrap();
    let one = [PutOptions::new().block_chain(&chain[..4], BLOCK)];
    let e = store.put_from_host_with(&mut buffer, &snaps, &one).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)) && e.message().contains("1 options for 2 snapshots"), "{e}");
    // The puts run at once, so the second may find no page of the first yet:
    // one after the other, as an engine snapshots a growing sequence.
    let opts = [PutOptions::new().block_chain(&chain[..4], BLOCK), PutOptions::new().block_chain(&chain, BLOCK)];
    for i in 0..2 {
        let put = store.put_from_host_with(&mut buffer, &snaps[i..i + 1], &opts[i..i + 1]).unwrap();
        put.wait().unwrap();
    }
    let before = store.stats().unwrap();
    {
        // A bad chain is checked when its put runs: that snapshot's own
        // error; the other (already stored) is OK without a write.
        let bad = [PutOptions::new().block_chain(&chain[..4], BLOCK), PutOptions::new().block_chain(&chain, 0)];
        let put = store.put_from_host_with(&mut buffer, &snaps, &bad).unwrap();
        assert!(matches!(put.wait_target(1), Err(Error::InvalidArgument(_))));
        put.wait_target(0).unwrap();
    }
    drop(buffer);
    assert_eq!(&*store.get_layer(ns, &chain[3], 0).unwrap(), &a[..]);
    assert_eq!(&*store.get_layer(ns, &chain[7], 0).unwrap(), &b[..]);
    let s = store.stats().unwrap();
    assert_eq!(s.payload_bytes, (a.len() + b.len()) as u64, "{s:?}");
    assert_eq!(s.unique_bytes, 128 * ROW, "each row stored once: {s:?}");
    assert_eq!((s.snapshots, s.bytes_written), (2, before.bytes_written), "the refused put wrote nothing: {s:?}");
}
