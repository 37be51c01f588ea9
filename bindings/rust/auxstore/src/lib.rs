//! Safe Rust binding of auxstore (the persistent tier for the aux state of
//! LLM-inference sequences) over its C ABI, `libauxstore_c.so`.
//!
//! ```no_run
//! use auxstore::*;
//! # fn main() -> Result<()> {
//! let mut opts = Options::new();
//! opts.chunk_bytes(64 << 10)?.log_callback(LogLevel::Warn, |lvl, src, msg| eprintln!("{lvl:?} {src}: {msg}"))?;
//! let store = Store::open("/tmp/aux", &opts)?;
//! let geo = Geometry { dsa_index_head_dim: 32, dsa_capacity: 1024, ..Geometry::default() };
//! let ns = store.register_namespace("my-model", &geo)?;
//! let backend = Backend::host()?;
//! let pipeline = Pipeline::new(&store, &backend)?;
//! let mut target = backend.dsa_state(&geo)?;
//! let tokens: Vec<u32> = (0..256).collect();
//! if let Some((hit, lease)) = store.longest_prefix_for_tokens_leased(ns, &tokens, 16, 0, 30_000)? {
//!     pipeline.scope(|s| -> Result<()> {
//!         let h = s.start(ns, &hit.prefix, [(1, &mut target)], RestoreOptions::new().lease(lease))?;
//!         h.wait_layer(1)?;
//!         h.join()
//!     })?;
//!     println!("restored {} tokens: {:?}", hit.tokens, target.counters()?);
//! }
//! # Ok(()) }
//! ```
//!
//! docs/rust.md has the ownership, lifetime and thread-safety rules; in
//! short: a [`Store`] and a [`Backend`] are shareable `Arc` handles (clone
//! them), a [`Pipeline`] holds a clone of each, and leases, states, buffers
//! and streams borrow theirs; restores run inside [`Pipeline::scope`], which
//! borrows their targets mutably and returns only when they are done.
//!
//! An engine keeps the store, the backend and the pipeline in one struct,
//! shared across threads:
//!
//! ```no_run
//! use std::sync::Arc;
//! struct Engine {
//!     store: auxstore::Store,
//!     backend: auxstore::Backend,
//!     pipeline: auxstore::Pipeline,
//! }
//! fn engine() -> auxstore::Result<Arc<Engine>> {
//!     let store = auxstore::Store::open_default("/tmp/aux")?;
//!     let backend = auxstore::Backend::host()?;
//!     let pipeline = auxstore::Pipeline::new(&store, &backend)?;
//!     Ok(Arc::new(Engine { store, backend, pipeline }))
//! }
//! ```
//!
//! The rules are enforced at compile time:
//!
//! ```compile_fail,E0597
//! // A state cannot outlive its backend.
//! let state = {
//!     let backend = auxstore::Backend::host().unwrap();
//!     backend.opaque_state(16).unwrap()
//! };
//! ```
//!
//! ```compile_fail,E0502
//! // A restore target cannot be used (or dropped) while the scope runs.
//! fn f(p: &auxstore::Pipeline, ns: auxstore::Namespace, prefix: auxstore::Prefix,
//!      mut st: auxstore::State<'_>) {
//!     p.scope(|s| {
//!         let _h = s.start(ns, &prefix, [(0, &mut st)], Default::default());
//!         let _ = st.counters(); // error: `st` is borrowed mutably by the restore
//!     });
//! }
//! ```
//!
//! ```compile_fail,E0597
//! // A target created inside the scope cannot be restored into: it would be
//! // dropped before the scope waits for the restore.
//! fn f(p: &auxstore::Pipeline, b: &auxstore::Backend, ns: auxstore::Namespace,
//!      prefix: auxstore::Prefix) {
//!     p.scope(|s| {
//!         let mut st = b.opaque_state(16).unwrap();
//!         let _h = s.start(ns, &prefix, [(0, &mut st)], Default::default());
//!     });
//! }
//! ```
//!
//! ```compile_fail
//! // A restore handle cannot escape its scope.
//! fn f<'p>(p: &'p auxstore::Pipeline, ns: auxstore::Namespace, prefix: auxstore::Prefix,
//!          st: &'p mut auxstore::State<'p>) {
//!     let h = p.scope(|s| s.start(ns, &prefix, [(0, st)], Default::default()).unwrap());
//! }
//! ```
//!
//! ```compile_fail,E0499
//! // A borrowed state holds its device buffer: the buffer cannot be written
//! // (or freed) while the state lives.
//! fn f(b: &auxstore::Backend) {
//!     let mut buf = b.alloc(64).unwrap();
//!     let st = b.borrow_opaque_state(&mut buf, 0).unwrap();
//!     let s = b.create_stream().unwrap();
//!     buf.write(0, &[1, 2, 3], &s).unwrap();
//!     drop(st);
//! }
//! ```
//!
//! ```compile_fail,E0277
//! // A state is Send but not Sync.
//! fn sync<T: Sync>(_: &T) {}
//! fn f(st: &auxstore::State<'_>) { sync(st) }
//! ```
//!
//! ```compile_fail,E0277
//! // The options are Send but not Sync.
//! fn sync<T: Sync>(_: &T) {}
//! sync(&auxstore::Options::new());
//! ```
//!
//! ```compile_fail,E0004
//! // `Error` is #[non_exhaustive]: a later auxstore may add a status code, so
//! // a match outside this crate needs a `_` arm.
//! fn code(e: &auxstore::Error) -> i32 {
//!     use auxstore::Error::*;
//!     match e {
//!         NotFound(_) | Corruption(_) | InvalidArgument(_) | OutOfRange(_) | Capacity(_) => 1,
//!         IOError(_) | Busy(_) | Unavailable(_) | NotSupported(_) | Internal(_) => 2,
//!     }
//! }
//! ```
//!
//! ```compile_fail,E0597
//! // A lease cannot outlive its store.
//! fn f(ns: auxstore::Namespace, p: auxstore::Prefix) {
//!     let lease = {
//!         let store = auxstore::Store::open_default("/tmp/x").unwrap();
//!         store.lease(ns, &p, 1000).unwrap()
//!     };
//! }
//! ```
#![warn(missing_debug_implementations)]
#![warn(missing_docs)]

