//! Shareable handles (issue 24): a `Store` and a `Backend` are `Arc`
//! handles, a `Pipeline` owns a clone of each, so an engine keeps all three
//! in one struct and shares it across threads; layer data as `&[T]` /
//! `&mut [T]` for plain-old-data `T` (f32, an engine's own bf16 type).
mod common;
use auxstore::*;
use common::*;
use std::sync::Arc;
use std::thread;

/// What an engine keeps: no borrow between the three.
struct Engine {
    store: Store,
    backend: Backend,
    pipeline: Pipeline,
}

fn engine(dir: &TempDir) -> Engine {
    let store = open_store(dir);
    let backend = Backend::host().unwrap();
    let pipeline = Pipeline::with_options(&store, &backend, &small_pipeline_options()).unwrap();
    Engine { store, backend, pipeline }
}

#[test]
fn an_engine_struct_is_shared_across_threads() {
    let dir = TempDir::new("shared-engine");
    let e = Arc::new(engine(&dir));
    let ns = e.store.register_namespace("m", &geometry()).unwrap();
    let workers: Vec<_> = (0..4u32)
        .map(|t| {
            let e = Arc::clone(&e);
            thread::spawn(move || {
                let b = seq_blobs(100 + u64::from(t), 256, 0);
                let prefix = prefix_of(100 + t, 256);
                e.store.put_snapshot(ns, &prefix, 256, &[Layer::new(1, Kind::Dsa, &b.dsa)]).unwrap();
                let mut dsa = e.backend.dsa_state(&geometry()).unwrap();
                e.pipeline.restore_wait(ns, &prefix, &mut [(1, &mut dsa)]).unwrap();
                assert_eq!(&*dsa.read().unwrap(), &b.dsa[..], "thread {t}: every DSA byte");
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    assert_eq!(e.store.stats().unwrap().snapshots, 4);
}

#[test]
fn a_pipeline_keeps_its_store_and_backend_open() {
    let dir = TempDir::new("shared-own");
    let path = dir.join("store");
    let b = seq_blobs(7, 128, 0);
    let prefix = prefix_of(7, 128);
    let (pipeline, ns) = {
        let e = engine(&dir);
        let ns = e.store.register_namespace("m", &geometry()).unwrap();
        e.store.put_snapshot(ns, &prefix, 128, &[Layer::new(1, Kind::Dsa, &b.dsa)]).unwrap();
        (e.pipeline, ns) // the store and backend values go; the pipeline stays
    };
    assert!(matches!(Store::open_default(&path), Err(Error::Busy(_))), "still open");
    let backend = pipeline.backend().clone();
    let mut dsa = backend.dsa_state(&geometry()).unwrap();
    pipeline.restore_wait(ns, &prefix, &mut [(1, &mut dsa)]).unwrap();
    assert_eq!(&*dsa.read().unwrap(), &b.dsa[..]);
    assert_eq!(pipeline.store().count_leading_stored(ns, &[prefix]).unwrap(), 1);
    drop(dsa);
    drop(backend);
    drop(pipeline);
    // The last holder went: the store is closed and opens again.
    let store = Store::open_default(&path).unwrap();
    assert_eq!(&*store.get_layer(ns, &prefix, 1).unwrap(), &b.dsa[..]);
}

#[test]
fn store_clones_share_one_handle() {
    let dir = TempDir::new("shared-clone");
    let store = open_store(&dir);
    let other = store.clone();
    assert!(store.same_store(&other));
    let ns = store.register_namespace("m", &geometry()).unwrap();
    other.put_snapshot(ns, &prefix_of(1, 16), 16, &[Layer::new(2, Kind::Opaque, &[9; 32])]).unwrap();
    store.close(); // one clone closed: the other still works
    assert_eq!(&*other.get_layer(ns, &prefix_of(1, 16), 2).unwrap(), &[9u8; 32][..]);
    let separate = open_store(&TempDir::new("shared-clone-2"));
    assert!(!other.same_store(&separate));
}

/// An engine's bf16 element type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[repr(transparent)]
struct Bf16(u16);
// SAFETY: repr(transparent) over u16: no padding, every bit pattern valid.
unsafe impl Pod for Bf16 {}

#[test]
fn layer_data_as_typed_slices() {
    let dir = TempDir::new("shared-pod");
    let store = open_store(&dir);
    let ns = store.register_namespace("m", &geometry()).unwrap();
    let floats: Vec<f32> = (0..1000).map(|i| i as f32 * 0.25 - 7.0).collect();
    let halves: Vec<Bf16> = Rng::new(3).bf16s(777).into_iter().map(Bf16).collect();
    let p = prefix_of(5, 16);
    store
        .put_snapshot(
            ns,
            &p,
            16,
            &[Layer::from_slice(2, Kind::Opaque, &floats), Layer::from_slice(3, Kind::Opaque, &halves)],
        )
        .unwrap();
    // The bytes stored are the elements' bytes in memory order.
    let want: Vec<u8> = floats.iter().flat_map(|f| f.to_ne_bytes()).collect();
    assert_eq!(&*store.get_layer(ns, &p, 2).unwrap(), &want[..]);
    assert_eq!(bytes_of(&halves).len(), 777 * 2);

    let mut f_back = vec![0f32; 1000];
    let mut h_back = vec![Bf16::default(); 777];
    let mut dests = [LayerDest::from_slice(2, &mut f_back), LayerDest::from_slice(3, &mut h_back)];
    store.read_layers(ns, &p, &mut dests).unwrap();
    assert_eq!((dests[0].size, dests[1].size), (4000, 1554));
    assert_eq!(f_back, floats, "every f32");
    assert_eq!(h_back, halves, "every bf16");

    let mut small = vec![0f32; 999];
    let mut dests = [LayerDest::from_slice(2, &mut small)];
    assert!(matches!(store.read_layers(ns, &p, &mut dests), Err(Error::OutOfRange(_))), "capacity in bytes");
}
