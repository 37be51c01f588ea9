//! Engine host memory as a read target through the safe crate (issue 24):
//! a `&mut [u32]` registered once, layers of many snapshots read into it with
//! one handle, every element checked and nothing outside the targets written;
//! bounds refusals that write nothing; a target's own error beside healthy
//! ones; the buffer readable again once the read is dropped; one prefix in
//! two namespaces never confused; snapshots put from a registered slice.
mod common;
use auxstore::*;
use common::*;

const FILL: u32 = 0xEEEE_EEEE;
const LAYERS: u32 = 3;

fn prefix_of(s: u32) -> Prefix {
    Prefix([s as u8 + 1; 16])
}

/// Layer `l` of snapshot `s`: u32 words (sizes differ, some span chunks).
fn words(s: u32, l: u32) -> Vec<u32> {
    let n = 300 + 97 * s as usize + 20_000 * l as usize;
    (0..n as u32).map(|i| i.wrapping_mul(2_654_435_761) ^ (s << 24) ^ (l << 16)).collect()
}

fn put(store: &Store, ns: Namespace, snapshots: u32) {
    for s in 0..snapshots {
        let layers: Vec<Vec<u8>> = (0..LAYERS).map(|l| bytes_of(&words(s, l)).to_vec()).collect();
        let descs: Vec<Layer> = layers.iter().enumerate().map(|(l, b)| Layer::new(l as u32, Kind::Opaque, b)).collect();
        store.put_snapshot(ns, &prefix_of(s), 64, &descs).unwrap();
    }
}

/// Every layer of `snapshots` packed with a gap of 16 words after each.
fn targets(ns: Namespace, snapshots: u32) -> (Vec<HostTarget>, usize) {
    let (mut out, mut at) = (Vec::new(), 0usize);
    for s in 0..snapshots {
        for l in 0..LAYERS {
            let capacity = words(s, l).len() * 4;
            out.push(HostTarget { ns, prefix: prefix_of(s), layer: l, offset: at, capacity });
            at += capacity + 64;
        }
    }
    (out, at / 4)
}

#[test]
fn many_snapshots_into_a_registered_slice() {
    let dir = TempDir::new("host-reads");
    let store = open_store(&dir);
    let ns = store.register_namespace("host-model", &Geometry::default()).unwrap();
    put(&store, ns, 5);
    let (ts, n_words) = targets(ns, 5);
    let mut memory = vec![FILL; n_words];
    let mut buffer = store.register_host_buffer(&mut memory).unwrap();
    assert_eq!(buffer.size_bytes(), n_words * 4);
    {
        let read = store.read_into_host(&mut buffer, &ts).unwrap();
        assert_eq!(read.len(), ts.len());
        assert_eq!(read.wait_target(4).unwrap(), words(1, 1).len() * 4);
        read.wait_snapshot(ns, &prefix_of(2)).unwrap();
        read.wait().unwrap();
        assert!(read.poll());
        assert!((0..ts.len()).all(|i| read.target_done(i)));
        assert_eq!(read.finished().unwrap(), (0..5).map(|s| (ns, prefix_of(s))).collect::<Vec<_>>());
        assert!(read.finished().unwrap().is_empty());
    }
    let got = buffer.as_slice().unwrap();
    let mut covered = vec![false; n_words];
    for t in &ts {
        let want = words(t.prefix.0[0] as u32 - 1, t.layer);
        let at = t.offset / 4;
        assert_eq!(&got[at..at + want.len()], &want[..]);
        covered[at..at + want.len()].iter_mut().for_each(|c| *c = true);
    }
    assert!(got.iter().zip(&covered).all(|(w, c)| *c || *w == FILL));
    drop(buffer);
    assert_eq!(memory[ts[0].offset / 4], words(0, 0)[0]); // the slice is the caller's again
}

#[test]
fn bounds_refusals_write_nothing_and_errors_stop_no_other_target() {
    let dir = TempDir::new("host-reads-refusals");
    let store = open_store(&dir);
    let ns = store.register_namespace("host-model", &Geometry::default()).unwrap();
    put(&store, ns, 2);
    let mut memory = vec![FILL; 100_000];
    let mut buffer = store.register_host_buffer(&mut memory).unwrap();
    let at = |offset, capacity, s, layer| HostTarget { ns, prefix: prefix_of(s), layer, offset, capacity };
    for (bad, needle) in [
        (at(399_000, 4_000, 1, 0), "targets[1]: ["),
        (at(100, 4_000, 1, 0), "targets[1] overlaps targets[0]"),
        (at(usize::MAX, 4, 1, 0), "targets[1]"),
    ] {
        match store.read_into_host(&mut buffer, &[at(0, 4_000, 0, 0), bad]) {
            Err(Error::InvalidArgument(m)) => assert!(m.contains(needle), "{m}"),
            other => panic!("want InvalidArgument, got {other:?}"),
        }
    }
    assert!(buffer.as_slice().unwrap().iter().all(|w| *w == FILL));

    let ts = [at(0, 200_000, 0, 1), at(200_000, 100_000, 9, 1), at(300_000, 16, 1, 1), at(310_000, 1_600, 1, 0)];
    {
        let read = store.read_into_host(&mut buffer, &ts).unwrap();
        assert!(matches!(read.wait(), Err(Error::NotFound(m)) if m.contains("targets[1]")));
        assert!(matches!(read.wait_target(2), Err(Error::OutOfRange(m)) if m.contains("targets[2]")));
        assert_eq!(read.wait_target(0).unwrap(), words(0, 1).len() * 4);
        assert_eq!(read.wait_target(3).unwrap(), words(1, 0).len() * 4);
    }
    let got = buffer.as_slice().unwrap();
    assert_eq!(&got[..words(0, 1).len()], &words(0, 1)[..]);
    assert!(got[50_000..75_000].iter().all(|w| *w == FILL)); // the missing one wrote nothing
    assert!(got[75_000..75_004].iter().all(|w| *w == FILL)); // nor the one too small
    assert_eq!(&got[77_500..77_500 + words(1, 0).len()], &words(1, 0)[..]);
}

