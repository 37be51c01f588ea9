//! Leases: acquire / release / drop / expiry, leased lookups, a lease pinning
//! a snapshot against eviction, erase of a leased snapshot.
mod common;
use auxstore::*;
use common::*;

#[test]
fn acquire_release_drop_expire() {
    let dir = TempDir::new("lease");
    let store = open_store(&dir);
    let ns = store.register_namespace("m", &geometry()).unwrap();
    let p = prefix_of(1, 32);
    store.put_snapshot(ns, &p, 32, &[Layer::new(2, Kind::Opaque, &[1; 64])]).unwrap();
    assert!(matches!(store.lease(ns, &prefix_of(2, 32), 1000), Err(Error::NotFound(_))));

    let a = store.lease(ns, &p, 60_000).unwrap();
    let b = store.lease(ns, &p, 60_000).unwrap();
    assert_ne!(a.id(), 0);
    assert_ne!(a.id(), b.id());
    assert_eq!(store.stats().unwrap().leases, 2);
    a.release().unwrap();
    drop(b); // released by Drop
    assert_eq!(store.stats().unwrap().leases, 0);

    let id = store.lease(ns, &p, 60_000).unwrap().into_id();
    assert_eq!(store.stats().unwrap().leases, 1);
    store.release_lease(id).unwrap();
    assert!(matches!(store.release_lease(id), Err(Error::NotFound(_))), "released twice");

    // A lease expires on its own: wait for the store to say so (no timing
    // assumption: poll the live count), then releasing it is NotFound as
    // c.h promises.
    let short = store.lease(ns, &p, 1).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while store.stats().unwrap().leases != 0 {
        assert!(std::time::Instant::now() < deadline, "a 1 ms lease still live after 60 s");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let e = short.release().unwrap_err();
    assert!(matches!(e, Error::NotFound(_)) && e.message().starts_with("auxstore_lease_release: "), "{e}");
    let id = store.lease(ns, &p, 60_000).unwrap().into_id();
    let e = store.release_lease(id + 1000).unwrap_err();
    assert!(matches!(e, Error::NotFound(_)) && e.message().starts_with("auxstore_lease_release: "), "{e}");
    store.release_lease(id).unwrap();
}

#[test]
fn leased_lookups() {
    let dir = TempDir::new("lease-lookup");
    let store = open_store(&dir);
    let ns = store.register_namespace("m", &geometry()).unwrap();
    let toks = tokens(3, 128);
    let hashes = prefix_hashes(&toks, BLOCK, SALT).unwrap();
    store.put_snapshot(ns, &hashes[3], 64, &[Layer::new(2, Kind::Opaque, &[1; 64])]).unwrap();
    let (i, lease) = store.longest_prefix_leased(ns, &hashes, 60_000).unwrap().unwrap();
    assert_eq!(i, 3);
    assert_eq!(store.stats().unwrap().leases, 1);
    drop(lease);
    let (m, lease) = store.longest_prefix_for_tokens_leased(ns, &toks, BLOCK, SALT, 60_000).unwrap().unwrap();
    assert_eq!((m.prefix, m.tokens), (hashes[3], 64));
    assert_eq!(lease.store().stats().unwrap().leases, 1);
    lease.release().unwrap();
    assert!(store.longest_prefix_leased(ns, &hashes[..3], 60_000).unwrap().is_none());
    assert!(store.longest_prefix_for_tokens_leased(ns, &toks[..32], BLOCK, SALT, 60_000).unwrap().is_none());
    assert_eq!(store.stats().unwrap().leases, 0);
    // lease_ms 0 is refused by the leased lookups.
    assert!(matches!(store.longest_prefix_leased(ns, &hashes, 0), Err(Error::InvalidArgument(_))));
}

#[test]
fn a_lease_pins_a_snapshot_against_eviction_but_not_erase() {
    let dir = TempDir::new("lease-evict");
    let mut o = Options::new();
    o.chunk_bytes(64 * 1024).unwrap().capacity_bytes(1300 * 1024).unwrap();
    let store = Store::open(dir.join("store"), &o).unwrap();
    let ns = store.register_namespace("m", &geometry()).unwrap();
    let big = vec![7u8; 600 * 1024];
    let pinned = prefix_of(10, 16);
    store.put_snapshot(ns, &pinned, 16, &[Layer::new(9, Kind::Opaque, &big)]).unwrap();
    let lease = store.lease(ns, &pinned, 60_000).unwrap();
    for k in 0..3 {
        store.put_snapshot(ns, &prefix_of(20 + k, 16), 16, &[Layer::new(9, Kind::Opaque, &big)]).unwrap();
    }
    wait_until("an eviction over budget", || store.stats().unwrap().evictions >= 1);
    assert_eq!(store.get_manifests(ns, &[pinned]).unwrap(), vec![Some(16)], "leased: never the victim");
    drop(lease);
    // Unpinned, it is evictable like any other.
    let before = store.stats().unwrap().evictions;
    for k in 0..3 {
        store.put_snapshot(ns, &prefix_of(30 + k, 16), 16, &[Layer::new(9, Kind::Opaque, &big)]).unwrap();
    }
    wait_until("more evictions", || store.stats().unwrap().evictions > before);
    wait_until("the unpinned snapshot evicted", || store.get_manifests(ns, &[pinned]).unwrap() == vec![None]);

    // An explicit erase still removes a leased snapshot.
    let p = prefix_of(40, 16);
    store.put_snapshot(ns, &p, 16, &[Layer::new(2, Kind::Opaque, &[1; 10])]).unwrap();
    let l = store.lease(ns, &p, 60_000).unwrap();
    store.erase(ns, &p).unwrap();
    assert_eq!(store.get_manifests(ns, &[p]).unwrap(), vec![None]);
    drop(l);
}
