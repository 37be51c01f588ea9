//! Errors carry the C status code and auxstore's message, one variant per
//! code, with Display and std::error::Error.
mod common;
use auxstore::*;
use common::*;

#[test]
fn every_code_maps_to_its_variant_and_back() {
    let names = [
        (1, "NotFound"),
        (2, "Corruption"),
        (3, "InvalidArgument"),
        (4, "OutOfRange"),
        (5, "Capacity"),
        (6, "IOError"),
        (7, "Busy"),
        (8, "Unavailable"),
        (9, "NotSupported"),
        (10, "Internal"),
    ];
    for (code, _) in names {
        let e = Error::from_code(code, "msg");
        assert_eq!(e.code(), code);
        assert_eq!(e.message(), "msg");
        assert_eq!(e.code_name(), code_name(code));
        assert_eq!(e.to_string(), format!("{}: msg", code_name(code)));
    }
    assert!(matches!(Error::from_code(1, ""), Error::NotFound(_)));
    assert!(matches!(Error::from_code(2, ""), Error::Corruption(_)));
    assert!(matches!(Error::from_code(3, ""), Error::InvalidArgument(_)));
    assert!(matches!(Error::from_code(4, ""), Error::OutOfRange(_)));
    assert!(matches!(Error::from_code(5, ""), Error::Capacity(_)));
    assert!(matches!(Error::from_code(6, ""), Error::IOError(_)));
    assert!(matches!(Error::from_code(7, ""), Error::Busy(_)));
    assert!(matches!(Error::from_code(8, ""), Error::Unavailable(_)));
    assert!(matches!(Error::from_code(9, ""), Error::NotSupported(_)));
    assert!(matches!(Error::from_code(10, ""), Error::Internal(_)));
    // Each variant is named as its code: `{:?}` starts with the code name
    // (so Error::IOError, whose code_name() is "IOError").
    for (code, name) in names {
        let e = Error::from_code(code, "m");
        assert_eq!(format!("{e:?}"), format!("{name}(\"m\")"));
        assert_eq!(e.code_name(), name);
    }
    let io = Error::IOError("disk".into());
    assert_eq!((io.code(), io.code_name()), (sys::AUXSTORE_IO_ERROR, "IOError"));
    assert_eq!(io.to_string(), "IOError: disk");
    // OK is not an error: Internal, saying so.
    let ok = Error::from_code(0, "x");
    assert!(matches!(ok, Error::Internal(_)) && ok.message().contains("OK"), "{ok:?}");
    // A code this crate does not know is Internal, naming it.
    let e = Error::from_code(42, "x");
    assert_eq!(e.code(), 10);
    assert!(e.message().contains("42"), "{e}");
    assert_eq!(code_name(0), "OK");
    assert_eq!(code_name(99), "Unknown");
    for (code, name) in names {
        assert_eq!(code_name(code), name);
    }
    // std::error::Error, boxed
    let boxed: Box<dyn std::error::Error + Send + Sync> = Box::new(Error::from_code(1, "gone"));
    assert_eq!(boxed.to_string(), "NotFound: gone");
}

#[test]
fn invalid_argument_names_the_function_and_argument() {
    let mut o = Options::new();
    let e = o.chunk_bytes(0).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)));
    assert_eq!(e.code(), sys::AUXSTORE_INVALID_ARGUMENT);
    assert!(e.message().starts_with("auxstore_options_set_chunk_bytes: "), "{e}");
    assert!(e.message().contains("chunk bytes is 0"), "{e}");

    let dir = TempDir::new("errors");
    let store = open_store(&dir);
    let ns = store.register_namespace("m", &geometry()).unwrap();
    let blobs = seq_blobs(1, 32, 0);
    // A QSA blob whose size disagrees with its header.
    let bad = &blobs.qsa[..blobs.qsa.len() - 2];
    let e = store.put_snapshot(ns, &prefix_of(1, 32), 32, &[Layer::new(0, Kind::Qsa, bad)]).unwrap_err();
    assert!(e.message().starts_with("auxstore_put_snapshot: "), "{e}");
    assert!(matches!(e, Error::Corruption(_)), "{e:?}");
    assert!(e.message().contains("size mismatch"), "{e}");
    // Repeated layers.
    let l = Layer::new(2, Kind::Opaque, &blobs.opaque);
    let e = store.put_snapshot(ns, &prefix_of(1, 32), 32, &[l, l]).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
    // Nothing was written by the failed calls.
    assert_eq!(store.get_manifests(ns, &[prefix_of(1, 32)]).unwrap(), vec![None]);
    // block_size 0
    let e = prefix_hashes(&[1, 2, 3], 0, 0).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)) && e.message().contains("block_size"), "{e}");
    // A string with a NUL is refused by the wrapper, naming it.
    let e = Store::open_default(dir.join("a\0b")).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)) && e.message().contains("NUL"), "{e}");
    let e = store.register_namespace("a\0b", &geometry()).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)) && e.message().contains("model_id"), "{e}");
}