#[test]
fn one_prefix_in_two_namespaces_is_two_snapshots() {
    let dir = TempDir::new("host-reads-two-ns");
    let store = open_store(&dir);
    let ns = store.register_namespace("host-model", &Geometry::default()).unwrap();
    let other = store.register_namespace("host-model-other", &Geometry::default()).unwrap();
    put(&store, ns, 1);
    // `other` holds prefix_of(0) too, with snapshot 1's first layer only.
    let w = words(1, 0);
    store.put_snapshot(other, &prefix_of(0), 64, &[Layer::new(0, Kind::Opaque, bytes_of(&w))]).unwrap();
    let mut memory = vec![FILL; 40_000];
    let mut buffer = store.register_host_buffer(&mut memory).unwrap();
    let t = |ns, layer, offset| HostTarget { ns, prefix: prefix_of(0), layer, offset, capacity: 40_000 };
    // `other`'s missing layer 1 first.
    let ts = [t(other, 1, 0), t(ns, 0, 40_000), t(other, 0, 80_000)];
    {
        let read = store.read_into_host(&mut buffer, &ts).unwrap();
        read.wait_snapshot(ns, &prefix_of(0)).unwrap();
        assert!(
            matches!(read.wait_snapshot(other, &prefix_of(0)), Err(Error::NotFound(m)) if m.contains("targets[0]"))
        );
        assert!(matches!(read.wait_snapshot(Namespace(ns.0 ^ other.0), &prefix_of(0)), Err(Error::InvalidArgument(_))));
        assert_eq!(read.finished().unwrap(), vec![(other, prefix_of(0)), (ns, prefix_of(0))]);
    }
    let got = buffer.as_slice().unwrap();
    assert_eq!(&got[10_000..10_000 + words(0, 0).len()], &words(0, 0)[..]);
    assert_eq!(&got[20_000..20_000 + w.len()], &w[..]);
    assert!(got[..10_000].iter().all(|x| *x == FILL));
}

#[test]
fn snapshots_put_from_a_registered_slice_read_back_byte_for_byte() {
    let dir = TempDir::new("host-puts");
    let store = open_store(&dir);
    let ns = store.register_namespace("host-model", &Geometry::default()).unwrap();
    // Four snapshots x LAYERS layers packed in one slice, odd offsets between.
    let mut memory: Vec<u32> = Vec::new();
    let mut layers: Vec<Vec<HostLayer>> = Vec::new();
    for s in 0..4 {
        let mut ls = Vec::new();
        for l in 0..LAYERS {
            memory.extend_from_slice(&[0xABAB_ABAB; 3]);
            let w = words(10 + s, l);
            ls.push(HostLayer { layer: l, kind: Kind::Opaque, offset: memory.len() * 4, size: w.len() * 4 });
            memory.extend_from_slice(&w);
        }
        layers.push(ls);
    }
    let total = memory.len() * 4;
    let mut buffer = store.register_host_buffer(&mut memory).unwrap();
    let snaps: Vec<HostSnapshot> = (0..4)
        .map(|s| HostSnapshot { ns, prefix: prefix_of(10 + s), token_count: 64, layers: &layers[s as usize] })
        .collect();
    // A layer past the end: refused naming it, nothing written.
    let mut bad = layers[2].clone();
    bad[1].offset = total - 4;
    let mut refused = snaps.clone();
    refused[2].layers = &bad;
    match store.put_from_host(&mut buffer, &refused) {
        Err(Error::InvalidArgument(m)) => assert!(m.contains("snapshots[2].layers[1]"), "{m}"),
        other => panic!("want InvalidArgument, got {other:?}"),
    }
    assert_eq!(store.count_leading_stored(ns, &[prefix_of(10)]).unwrap(), 0);
    {
        let put = store.put_from_host(&mut buffer, &snaps).unwrap();
        let want: usize = (0..LAYERS).map(|l| words(11, l).len() * 4).sum();
        assert_eq!(put.wait_target(1).unwrap(), want);
        put.wait_snapshot(ns, &prefix_of(13)).unwrap();
        put.wait().unwrap();
        assert_eq!(put.finished().unwrap(), (10..14).map(|s| (ns, prefix_of(s))).collect::<Vec<_>>());
    }
    for s in 0..4u32 {
        for l in 0..LAYERS {
            let got = store.get_layer(ns, &prefix_of(10 + s), l).unwrap();
            assert_eq!(&got[..], bytes_of(&words(10 + s, l)), "snapshot {s} layer {l}");
        }
    }
}
