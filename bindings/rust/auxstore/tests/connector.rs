//! The connector's batched calls through the safe crate: the consecutive-hit
//! count over prefixes (early exit on a first-key miss) and over a chain's
//! pages, the batched lookup + lease and its release.
mod common;
use auxstore::*;
use common::*;

fn qsa_of(raw: &[u16], n: usize) -> Vec<u8> {
    qsa_blob(n as u64, (n / RATIO as usize) as u64, &raw[..n * HD as usize])
}

fn put_pages(store: &Store, ns: Namespace, chain: &[Prefix], raw: &[u16]) {
    let blocks = chain.len();
    let blob = qsa_of(raw, blocks * BLOCK as usize);
    let opts = PutOptions::new().block_chain(chain, BLOCK);
    store
        .put_snapshot_with(
            ns,
            &chain[blocks - 1],
            (blocks * BLOCK as usize) as u64,
            &[Layer::new(0, Kind::Qsa, &blob)],
            &opts,
        )
        .unwrap();
}

#[test]
fn count_leading_stored_stops_at_the_first_miss() {
    let dir = TempDir::new("conn-count");
    let store = open_store(&dir);
    let ns = store.register_namespace("m", &geometry()).unwrap();
    let ps: Vec<Prefix> = (0..6).map(|i| prefix_of(i, 16)).collect();
    for p in &ps[..5] {
        store.put_snapshot(ns, p, 16, &[Layer::new(2, Kind::Opaque, &p.0)]).unwrap();
    }
    assert_eq!(store.count_leading_stored(ns, &ps[..5]).unwrap(), 5);
    assert_eq!(store.count_leading_stored(ns, &ps).unwrap(), 5);
    assert_eq!(store.count_leading_stored(ns, &[ps[0], ps[5], ps[1]]).unwrap(), 1);
    assert_eq!(store.count_leading_stored(ns, &ps[5..]).unwrap(), 0);
    assert_eq!(store.count_leading_stored(ns, &[]).unwrap(), 0);
    let s = store.stats().unwrap();
    assert_eq!((s.hits, s.misses), (0, 0), "exists counts no hit: {s:?}");
}

#[test]
fn count_leading_pages_of_a_chain() {
    let dir = TempDir::new("conn-pages");
    let store = open_store(&dir);
    let ns = store.register_namespace("m", &geometry()).unwrap();
    let toks = tokens(3, 4 * BLOCK as usize);
    let chain = prefix_hashes(&toks, BLOCK, SALT).unwrap();
    let mut other = toks.clone();
    other[2 * BLOCK as usize] ^= 1; // the same first two blocks
    let other_chain = prefix_hashes(&other, BLOCK, SALT).unwrap();
    let raw = Rng::new(5).bf16s(4 * BLOCK as usize * HD as usize);

    assert_eq!(store.count_leading_pages(ns, &chain, BLOCK).unwrap(), ChainPages { pages: 0, page_tokens: BLOCK });
    put_pages(&store, ns, &chain[..3], &raw);
    assert_eq!(store.count_leading_pages(ns, &chain, BLOCK).unwrap().pages, 3);
    assert_eq!(store.count_leading_pages(ns, &other_chain, BLOCK).unwrap().pages, 2);
    // The pages of the 2-block prefix are stored; no snapshot of it is.
    assert_eq!(store.count_leading_stored(ns, &chain[1..2]).unwrap(), 0);
    assert!(matches!(store.count_leading_pages(ns, &chain, 0), Err(Error::InvalidArgument(_))));
    assert!(matches!(store.count_leading_pages(Namespace(ns.0 ^ 1), &chain, BLOCK), Err(Error::NotFound(_))));
}

#[test]
fn lookup_leased_leases_every_hit_until_dropped() {
    let dir = TempDir::new("conn-lease");
    let store = open_store(&dir);
    let ns = store.register_namespace("m", &geometry()).unwrap();
    let ps: Vec<Prefix> = (0..4).map(|i| prefix_of(10 + i, 16)).collect();
    for p in [&ps[0], &ps[2], &ps[3]] {
        store.put_snapshot(ns, p, 16, &[Layer::new(2, Kind::Opaque, &p.0)]).unwrap();
    }
    let leases = store.lookup_leased(ns, &ps, 60_000).unwrap();
    assert_eq!(leases.leading(), 1);
    let ids = leases.ids().to_vec();
    assert!(ids[0] != 0 && ids[1] == 0 && ids[2] != 0 && ids[3] != 0, "{ids:?}");
    let s = store.stats().unwrap();
    assert_eq!((s.leases, s.hits, s.misses), (3, 3, 1), "{s:?}");
    drop(leases);
    assert_eq!(store.stats().unwrap().leases, 0, "dropped: released");

    let leases = store.lookup_leased(ns, &ps[2..], 60_000).unwrap();
    assert_eq!(leases.leading(), 2);
    assert_eq!(leases.release().unwrap(), 2);
    assert_eq!(store.release_leases(&ids).unwrap(), 0, "already released: skipped");
    let kept = store.lookup_leased(ns, &ps[..1], 60_000).unwrap().into_ids();
    assert_eq!(store.stats().unwrap().leases, 1, "into_ids keeps the lease");
    assert_eq!(store.release_leases(&kept).unwrap(), 1);
    assert!(matches!(store.lookup_leased(ns, &ps, 0), Err(Error::InvalidArgument(_))));
}

#[test]
fn read_layer_rows_of_whole_and_paged_layers() {
    let dir = TempDir::new("conn-rows");
    let store = open_store(&dir);
    let ns = store.register_namespace("m", &geometry()).unwrap();
    let toks = tokens(4, 4 * BLOCK as usize);
    let chain = prefix_hashes(&toks, BLOCK, SALT).unwrap();
    let raw = Rng::new(6).bf16s(4 * BLOCK as usize * HD as usize);
    put_pages(&store, ns, &chain, &raw); // QSA, 64 rows in pages of 16
    let whole = prefix_of(44, 64);
    let blob = qsa_of(&raw, 64);
    store.put_snapshot(ns, &whole, 64, &[Layer::new(0, Kind::Qsa, &blob)]).unwrap();
    let hd = HD as usize;
    for p in [&chain[3], &whole] {
        for (first, last) in [(0u64, 64u64), (16, 64), (5, 37), (63, 64), (9, 9)] {
            // QSA rows are raw keys, qsa_hd bf16 each: read them as u16.
            let mut got = vec![0u16; (last - first) as usize * hd];
            let (bytes, rows) = store.read_layer_rows(ns, p, 0, first..last, &mut got).unwrap();
            assert_eq!((bytes, rows), ((last - first) as usize * hd * 2, 64));
            assert_eq!(got, raw[first as usize * hd..last as usize * hd], "rows {first}..{last}");
        }
    }
    let mut small = vec![0u16; hd - 1];
    assert!(matches!(store.read_layer_rows(ns, &whole, 0, 0..1, &mut small), Err(Error::OutOfRange(_))));
    assert!(matches!(store.read_layer_rows(ns, &whole, 0, 0..65, &mut small), Err(Error::OutOfRange(_))));
}