#[test]
fn not_found_out_of_range_busy_unavailable_corruption() {
    let dir = TempDir::new("errors2");
    let store = open_store(&dir);
    let ns = store.register_namespace("m", &geometry()).unwrap();
    let p = prefix_of(2, 64);
    // NotFound: no such snapshot / layer.
    let e = store.get_layer(ns, &p, 0).unwrap_err();
    assert!(matches!(e, Error::NotFound(_)), "{e:?}");
    assert!(matches!(store.get_manifest(ns, &p), Err(Error::NotFound(_))));
    let blobs = seq_blobs(2, 64, 0);
    store.put_snapshot(ns, &p, 64, &blobs.layers()).unwrap();
    assert!(matches!(store.get_layer(ns, &p, 7), Err(Error::NotFound(_))));
    // OutOfRange: a destination too small, nothing read.
    let mut small = vec![0u8; 10];
    let mut dests = [LayerDest::new(1, &mut small)];
    let e = store.read_layers(ns, &p, &mut dests).unwrap_err();
    assert!(matches!(e, Error::OutOfRange(_)), "{e:?}");
    assert!(e.message().starts_with("auxstore_read_layers: "), "{e}");
    assert_eq!(small, vec![0u8; 10]);
    // Busy: a second writer on the same store.
    let e = Store::open_default(dir.join("store")).unwrap_err();
    assert!(matches!(e, Error::Busy(_)), "{e:?}");
    assert_eq!(e.code(), sys::AUXSTORE_BUSY);
    // Unavailable: CUDA on a machine / build without it (or a device index
    // that does not exist).
    match Backend::new(BackendKind::Cuda) {
        Ok(b) => assert_eq!(b.kind(), BackendKind::Cuda),
        Err(e) => {
            assert!(matches!(e, Error::Unavailable(_)), "{e:?}");
            assert!(e.message().starts_with("auxstore_backend_create: "), "{e}");
        }
    }
    // Corruption: a fresh state loaded from a blob of another layout.
    let backend = Backend::host().unwrap();
    let mut st = backend.dsa_state(&geometry()).unwrap();
    let other = dsa_blob(1, 16, &[0; 32], &[0; 32], &[1]);
    let e = st.load(&other).unwrap_err();
    assert!(e.message().starts_with("auxstore_state_load: "), "{e}");
    assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
    assert!(e.message().contains("index_head_dim 16"), "{e}");
    assert_eq!(st.counters().unwrap(), Counters::default()); // nothing moved
    drop(st);
    drop(store);
    // Unavailable: writes on a read-only handle.
    let mut o = Options::new();
    o.read_only(true).unwrap();
    let ro = Store::open(dir.join("store"), &o).unwrap();
    let e = ro.put_snapshot(ns, &prefix_of(3, 16), 16, &[Layer::new(2, Kind::Opaque, &[1, 2, 3])]).unwrap_err();
    assert!(matches!(e, Error::Unavailable(_)), "{e:?}");
    // create_if_missing(false) on a missing store.
    let mut o = Options::new();
    o.create_if_missing(false).unwrap();
    let e = Store::open(dir.join("missing"), &o).unwrap_err();
    assert!(matches!(e, Error::NotFound(_)), "{e:?}");
    assert!(e.message().starts_with("auxstore_open: "), "{e}");
}

/// The shared tier's option: refusals name what was wrong, and a URI the
/// open refuses leaves the directory untouched.
#[test]
fn shared_tier_option_refusals() {
    let dir = TempDir::new("shared-option");
    let mut o = Options::new();
    let e = o.shared("rados://p?conf=/c", SharedWrite::Behind, 0, false).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
    assert!(e.message().contains("queue_bytes is 0"), "{e}");
    let e = o.shared("rados://p\0", SharedWrite::Through, 1, false).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
    o.shared("rados://auxstore", SharedWrite::Through, 1 << 20, false).unwrap();
    let e = Store::open(dir.join("store"), &o).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
    assert!(e.message().contains("conf=PATH"), "{e}");
    assert!(!dir.join("store").exists());
}