pub use auxstore_sys as sys;

mod backend;
mod connector;
mod error;
mod host_reads;
mod pipeline;
mod pod;
mod prefix;
mod restore_batch;
mod sizes;
mod state;
mod store;
mod types;

pub use backend::{Backend, DeviceBuffer, DsaBuffers, QsaBuffers, Stream, StreamRef};
pub use connector::{BatchLeases, ChainPages};
pub use error::{code_name, Error, Result};
pub use host_reads::{HostBuffer, HostLayer, HostRead, HostSnapshot, HostTarget};
pub use pipeline::{Pipeline, RestoreHandle, RestoreOptions, RestoreScope, SnapshotOutcome};
pub use pod::{bytes_of, bytes_of_mut, Pod};
pub use prefix::{prefix_hashes, qsa_block_pool_host, token_digest};
pub use restore_batch::{BatchSnapshot, RestoreBatch};
pub use state::{Counters, State};
pub use store::{metrics_text, Lease, Options, Store};
pub use types::{
    bf16_from_bytes, bf16_to_bytes, BackendKind, Bytes, DType, Durability, Geometry, Kind, Layer, LayerDest, LayerInfo,
    LogLevel, Manifest, Namespace, NamespaceSpec, OpaqueLayer, PipelineOptions, PipelineStats, Prefix, PrefixMatch,
    PutOptions, SharedStats, SharedWrite, SnapshotPut, Stats, TokenDigest,
};

/// docs/rust.md's Rust blocks (the complete example among them), compiled and
/// run as doc tests by `cargo test --doc` (and so by ctest `rust_binding_test`).
#[cfg(doctest)]
#[doc = include_str!("../../../../docs/rust.md")]
#[derive(Debug)]
pub struct DocsRustMd;

/// Compile-time checks of the thread-safety markers (docs/rust.md).
#[allow(dead_code)]
fn _assert_markers() {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>() {}
    send_sync::<Store>();
    send_sync::<Backend>();
    send_sync::<Pipeline>();
    send_sync::<RestoreHandle<'static>>();
    send_sync::<RestoreBatch<'static>>();
    send_sync::<RestoreScope<'static, 'static>>();
    send_sync::<Lease<'static>>();
    send_sync::<DeviceBuffer<'static>>();
    send_sync::<Stream<'static>>();
    send_sync::<StreamRef<'static>>();
    send_sync::<Bytes>();
    send::<State<'static>>();
    send::<Options>();
}
