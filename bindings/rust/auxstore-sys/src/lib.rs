//! Raw declarations of auxstore's C ABI (`include/auxstore/c.h`), written by
//! hand and linked to `libauxstore_c.so`.
//!
//! Everything here is `unsafe` and mirrors the header one to one: the status
//! codes and other constants, the `#[repr(C)]` structs, the opaque handle
//! types and every `auxstore_*` function. The safe wrapper is the `auxstore`
//! crate; docs/c-abi.md has the C rules (ownership, errors, thread safety).
//!
//! The crate checks itself against the header it was built for:
//! `cargo test -p auxstore-sys` fails when `c.h` declares a function this
//! crate lacks (or one whose parameter or return types differ), when a
//! struct's size, alignment or any field offset differs from what the C
//! compiler says, or when a constant has another value (build.rs compiles a
//! probe of the header with `cc`).
//!
//! Conventions of every function (docs/c-abi.md has the rest): an `int`
//! result is an `AUXSTORE_*` status code; on an error, when `errmsg` is not
//! NULL, `*errmsg` receives a malloc'd message naming the function and the
//! argument, which the caller frees with [`auxstore_free`]. Out parameters
//! are written only on `AUXSTORE_OK` unless the function says otherwise.
//! Pointers passed in are read (or written) during the call only, except
//! where a function keeps them (`arg` of the callbacks, `src` of an
//! asynchronous copy). Handles must be live: since the handle table
//! (`auxstore_misuse_count`) a stale one is refused rather than UB, but the
//! safe crate never passes one.
//!
//! Linking (build.rs): `AUXSTORE_LIB_DIR` (a build tree's folder holding
//! libauxstore_c.so, e.g. `build/capi`), else `AUXSTORE_PREFIX` (an install
//! prefix: `$AUXSTORE_PREFIX/lib`), else `pkg-config --libs auxstore`.
#![allow(non_camel_case_types)]
#![allow(clippy::missing_safety_doc)]
#![warn(missing_docs)]

use std::marker::{PhantomData, PhantomPinned};
pub use std::os::raw::{c_char, c_int, c_void};

// ---- status codes (auxstore::StatusCode) ------------------------------------
/// Success.
pub const AUXSTORE_OK: c_int = 0;
/// No such snapshot, layer, lease or namespace ("NotFound").
pub const AUXSTORE_NOT_FOUND: c_int = 1;
/// Stored or supplied bytes fail a check ("Corruption").
pub const AUXSTORE_CORRUPTION: c_int = 2;
/// A bad argument, or a handle that is not live ("InvalidArgument").
pub const AUXSTORE_INVALID_ARGUMENT: c_int = 3;
/// A size or count beyond what the target holds ("OutOfRange").
pub const AUXSTORE_OUT_OF_RANGE: c_int = 4;
/// The store or a queue is full: the call was shed ("Capacity").
pub const AUXSTORE_CAPACITY: c_int = 5;
/// The file system failed ("IOError").
pub const AUXSTORE_IO_ERROR: c_int = 6;
/// Another handle holds the store for writing ("Busy").
pub const AUXSTORE_BUSY: c_int = 7;
/// Cannot serve this now: read-only, fenced, cancelled, or no CUDA device ("Unavailable").
pub const AUXSTORE_UNAVAILABLE: c_int = 8;
/// Not supported by this build ("NotSupported").
pub const AUXSTORE_NOT_SUPPORTED: c_int = 9;
/// A bug, or an exception caught at the boundary ("Internal").
pub const AUXSTORE_INTERNAL: c_int = 10;

// ---- blob kinds, durability, backends -----------------------------------------
/// A QSA v1 blob: `[ingested u64][pooled u64][raw_keys bf16]`.
pub const AUXSTORE_KIND_QSA: c_int = 1;
/// A DSA v1 blob: `[len u64][index_head_dim u64][k_normed][gate][valid]`.
pub const AUXSTORE_KIND_DSA: c_int = 2;
/// Any other per-layer state, byte for byte.
pub const AUXSTORE_KIND_OPAQUE: c_int = 3;
/// Every put is a synced commit.
pub const AUXSTORE_SYNC: c_int = 0;
/// Puts are durable at `auxstore_flush`.
pub const AUXSTORE_ASYNC: c_int = 1;
/// Shared tier: a put returns once the pool acknowledged its pages and manifest.
pub const AUXSTORE_SHARED_THROUGH: c_int = 0;
/// Shared tier: a put returns once committed locally; its upload is queued.
pub const AUXSTORE_SHARED_BEHIND: c_int = 1;
/// CUDA when built and a device is present, else host.
pub const AUXSTORE_BACKEND_AUTO: c_int = 0;
/// The host backend (host memory as device memory).
pub const AUXSTORE_BACKEND_HOST: c_int = 1;
/// The CUDA backend.
pub const AUXSTORE_BACKEND_CUDA: c_int = 2;

// ---- log levels ------------------------------------------------------------------
/// Log level: debugging detail.
pub const AUXSTORE_LOG_DEBUG: c_int = 0;
/// Log level: information (RocksDB's info log).
pub const AUXSTORE_LOG_INFO: c_int = 1;
/// Log level: a handled problem (auxstore's warnings).
pub const AUXSTORE_LOG_WARN: c_int = 2;
/// Log level: a failure.
pub const AUXSTORE_LOG_ERROR: c_int = 3;

// ---- element types of a declared opaque layer (auxstore::DType) ------------------
/// Element type u8 (1 byte).
pub const AUXSTORE_DTYPE_U8: c_int = 1;
/// Element type i8 (1 byte).
pub const AUXSTORE_DTYPE_I8: c_int = 2;
/// Element type bfloat16 (2 bytes).
pub const AUXSTORE_DTYPE_BF16: c_int = 3;
/// Element type IEEE half (2 bytes).
pub const AUXSTORE_DTYPE_F16: c_int = 4;
/// Element type f32 (4 bytes).
pub const AUXSTORE_DTYPE_F32: c_int = 5;
/// Element type i32 (4 bytes).
pub const AUXSTORE_DTYPE_I32: c_int = 6;
/// Element type f64 (8 bytes).
pub const AUXSTORE_DTYPE_F64: c_int = 7;
/// Element type i64 (8 bytes).
pub const AUXSTORE_DTYPE_I64: c_int = 8;

// ---- pipeline histograms -----------------------------------------------------------
/// Buckets of the restore latency histogram (bucket i: [2^i, 2^(i+1)) us).
pub const AUXSTORE_LATENCY_BUCKETS: usize = 24;
/// Buckets of the restore throughput histogram (bucket i: [2^i, 2^(i+1)) MiB/s).
pub const AUXSTORE_THROUGHPUT_BUCKETS: usize = 18;

// ---- opaque handles ------------------------------------------------------------------
macro_rules! opaque_handles {
    ($($(#[$m:meta])* $name:ident;)*) => {$(
        $(#[$m])*
        #[repr(C)]
        pub struct $name {
            _private: [u8; 0],
            // Neither Send, Sync nor Unpin: only pointers to it exist.
            _marker: PhantomData<(*mut u8, PhantomPinned)>,
        }
    )*};
}
opaque_handles! {
    /// An open store.
    auxstore_t;
    /// Open options.
    auxstore_options_t;
    /// A host or CUDA backend.
    auxstore_backend_t;
    /// One layer's device state.
    auxstore_state_t;
    /// A pipeline (restores store -> states, write-behind snapshots).
    auxstore_pipeline_t;
    /// A running (or finished) restore.
    auxstore_restore_handle_t;
    /// An engine's host buffer registered with a store (a read target).
    auxstore_host_buffer_t;
    /// A batched read into registered host buffers.
    auxstore_host_read_t;
    /// Many snapshots being restored into device states, one handle.
    auxstore_restore_batch_t;
}

// ---- plain types ------------------------------------------------------------------------

/// A namespace's geometry (`qsa_hd == 0`: no QSA layers; `dsa_index_head_dim
/// == 0`: no DSA layers).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct auxstore_geometry_t {
    /// QSA head dimension (0: no QSA layers).
    pub qsa_hd: u32,
    /// QSA rows a sequence holds.
    pub qsa_max_tokens: u32,
    /// Tokens pooled into one block key.
    pub qsa_ratio: u32,
    /// Leading block-key dimensions with the rotary embedding (even, <= `qsa_hd`).
    pub qsa_rot: u32,
    /// The rotary embedding's base.
    pub qsa_theta: f32,
    /// The block-key normalisation's epsilon.
    pub qsa_eps: f32,
    /// DSA index head dimension (0: no DSA layers).
    pub dsa_index_head_dim: u32,
    /// Rows of a fresh DSA state (not part of the namespace id).
    pub dsa_capacity: u32,
}

/// One layer of a snapshot to write.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct auxstore_layer_t {
    /// The layer index (unique within the snapshot).
    pub layer: u32,
    /// `AUXSTORE_KIND_*`.
    pub kind: u32,
    /// The blob (NULL only when `size` is 0), read during the call only.
    pub data: *const c_void,
    /// The blob's bytes.
    pub size: usize,
}

/// One layer of a stored snapshot, as its manifest describes it.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct auxstore_layer_info_t {
    /// The layer index.
    pub layer: u32,
    /// `AUXSTORE_KIND_*`.
    pub kind: u32,
    /// The blob's size.
    pub bytes: u64,
    /// The layer digest: XXH3-64 over the header and each page's and tail's XXH3-64.
    pub xxh3: u64,
}

/// The store's counters and gauges (docs/metrics.md).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct auxstore_stats_t {
    /// Visible snapshots.
    pub snapshots: u64,
    /// Every snapshot's layers in full.
    pub payload_bytes: u64,
    /// Lookups that found a snapshot.
    pub hits: u64,
    /// Lookups that found none.
    pub misses: u64,
    /// Snapshots this handle wrote.
    pub puts: u64,
    /// Puts of a prefix already stored.
    pub duplicate_puts: u64,
    /// Snapshots evicted for the byte budget.
    pub evictions: u64,
    /// Snapshots expired by their TTL.
    pub expirations: u64,
    /// Snapshots quarantined for corruption (persisted).
    pub quarantines: u64,
    /// Record groups without a manifest seen.
    pub orphans_seen: u64,
    /// ... and removed.
    pub orphans_removed: u64,
    /// Commits since the store was created.
    pub commit_seq: u64,
    /// The last commit known durable.
    pub durable_watermark: u64,
    /// Commits the open found lost and accepted.
    pub lost_commits_at_open: u64,
    /// Layer bytes this handle wrote.
    pub bytes_written: u64,
    /// Layer bytes this handle read and verified.
    pub bytes_read: u64,
    /// The byte budget (0: unlimited).
    pub capacity_bytes: u64,
    /// Live leases of this handle.
    pub leases: u64,
    /// 1 once the background LRU index has loaded.
    pub index_ready: c_int,
    /// 1 after a failed write: reopen to write again.
    pub fenced: c_int,
    /// The bytes stored, each shared page once (what `capacity_bytes` budgets).
    pub unique_bytes: u64,
}

/// The shared tier's counters by this handle ([`auxstore_shared_stats`]).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct auxstore_shared_stats_t {
    /// `size_of::<auxstore_shared_stats_t>()`, set by the caller.
    pub struct_size: usize,
    /// 1: the store has a shared tier.
    pub shared: c_int,
    /// Snapshots committed to the pool (or found there).
    pub uploads: u64,
    /// Page objects created in the pool.
    pub pages_stored: u64,
    /// Pages the pool held already (nothing stored).
    pub pages_present: u64,
    /// Upload attempts that failed (retried while queued).
    pub upload_failures: u64,
    /// Write-behind snapshots not uploaded: the queue was full.
    pub shed: u64,
    /// Write-behind snapshots waiting for upload now.
    pub queued: u64,
    /// Snapshots restored from the pool into the local store.
    pub restores: u64,
    /// Pool objects found damaged (their snapshots quarantined).
    pub corruptions: u64,
}

/// Where a restore puts one layer.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct auxstore_restore_target_t {
    /// The snapshot layer to restore.
    pub layer: u32,
    /// The fresh state it goes into.
    pub state: *mut auxstore_state_t,
}

/// One snapshot of a batched restore ([`auxstore_restore_batch_start`]).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct auxstore_restore_snapshot_t {
    /// The namespace.
    pub ns: u64,
    /// The prefix.
    pub prefix: [u8; 16],
    /// Its targets: fresh states, one per layer.
    pub targets: *const auxstore_restore_target_t,
    /// Targets at `targets`.
    pub n_targets: usize,
    /// A lease released when its restore completes (0: none).
    pub lease: u64,
}

/// `fn(arg, level, source, message)`: see `auxstore_options_set_log_callback`.
pub type auxstore_log_fn =
    Option<unsafe extern "C" fn(arg: *mut c_void, level: c_int, source: *const c_char, message: *const c_char)>;

/// An opaque layer's declared shape.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct auxstore_opaque_layer_desc_t {
    /// The layer index.
    pub layer: u32,
    /// `AUXSTORE_DTYPE_*`.
    pub dtype: u32,
    /// Dimensions used in `shape` (1..8).
    pub ndim: u32,
    /// The shape; a blob is `prod(shape[..ndim]) * sizeof(dtype)` bytes.
    pub shape: [u64; 8],
}

/// A namespace's whole identity (`struct_size = size_of::<Self>()`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct auxstore_namespace_t {
    /// `size_of::<auxstore_namespace_t>()`.
    pub struct_size: usize,
    /// The model's name, NUL-terminated.
    pub model_id: *const c_char,
    /// The weights' revision, NUL-terminated, or NULL.
    pub weight_revision: *const c_char,
    /// Tensor-parallel rank.
    pub tp_rank: u32,
    /// Tensor-parallel world size (0 is taken as 1).
    pub tp_world_size: u32,
    /// The layers' geometry.
    pub geometry: auxstore_geometry_t,
    /// Entries at `opaque_layers`.
    pub n_opaque_layers: usize,
    /// Declared opaque layers, ascending and unique (NULL when none).
    pub opaque_layers: *const auxstore_opaque_layer_desc_t,
    /// Rows per stored page of QSA/DSA layers (0: each paged put's block size).
    pub page_tokens: u32,
}

/// How a snapshot is put (`struct_size = size_of::<Self>()`): a token
/// digest and the block chain that stores QSA/DSA rows in shared pages.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct auxstore_put_options_t {
    /// `size_of::<auxstore_put_options_t>()`.
    pub struct_size: usize,
    /// 16 bytes ([`auxstore_token_digest`]) or NULL.
    pub token_digest: *const u8,
    /// The chained prefix hashes of the snapshot's blocks, or NULL (layers stored whole).
    pub block_chain: *const [u8; 16],
    /// Entries at `block_chain`.
    pub n_blocks: usize,
    /// Tokens per block of the chain.
    pub block_size: u32,
}

/// One snapshot of [`auxstore_put_snapshots`]: what [`auxstore_put_snapshot_ex`] takes.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct auxstore_snapshot_put_t {
    /// The namespace id.
    pub ns: u64,
    /// The snapshot's prefix.
    pub prefix: [u8; 16],
    /// Tokens the snapshot covers.
    pub token_count: u64,
    /// Entries at `layers`.
    pub n_layers: usize,
    /// The layers, read during the call only.
    pub layers: *const auxstore_layer_t,
    /// Put options, or NULL (none).
    pub options: *const auxstore_put_options_t,
}

/// One layer of one snapshot into `[offset, offset + capacity)` of a
/// registered host buffer ([`auxstore_host_read_start`]).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct auxstore_host_read_target_t {
    /// The snapshot's namespace.
    pub ns: u64,
    /// The snapshot's prefix.
    pub prefix: [u8; 16],
    /// The layer to read.
    pub layer: u32,
    /// The registered buffer it goes into.
    pub buffer: *mut auxstore_host_buffer_t,
    /// Where in the buffer.
    pub offset: usize,
    /// Bytes it may take there.
    pub capacity: usize,
}

/// One layer's bytes `[offset, offset + size)` of a registered host buffer
/// ([`auxstore_host_put_start`]).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct auxstore_host_layer_t {
    /// The layer index.
    pub layer: u32,
    /// `AUXSTORE_KIND_*`.
    pub kind: u32,
    /// The registered buffer holding its bytes.
    pub buffer: *mut auxstore_host_buffer_t,
    /// Where in the buffer.
    pub offset: usize,
    /// Its bytes.
    pub size: usize,
}

/// One snapshot to put from registered memory ([`auxstore_host_put_start`]).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct auxstore_host_put_t {
    /// The namespace.
    pub ns: u64,
    /// The prefix.
    pub prefix: [u8; 16],
    /// Tokens the snapshot covers.
    pub token_count: u64,
    /// Layers at `layers`.
    pub n_layers: usize,
    /// The layers.
    pub layers: *const auxstore_host_layer_t,
}

/// A snapshot: its namespace and prefix ([`auxstore_host_read_finished`]).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct auxstore_snapshot_ref_t {
    /// The namespace.
    pub ns: u64,
    /// The prefix.
    pub prefix: [u8; 16],
}

/// One layer into memory the caller provides.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct auxstore_layer_dest_t {
    /// The layer to read.
    pub layer: u32,
    /// Where to put it.
    pub data: *mut c_void,
    /// Bytes at `data`.
    pub capacity: usize,
    /// Out: the layer's size.
    pub size: usize,
}

/// An engine-owned QSA layer's device buffers.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct auxstore_qsa_buffers_t {
    /// Device address of the raw keys.
    pub raw_keys: u64,
    /// Their bytes (>= `qsa_max_tokens * qsa_hd * 2`).
    pub raw_keys_bytes: u64,
    /// Device address of the block keys.
    pub block_keys: u64,
    /// Their bytes (>= `qsa_max_tokens / qsa_ratio * qsa_hd * 2`).
    pub block_keys_bytes: u64,
    /// Device address of the layer's `k_pool_k` weights (`qsa_hd` bf16).
    pub k_pool_k: u64,
    /// Device address of the layer's `k_norm_w` weights (`qsa_hd` bf16).
    pub k_norm_w: u64,
}

/// An engine-owned DSA layer's device buffers.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct auxstore_dsa_buffers_t {
    /// Rows every buffer holds.
    pub capacity_rows: u64,
    /// Device address of k_normed.
    pub k_normed: u64,
    /// Its bytes (>= `capacity_rows * dsa_index_head_dim * 2`).
    pub k_normed_bytes: u64,
    /// Device address of gate.
    pub gate: u64,
    /// Its bytes (>= `capacity_rows * dsa_index_head_dim * 2`).
    pub gate_bytes: u64,
    /// Device address of valid.
    pub valid: u64,
    /// Its bytes (>= `capacity_rows`).
    pub valid_bytes: u64,
}

/// Called once when a restore ends (`message` NULL on success).
pub type auxstore_restore_done_fn = Option<unsafe extern "C" fn(arg: *mut c_void, code: c_int, message: *const c_char)>;
/// Called once when an accepted write-behind snapshot's write ends: its prefix (16 bytes), the
/// code, and a message (null on success); all valid only during the call.
pub type auxstore_snapshot_done_fn =
    Option<unsafe extern "C" fn(arg: *mut c_void, prefix: *const u8, code: c_int, message: *const c_char)>;

/// A pipeline's configuration; fill it with [`auxstore_pipeline_options_init`] first.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct auxstore_pipeline_options_t {
    /// `size_of::<auxstore_pipeline_options_t>()` ([`auxstore_pipeline_options_init`] sets it).
    pub struct_size: usize,
    /// Pinned staging buffers restores read chunks into.
    pub staging_buffers: usize,
    /// Bytes of each (>= the store's chunk size).
    pub staging_bytes: usize,
    /// Threads reading and writing the store.
    pub io_threads: usize,
    /// Layers a restore reads ahead.
    pub restore_read_ahead: usize,
    /// Write-behind snapshots queued at most...
    pub snapshot_queue: usize,
    /// ... and the pinned bytes they may hold; past either one is shed.
    pub snapshot_bytes: u64,
}

/// A pipeline's counters and restore histograms (docs/metrics.md).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct auxstore_pipeline_stats_t {
    /// Restores that succeeded.
    pub restores_ok: u64,
    /// Restores that failed (cancelled included).
    pub restores_failed: u64,
    /// Restores that ended cancelled.
    pub restores_cancelled: u64,
    /// Restores in flight.
    pub restores_running: u64,
    /// Layer bytes of the restores that succeeded.
    pub bytes_restored: u64,
    /// Write-behind snapshots accepted.
    pub snapshots_accepted: u64,
    /// Write-behind snapshots shed.
    pub snapshots_shed: u64,
    /// Write-behind snapshots written.
    pub snapshots_written: u64,
    /// Write-behind snapshots whose write failed.
    pub snapshots_failed: u64,
    /// Layer bytes of the snapshots written.
    pub bytes_snapshotted: u64,
    /// Chunk reads that waited for a staging buffer.
    pub staging_waits: u64,
    /// Successful restores by latency: bucket i counts [2^i, 2^(i+1)) us, the last everything
    /// above.
    pub restore_latency_us: [u64; AUXSTORE_LATENCY_BUCKETS],
    /// The sum of their latencies, in us.
    pub restore_latency_us_sum: u64,
    /// Their throughput: bucket i counts [2^i, 2^(i+1)) MiB/s.
    pub restore_throughput_mibps: [u64; AUXSTORE_THROUGHPUT_BUCKETS],
    /// The sum of their throughputs, in MiB/s.
    pub restore_throughput_mibps_sum: f64,
}

/// One layer of a write-behind snapshot: the state whose bytes are stored.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct auxstore_snapshot_source_t {
    /// The layer index to store the state as.
    pub layer: u32,
    /// The state whose bytes are copied.
    pub state: *const auxstore_state_t,
}

/// Called once per layer when its bytes (and QSA re-pool) are on the device.
pub type auxstore_layer_done_fn = Option<unsafe extern "C" fn(arg: *mut c_void, layer: u32)>;

/// Options of [`auxstore_restore_start`]; fill it with [`auxstore_restore_options_init`] first.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct auxstore_restore_options_t {
    /// `size_of::<auxstore_restore_options_t>()` ([`auxstore_restore_options_init`] sets it).
    pub struct_size: usize,
    /// 1: run on `stream` (not 0); 0: the pipeline's own stream.
    pub use_stream: c_int,
    /// The stream when `use_stream` is 1.
    pub stream: u64,
    /// A lease released when the restore completes; 0: none.
    pub lease: u64,
    /// Called once per layer done, on a backend thread (may be None).
    pub on_layer: auxstore_layer_done_fn,
    /// `on_layer`'s first argument.
    pub on_layer_arg: *mut c_void,
    /// Called once when the restore ends, on a pipeline thread (may be None).
    pub done: auxstore_restore_done_fn,
    /// `done`'s first argument.
    pub done_arg: *mut c_void,
    /// 1: rows `[first_row, last_row)` only, of QSA and DSA targets holding
    /// exactly rows `[0, first_row)`.
    pub use_rows: c_int,
    /// The first row restored when `use_rows` is 1.
    pub first_row: u64,
    /// One past the last row restored when `use_rows` is 1.
    pub last_row: u64,
}

/// One function this crate declares: its name, return type and parameter
/// types as written here (compared with `c.h` by the crate's tests).
#[derive(Debug, Clone, Copy)]
pub struct DeclaredFn {
    /// The function's name.
    pub name: &'static str,
    /// Its return type as written here (empty for none).
    pub ret: &'static str,
    /// Its parameter types as written here.
    pub params: &'static [&'static str],
}

// Declares the functions and records each one's signature in
// DECLARED_FUNCTIONS, so the tests can compare the crate with c.h.
macro_rules! c_api {
    ($( $(#[$m:meta])* pub fn $name:ident ( $($arg:ident : $ty:ty),* $(,)? ) $(-> $ret:ty)? ; )*) => {
        #[link(name = "auxstore_c")]
        extern "C" {
            $( $(#[$m])* pub fn $name($($arg: $ty),*) $(-> $ret)?; )*
        }

        /// Every function declared here, with its signature as written.
        pub const DECLARED_FUNCTIONS: &[DeclaredFn] = &[
            $( DeclaredFn {
                name: stringify!($name),
                ret: stringify!($($ret)?),
                params: &[$(stringify!($ty)),*],
            }, )*
        ];

        /// The address of every declared function as the dynamic linker
        /// resolved it (taking them makes the test binary need each symbol).
        pub fn function_addresses() -> Vec<(&'static str, usize)> {
            vec![$( (stringify!($name), $name as *const () as usize), )*]
        }
    };
}

c_api! {
    // ---- status, memory ------------------------------------------------------
    /// The name of a status code ("OK", "NotFound", ..., "IOError", ...), or "Unknown" for a value
    /// that is not a code. Static storage, never freed.
    pub fn auxstore_code_name(code: c_int) -> *const c_char;
    /// Frees anything auxstore returned through a `void**` / `char**` (layer data, readbacks,
    /// metrics text, error messages). NULL is a no-op.
    pub fn auxstore_free(ptr: *mut c_void);
    /// How many times, in this process, a call returning void (a close, destroy, release or cancel)
    /// was given a handle that is not live (a double close or release, a use after one, a pointer
    /// auxstore never handed out). Such a call does nothing, warns once on stderr and counts here.
    pub fn auxstore_misuse_count() -> u64;

    // ---- options ---------------------------------------------------------------
    /// New open options with the defaults: sync durability, 4 MiB chunks, no capacity or TTL limit,
    /// read-write, create if missing. NULL only when out of memory. Free with
    /// [`auxstore_options_destroy`].
    pub fn auxstore_options_create() -> *mut auxstore_options_t;
    /// Frees options (a store opened with them keeps its own copy). NULL is a no-op.
    pub fn auxstore_options_destroy(options: *mut auxstore_options_t);
    /// The store's byte budget (0: unlimited); past it the least recently used snapshots are
    /// evicted.
    pub fn auxstore_options_set_capacity_bytes(options: *mut auxstore_options_t, bytes: u64, errmsg: *mut *mut c_char) -> c_int;
    /// Snapshots older than this expire (0: never).
    pub fn auxstore_options_set_ttl_seconds(options: *mut auxstore_options_t, seconds: u64, errmsg: *mut *mut c_char) -> c_int;
    /// The chunk size stored layers are split into (> 0; `AUXSTORE_INVALID_ARGUMENT` for 0).
    pub fn auxstore_options_set_chunk_bytes(options: *mut auxstore_options_t, bytes: u32, errmsg: *mut *mut c_char) -> c_int;
    /// Threads that copy one read's layers into caller memory at once, when the layers besides
    /// the largest hold a mebibyte or more: 0 (the default) = one per two cores, 2 to 8; 1 = one
    /// layer after another; at most 64.
    pub fn auxstore_options_set_read_lanes(options: *mut auxstore_options_t, lanes: u32, errmsg: *mut *mut c_char) -> c_int;
    /// Whether reads from the shared pool also write local copies (1, the default) or not (0).
    pub fn auxstore_options_set_shared_local_copies(options: *mut auxstore_options_t, local_copies: c_int, errmsg: *mut *mut c_char) -> c_int;
    /// [`AUXSTORE_SYNC`] (every put a synced commit) or [`AUXSTORE_ASYNC`] (durable at
    /// [`auxstore_flush`]).
    pub fn auxstore_options_set_durability(options: *mut auxstore_options_t, durability: c_int, errmsg: *mut *mut c_char) -> c_int;
    /// 1: open read-only (writes are then `AUXSTORE_UNAVAILABLE`); 0: read-write.
    pub fn auxstore_options_set_read_only(options: *mut auxstore_options_t, read_only: c_int, errmsg: *mut *mut c_char) -> c_int;
    /// 1: opening a missing store creates it; 0: it is `AUXSTORE_NOT_FOUND`.
    pub fn auxstore_options_set_create_if_missing(options: *mut auxstore_options_t, create: c_int, errmsg: *mut *mut c_char) -> c_int;
    /// The shared tier: `uri` a `rados://POOL?conf=PATH&namespace=NS...` string (NULL or "": none),
    /// `write_mode` [`AUXSTORE_SHARED_THROUGH`] or [`AUXSTORE_SHARED_BEHIND`], `queue_bytes` > 0 the
    /// behind queue's bound, `shed_when_full` 0 (a put waits for room) or 1 (not queued, counted).
    pub fn auxstore_options_set_shared(options: *mut auxstore_options_t, uri: *const c_char, write_mode: c_int, queue_bytes: u64, shed_when_full: c_int, errmsg: *mut *mut c_char) -> c_int;
    /// Delivers auxstore's warnings and RocksDB's info log at `min_level` (`AUXSTORE_LOG_*`) and
    /// above to `fn_(arg, level, source, message)` instead of any log file. `fn_` may run on any
    /// thread while a store opened with these options is open (its close included), so `arg` must
    /// stay valid that long; it must not block or call auxstore. `fn_` NULL: back to stderr.
    pub fn auxstore_options_set_log_callback(options: *mut auxstore_options_t, fn_: auxstore_log_fn, arg: *mut c_void, min_level: c_int, errmsg: *mut *mut c_char) -> c_int;

    // ---- store -------------------------------------------------------------------
    /// Opens (creating when allowed) the store at `path` (NUL-terminated); `options` NULL for the
    /// defaults. On OK `*out` is a new handle to close with [`auxstore_close`]. `AUXSTORE_BUSY`
    /// when another handle writes the store.
    pub fn auxstore_open(path: *const c_char, options: *const auxstore_options_t, out: *mut *mut auxstore_t, errmsg: *mut *mut c_char) -> c_int;
    /// Closes the store and frees the handle. Destroy the pipelines using it first. NULL is a
    /// no-op; a handle that is not live is counted in [`auxstore_misuse_count`].
    pub fn auxstore_close(db: *mut auxstore_t);
    /// Registers (idempotently) a model id and geometry; `*ns_out` receives the namespace id, a
    /// stable fingerprint of both.
    pub fn auxstore_register_namespace(db: *mut auxstore_t, model_id: *const c_char, geometry: *const auxstore_geometry_t, ns_out: *mut u64, errmsg: *mut *mut c_char) -> c_int;
    /// Registers (idempotently) a namespace with its whole identity ([`auxstore_namespace_t`],
    /// `struct_size` set); `*ns_out` receives its id.
    pub fn auxstore_register_namespace_ex(db: *mut auxstore_t, ns: *const auxstore_namespace_t, ns_out: *mut u64, errmsg: *mut *mut c_char) -> c_int;
    /// Writes a snapshot of `n_layers` layers (unique indices, each checked against the namespace's
    /// geometry first; nothing is written on failure). A prefix already stored: OK, nothing
    /// written. `prefix` points to 16 bytes; the layers' data is only read during the call.
    pub fn auxstore_put_snapshot(db: *mut auxstore_t, ns: u64, prefix: *const u8, token_count: u64, n_layers: usize, layers: *const auxstore_layer_t, errmsg: *mut *mut c_char) -> c_int;
    /// [`auxstore_put_snapshot`] that also stores `token_digest` (16 bytes,
    /// [`auxstore_token_digest`] of the tokens the prefix covers), which
    /// [`auxstore_longest_prefix_for_tokens`] then checks.
    pub fn auxstore_put_snapshot_with_digest(db: *mut auxstore_t, ns: u64, prefix: *const u8, token_count: u64, token_digest: *const u8, n_layers: usize, layers: *const auxstore_layer_t, errmsg: *mut *mut c_char) -> c_int;
    /// [`auxstore_put_snapshot`] with `options` (NULL: none): a token digest and a block chain
    /// storing QSA/DSA rows in shared pages. A bad chain is `AUXSTORE_INVALID_ARGUMENT` and nothing
    /// is written.
    pub fn auxstore_put_snapshot_ex(db: *mut auxstore_t, ns: u64, prefix: *const u8, token_count: u64, n_layers: usize, layers: *const auxstore_layer_t, options: *const auxstore_put_options_t, errmsg: *mut *mut c_char) -> c_int;
    /// Puts `n` snapshots, each as [`auxstore_put_snapshot_ex`] puts it, in order; snapshot i's
    /// code in `results[i]` (`results` may be NULL). A snapshot's own bad argument or refused
    /// layers fail it alone. Returns OK when every snapshot was put, else the first failed one's
    /// code (its message names `snapshots[i]`). On a shared pool the pages of all go in one window.
    pub fn auxstore_put_snapshots(db: *mut auxstore_t, snapshots: *const auxstore_snapshot_put_t, n: usize, results: *mut c_int, errmsg: *mut *mut c_char) -> c_int;
    /// The longest stored prefix among `n` candidates (shortest first): OK with its index in
    /// `*found_index`, or `AUXSTORE_NOT_FOUND` when none is stored.
    pub fn auxstore_longest_prefix(db: *mut auxstore_t, ns: u64, candidates: *const [u8; 16], n: usize, found_index: *mut usize, errmsg: *mut *mut c_char) -> c_int;
    /// The longest stored prefix of `tokens` at every block boundary ([`auxstore_prefix_hash`] with
    /// `block_size` and `salt`), token digest checked when stored: OK with the prefix (16 bytes to
    /// `prefix_out`) and the tokens it covers, or `AUXSTORE_NOT_FOUND`.
    pub fn auxstore_longest_prefix_for_tokens(db: *mut auxstore_t, ns: u64, tokens: *const u32, n_tokens: usize, block_size: u32, salt: u64, prefix_out: *mut u8, tokens_out: *mut u64, errmsg: *mut *mut c_char) -> c_int;
    /// A stored snapshot's manifest: its token count and up to `capacity` layer descriptions;
    /// `*n_layers` receives how many it has (`AUXSTORE_OUT_OF_RANGE`, with `*n_layers` set, when
    /// `capacity` is too small). `layers` may be NULL when `capacity` is 0.
    pub fn auxstore_get_manifest(db: *mut auxstore_t, ns: u64, prefix: *const u8, token_count: *mut u64, layers: *mut auxstore_layer_info_t, capacity: usize, n_layers: *mut usize, errmsg: *mut *mut c_char) -> c_int;
    /// One whole layer, every checksum verified (a mismatch: `AUXSTORE_CORRUPTION`, and the
    /// snapshot is quarantined). `*data` is malloc'd (non-NULL even for 0 bytes): the caller frees
    /// it with [`auxstore_free`].
    pub fn auxstore_get_layer(db: *mut auxstore_t, ns: u64, prefix: *const u8, layer: u32, data: *mut *mut c_void, size: *mut usize, errmsg: *mut *mut c_char) -> c_int;

    // ---- leases, batched lookups, reads into caller memory -------------------------
    /// Leases a snapshot for `lease_ms`: pinned against eviction, TTL expiry and compaction until
    /// released, given to a restore that completes, or expired. `*lease_out` receives the id (never
    /// 0).
    pub fn auxstore_lease_acquire(db: *mut auxstore_t, ns: u64, prefix: *const u8, lease_ms: u64, lease_out: *mut u64, errmsg: *mut *mut c_char) -> c_int;
    /// Releases a lease; `AUXSTORE_NOT_FOUND` when it is unknown, expired or already released.
    pub fn auxstore_lease_release(db: *mut auxstore_t, lease: u64, errmsg: *mut *mut c_char) -> c_int;
    /// [`auxstore_longest_prefix`] that also leases what it found, in one step.
    pub fn auxstore_longest_prefix_leased(db: *mut auxstore_t, ns: u64, candidates: *const [u8; 16], n: usize, lease_ms: u64, found_index: *mut usize, lease_out: *mut u64, errmsg: *mut *mut c_char) -> c_int;
    /// [`auxstore_longest_prefix_for_tokens`] that also leases what it found.
    pub fn auxstore_longest_prefix_for_tokens_leased(db: *mut auxstore_t, ns: u64, tokens: *const u32, n_tokens: usize, block_size: u32, salt: u64, lease_ms: u64, prefix_out: *mut u8, tokens_out: *mut u64, lease_out: *mut u64, errmsg: *mut *mut c_char) -> c_int;
    /// Which of `n` prefixes are stored, in one batched lookup: `found[i]` 1 or 0 and, when
    /// `token_counts` is not NULL, each found one's token count (both arrays of `n`). Counts no hit
    /// and changes no recency.
    pub fn auxstore_get_manifests(db: *mut auxstore_t, ns: u64, prefixes: *const [u8; 16], n: usize, found: *mut u8, token_counts: *mut u64, errmsg: *mut *mut c_char) -> c_int;
    /// Reads `n` layers of one snapshot straight into the callers' buffers, verifying each chunk as
    /// it is copied; sets each `dests[i].size`. `AUXSTORE_OUT_OF_RANGE` (nothing read) when a
    /// capacity is too small; `AUXSTORE_CORRUPTION` quarantines the snapshot (the buffers then hold
    /// partial bytes).
    pub fn auxstore_read_layers(db: *mut auxstore_t, ns: u64, prefix: *const u8, dests: *mut auxstore_layer_dest_t, n: usize, errmsg: *mut *mut c_char) -> c_int;
    /// Removes a snapshot durably (a synced commit); one not stored: OK.
    pub fn auxstore_erase(db: *mut auxstore_t, ns: u64, prefix: *const u8, errmsg: *mut *mut c_char) -> c_int;
    /// Makes every snapshot accepted so far durable.
    pub fn auxstore_flush(db: *mut auxstore_t, errmsg: *mut *mut c_char) -> c_int;
    /// The store's counters and gauges into `*out` (docs/metrics.md).
    pub fn auxstore_stats(db: *mut auxstore_t, out: *mut auxstore_stats_t, errmsg: *mut *mut c_char) -> c_int;
    /// The shared tier's counters (`out->struct_size` set first).
    pub fn auxstore_shared_stats(db: *mut auxstore_t, out: *mut auxstore_shared_stats_t, errmsg: *mut *mut c_char) -> c_int;
    /// Prometheus text (format 0.0.4) of the store's metrics and, when `pipeline` is not NULL, the
    /// pipeline's; `db` or `pipeline` may be NULL, not both. `labels` (may be NULL) goes on every
    /// sample. `*text` is malloc'd: free it with [`auxstore_free`].
    pub fn auxstore_metrics_text(db: *mut auxstore_t, pipeline: *const auxstore_pipeline_t, labels: *const c_char, text: *mut *mut c_char, errmsg: *mut *mut c_char) -> c_int;

    // ---- prefix hashes ------------------------------------------------------------------
    /// Chained block hashes of `tokens` (one per complete block of `block_size`, shortest first)
    /// seeded with `salt`, 16 bytes each into `out`; `*n_out` receives `n_tokens / block_size`
    /// (`AUXSTORE_OUT_OF_RANGE`, nothing written, when that exceeds `capacity`).
    pub fn auxstore_prefix_hash(tokens: *const u32, n_tokens: usize, block_size: u32, salt: u64, out: *mut [u8; 16], capacity: usize, n_out: *mut usize, errmsg: *mut *mut c_char) -> c_int;
    /// How many LEADING `prefixes` (`n`, NULL when 0) are stored, in `*count`: the consecutive-hit
    /// count from index 0; the first looked up alone, the rest in one batched lookup. Counts no hit,
    /// changes no recency.
    pub fn auxstore_count_leading_stored(db: *mut auxstore_t, ns: u64, prefixes: *const [u8; 16], n: usize, count: *mut usize, errmsg: *mut *mut c_char) -> c_int;
    /// How many LEADING pages of a block chain (`n_blocks` chained hashes of `block_size`-token
    /// blocks) the namespace stores, in `*pages`; `*page_tokens` (may be NULL) the tokens of a page.
    pub fn auxstore_count_leading_pages(db: *mut auxstore_t, ns: u64, block_chain: *const [u8; 16], n_blocks: usize, block_size: u32, pages: *mut usize, page_tokens: *mut u32, errmsg: *mut *mut c_char) -> c_int;
    /// Looks up `n` prefixes and leases each one stored for `lease_ms` in one batched lookup:
    /// `leases[i]` its lease (0: not stored), `*leading` (may be NULL) how many LEADING ones are.
    pub fn auxstore_lookup_leased(db: *mut auxstore_t, ns: u64, prefixes: *const [u8; 16], n: usize, lease_ms: u64, leases: *mut u64, leading: *mut usize, errmsg: *mut *mut c_char) -> c_int;
    /// Releases `n` leases, skipping 0 and ones already gone; `*released` (may be NULL) counts the
    /// ones released. Every lease is tried; the first other error is returned.
    pub fn auxstore_lease_release_many(db: *mut auxstore_t, leases: *const u64, n: usize, released: *mut usize, errmsg: *mut *mut c_char) -> c_int;
    /// Rows `[first_row, last_row)` of every array of a QSA/DSA layer into `dst` (`capacity` bytes),
    /// array after array; the whole layer is verified, only those rows copied. `*size` (may be NULL)
    /// the bytes written, `*rows` (may be NULL) the layer's rows in all.
    pub fn auxstore_read_layer_rows(db: *mut auxstore_t, ns: u64, prefix: *const u8, layer: u32, first_row: u64, last_row: u64, dst: *mut c_void, capacity: usize, size: *mut usize, rows: *mut u64, errmsg: *mut *mut c_char) -> c_int;
    /// Registers `size` bytes at `data` with `db` as a read target (docs/c-abi.md).
    pub fn auxstore_register_host_buffer(db: *mut auxstore_t, data: *mut c_void, size: usize, out: *mut *mut auxstore_host_buffer_t, errmsg: *mut *mut c_char) -> c_int;
    /// Unregisters it; `AUXSTORE_BUSY` while an unreleased read targets it.
    pub fn auxstore_unregister_host_buffer(buffer: *mut auxstore_host_buffer_t, errmsg: *mut *mut c_char) -> c_int;
    /// Starts reading `n` targets into registered buffers; returns at once with `*out`.
    pub fn auxstore_host_read_start(db: *mut auxstore_t, targets: *const auxstore_host_read_target_t, n: usize, out: *mut *mut auxstore_host_read_t, errmsg: *mut *mut c_char) -> c_int;
    /// Starts putting `n` snapshots whose layers lie in registered buffers; target i is snapshot i.
    pub fn auxstore_host_put_start(db: *mut auxstore_t, snapshots: *const auxstore_host_put_t, n: usize, out: *mut *mut auxstore_host_read_t, errmsg: *mut *mut c_char) -> c_int;
    /// [`auxstore_host_put_start`] with put options per snapshot (`options`: NULL, or `n` pointers, each NULL or one).
    pub fn auxstore_host_put_start_ex(db: *mut auxstore_t, snapshots: *const auxstore_host_put_t, n: usize, options: *const *const auxstore_put_options_t, out: *mut *mut auxstore_host_read_t, errmsg: *mut *mut c_char) -> c_int;
    /// 1 when every target is done, 0 while some run, -1 for a handle not live.
    pub fn auxstore_host_read_poll(read: *const auxstore_host_read_t) -> c_int;
    /// 1 when target `i` is done, 0 while it runs, -1 for a bad handle or `i`.
    pub fn auxstore_host_read_target_done(read: *const auxstore_host_read_t, i: usize) -> c_int;
    /// Waits for target `i`: its result and the layer's size.
    pub fn auxstore_host_read_wait_target(read: *mut auxstore_host_read_t, i: usize, size: *mut usize, errmsg: *mut *mut c_char) -> c_int;
    /// Waits for every target of the snapshot (`ns`, `prefix`, 16 bytes): OK or the first failed target's error.
    pub fn auxstore_host_read_wait_snapshot(read: *mut auxstore_host_read_t, ns: u64, prefix: *const u8, errmsg: *mut *mut c_char) -> c_int;
    /// Waits for every target: OK or the first failed target's error.
    pub fn auxstore_host_read_wait(read: *mut auxstore_host_read_t, errmsg: *mut *mut c_char) -> c_int;
    /// The snapshots (ns, prefix) whose every target completed since the last call, each once.
    pub fn auxstore_host_read_finished(read: *mut auxstore_host_read_t, snapshots: *mut auxstore_snapshot_ref_t, capacity: usize, n: *mut usize, errmsg: *mut *mut c_char) -> c_int;
    /// Targets not started end `AUXSTORE_UNAVAILABLE` ("cancelled"); returns at once.
    pub fn auxstore_host_read_cancel(read: *mut auxstore_host_read_t);
    /// Cancels what has not started, waits for the reads in flight, frees the handle.
    pub fn auxstore_host_read_release(read: *mut auxstore_host_read_t);
    /// Digest of the exact token sequence (independent of the prefix hash), 16 bytes into `out`.
    pub fn auxstore_token_digest(tokens: *const u32, n_tokens: usize, salt: u64, out: *mut u8, errmsg: *mut *mut c_char) -> c_int;
    /// The CPU reference of the QSA re-pool kernel: blocks `[0, n_blocks)` of `raw_keys` (`ingested
    /// * qsa_hd` bf16) with the layer's weights (`qsa_hd` bf16 each) into `block_keys_out`
    /// (`n_blocks * qsa_hd` bf16). Refused, nothing written, as the kernel's launch would be.
    pub fn auxstore_qsa_block_pool_host(geometry: *const auxstore_geometry_t, raw_keys: *const c_void, ingested: u64, k_pool_k: *const c_void, k_norm_w: *const c_void, n_blocks: u32, block_keys_out: *mut c_void, errmsg: *mut *mut c_char) -> c_int;

    // ---- backends and device states --------------------------------------------------------
    /// A backend of `kind` (`AUXSTORE_BACKEND_*`; AUTO: CUDA when built and a device is present,
    /// else host; CUDA without one: `AUXSTORE_UNAVAILABLE`), bound to the calling thread's current
    /// CUDA device. Destroy with [`auxstore_backend_destroy`].
    pub fn auxstore_backend_create(kind: c_int, out: *mut *mut auxstore_backend_t, errmsg: *mut *mut c_char) -> c_int;
    /// [`auxstore_backend_create`] bound to CUDA device `device` (`AUXSTORE_INVALID_ARGUMENT` for
    /// an index that does not exist; the host backend ignores it).
    pub fn auxstore_backend_create_on_device(kind: c_int, device: c_int, out: *mut *mut auxstore_backend_t, errmsg: *mut *mut c_char) -> c_int;
    /// The device index the backend is bound to (0 for host); -1 for NULL.
    pub fn auxstore_backend_device(backend: *const auxstore_backend_t) -> c_int;

    // ---- device memory, streams --------------------------------------------------------------
    /// `bytes` of device memory (host backend: host memory auxstore checks every copy against);
    /// `*ptr_out` receives its address. Free with [`auxstore_device_free`].
    pub fn auxstore_device_alloc(backend: *mut auxstore_backend_t, bytes: usize, ptr_out: *mut u64, errmsg: *mut *mut c_char) -> c_int;
    /// Frees memory from [`auxstore_device_alloc`]; an address it did not return is an error.
    pub fn auxstore_device_free(backend: *mut auxstore_backend_t, ptr: u64, errmsg: *mut *mut c_char) -> c_int;
    /// Copies `bytes` host bytes from `src` to `ptr + offset`, asynchronously on `stream`: `src`
    /// must stay valid and unchanged until the stream has passed the copy.
    pub fn auxstore_device_copy_h2d(backend: *mut auxstore_backend_t, ptr: u64, offset: u64, src: *const c_void, bytes: usize, stream: u64, errmsg: *mut *mut c_char) -> c_int;
    /// Copies `bytes` at `ptr + offset` to `dst` after the stream's earlier work; returns once the
    /// bytes are in `dst`.
    pub fn auxstore_device_copy_d2h(backend: *mut auxstore_backend_t, dst: *mut c_void, ptr: u64, offset: u64, bytes: usize, stream: u64, errmsg: *mut *mut c_char) -> c_int;
    /// A new stream (non-blocking on CUDA; an in-order executor on host) into `*stream_out`.
    /// Destroy with [`auxstore_stream_destroy`].
    pub fn auxstore_stream_create(backend: *mut auxstore_backend_t, stream_out: *mut u64, errmsg: *mut *mut c_char) -> c_int;
    /// Waits for the stream's work, then destroys it (not the backend's own stream).
    pub fn auxstore_stream_destroy(backend: *mut auxstore_backend_t, stream: u64, errmsg: *mut *mut c_char) -> c_int;
    /// Waits until the work enqueued on `stream` so far is done.
    pub fn auxstore_stream_synchronize(backend: *mut auxstore_backend_t, stream: u64, errmsg: *mut *mut c_char) -> c_int;
    /// Destroys the backend. Destroy the states and pipelines using it first. NULL is a no-op; a
    /// handle that is not live is counted in [`auxstore_misuse_count`].
    pub fn auxstore_backend_destroy(backend: *mut auxstore_backend_t);
    /// `AUXSTORE_BACKEND_HOST` or `AUXSTORE_BACKEND_CUDA`; -1 for NULL.
    pub fn auxstore_backend_kind(backend: *const auxstore_backend_t) -> c_int;
    /// `"host"` or `"cuda:N"`, valid while the backend lives; `""` for NULL.
    pub fn auxstore_backend_name(backend: *const auxstore_backend_t) -> *const c_char;

    // ---- states ------------------------------------------------------------------------------
    /// A fresh QSA state for a layer of `geometry` (its `qsa_*` fields), owning its device memory;
    /// the weights `k_pool_k` and `k_norm_w` (`qsa_hd` bf16 each, host memory, only read during the
    /// call) are copied to the device. Release with [`auxstore_state_release`].
    pub fn auxstore_qsa_state_create(backend: *mut auxstore_backend_t, geometry: *const auxstore_geometry_t, k_pool_k: *const c_void, k_norm_w: *const c_void, out: *mut *mut auxstore_state_t, errmsg: *mut *mut c_char) -> c_int;
    /// A fresh DSA state of `geometry` (`dsa_index_head_dim`, `dsa_capacity` rows), owning its
    /// device memory.
    pub fn auxstore_dsa_state_create(backend: *mut auxstore_backend_t, geometry: *const auxstore_geometry_t, out: *mut *mut auxstore_state_t, errmsg: *mut *mut c_char) -> c_int;
    /// A fresh opaque state holding up to `capacity` bytes, owning its device memory.
    pub fn auxstore_opaque_state_create(backend: *mut auxstore_backend_t, capacity: u64, out: *mut *mut auxstore_state_t, errmsg: *mut *mut c_char) -> c_int;
    /// A state over the engine's own QSA buffers ([`auxstore_qsa_buffers_t`]) with its counters:
    /// auxstore checks every copy against the declared sizes and never frees the buffers (releasing
    /// the state frees only the handle). The buffers must stay allocated while the state lives.
    pub fn auxstore_qsa_state_borrow(backend: *mut auxstore_backend_t, geometry: *const auxstore_geometry_t, buffers: *const auxstore_qsa_buffers_t, ingested: u64, pooled: u64, out: *mut *mut auxstore_state_t, errmsg: *mut *mut c_char) -> c_int;
    /// A state over the engine's own DSA buffers ([`auxstore_dsa_buffers_t`]) holding `len` rows;
    /// as [`auxstore_qsa_state_borrow`].
    pub fn auxstore_dsa_state_borrow(backend: *mut auxstore_backend_t, geometry: *const auxstore_geometry_t, buffers: *const auxstore_dsa_buffers_t, len: u64, out: *mut *mut auxstore_state_t, errmsg: *mut *mut c_char) -> c_int;
    /// A state over the engine's own opaque buffer of `capacity` bytes holding `size`; as
    /// [`auxstore_qsa_state_borrow`].
    pub fn auxstore_opaque_state_borrow(backend: *mut auxstore_backend_t, buffer: u64, capacity: u64, size: u64, out: *mut *mut auxstore_state_t, errmsg: *mut *mut c_char) -> c_int;
    /// A state's device buffers into `ptrs` (room for 3): QSA raw_keys, block_keys; DSA k_normed,
    /// gate, valid; opaque buffer. `*n` receives how many.
    pub fn auxstore_state_buffers(state: *const auxstore_state_t, ptrs: *mut u64, n: *mut usize, errmsg: *mut *mut c_char) -> c_int;
    /// 1 when the engine owns the state's buffers (a borrowed state), else 0.
    pub fn auxstore_state_is_borrowed(state: *const auxstore_state_t) -> c_int;
    /// Reports what the engine's own kernels wrote (QSA ingested / pooled, DSA len, opaque size;
    /// `pooled` 0 for those), checked as a restored header is.
    pub fn auxstore_state_set_counters(state: *mut auxstore_state_t, count: u64, pooled: u64, errmsg: *mut *mut c_char) -> c_int;
    /// Frees the state's device memory (unless borrowed) and the handle, which is gone even when an
    /// error (the first failure freeing a buffer) is returned. NULL: OK.
    pub fn auxstore_state_release(state: *mut auxstore_state_t, errmsg: *mut *mut c_char) -> c_int;
    /// `AUXSTORE_KIND_*` of the state; 0 for NULL.
    pub fn auxstore_state_kind(state: *const auxstore_state_t) -> c_int;
    /// The state's counters: QSA ingested / DSA len / opaque size in `*count`, QSA pooled blocks in
    /// `*pooled` (0 for the others); either pointer may be NULL.
    pub fn auxstore_state_counters(state: *const auxstore_state_t, count: *mut u64, pooled: *mut u64, errmsg: *mut *mut c_char) -> c_int;
    /// Fills a fresh state from a blob of its kind (what the engine's own ingest would leave),
    /// synchronously; checked as a restore is. `blob` is only read during the call.
    pub fn auxstore_state_load(state: *mut auxstore_state_t, blob: *const c_void, size: usize, errmsg: *mut *mut c_char) -> c_int;
    /// Host readback of the state's current blob (the bytes a snapshot of it holds). `*data` is
    /// malloc'd: free it with [`auxstore_free`].
    pub fn auxstore_state_read(state: *const auxstore_state_t, data: *mut *mut c_void, size: *mut usize, errmsg: *mut *mut c_char) -> c_int;
    /// Host readback of a QSA state's pooled block keys (`pooled * qsa_hd` bf16). `*data` is
    /// malloc'd: free it with [`auxstore_free`].
    pub fn auxstore_qsa_state_read_block_keys(state: *const auxstore_state_t, data: *mut *mut c_void, size: *mut usize, errmsg: *mut *mut c_char) -> c_int;

    // ---- restore pipeline ----------------------------------------------------------------------
    /// A pipeline (restores store -> states, write-behind snapshots) over `db` and `backend` with
    /// the default options. Destroy it before either with [`auxstore_pipeline_destroy`].
    pub fn auxstore_pipeline_create(db: *mut auxstore_t, backend: *mut auxstore_backend_t, out: *mut *mut auxstore_pipeline_t, errmsg: *mut *mut c_char) -> c_int;
    /// Waits for running restores and accepted snapshots, then frees the pipeline. NULL is a no-op.
    pub fn auxstore_pipeline_destroy(pipeline: *mut auxstore_pipeline_t);
    /// Starts restoring snapshot (`ns`, `prefix`) into `n` fresh targets; `done(arg, code,
    /// message)` is called once, on a pipeline thread, when it ends. OK: started (errors found
    /// later go to `done`); an error: refused, `done` is not called. The targets must not be used
    /// or released until `done` ran.
    pub fn auxstore_restore(pipeline: *mut auxstore_pipeline_t, ns: u64, prefix: *const u8, targets: *const auxstore_restore_target_t, n: usize, done: auxstore_restore_done_fn, arg: *mut c_void, errmsg: *mut *mut c_char) -> c_int;
    /// Restores snapshot (`ns`, `prefix`) into `n` fresh targets and waits for the result. On
    /// failure no counter moves.
    pub fn auxstore_restore_wait(pipeline: *mut auxstore_pipeline_t, ns: u64, prefix: *const u8, targets: *const auxstore_restore_target_t, n: usize, errmsg: *mut *mut c_char) -> c_int;

    // ---- pipeline options, stats, write-behind snapshots -------------------------------------
    /// Fills `struct_size` and the defaults (4 x 4 MiB staging, 2 I/O threads, 2 layers in flight,
    /// 8 snapshots and 64 MiB queued).
    pub fn auxstore_pipeline_options_init(options: *mut auxstore_pipeline_options_t);
    /// [`auxstore_pipeline_create`] with `options` (NULL: the defaults; `staging_bytes` at least
    /// the store's chunk size).
    pub fn auxstore_pipeline_create_with(db: *mut auxstore_t, backend: *mut auxstore_backend_t, options: *const auxstore_pipeline_options_t, out: *mut *mut auxstore_pipeline_t, errmsg: *mut *mut c_char) -> c_int;
    /// The pipeline's own stream (restores started without a stream run on it).
    pub fn auxstore_pipeline_stream(pipeline: *const auxstore_pipeline_t) -> u64;
    /// The pipeline's counters and restore histograms into `*out`.
    pub fn auxstore_pipeline_stats(pipeline: *const auxstore_pipeline_t, out: *mut auxstore_pipeline_stats_t, errmsg: *mut *mut c_char) -> c_int;
    /// Write-behind snapshot: the sources' bytes are copied D2H on `stream` (ordered after the
    /// engine's kernels) into pinned memory and written to the store off the caller's thread. OK:
    /// accepted (the sources may change once `stream` passed the copies); `AUXSTORE_CAPACITY`:
    /// shed, nothing enqueued.
    pub fn auxstore_snapshot(pipeline: *mut auxstore_pipeline_t, ns: u64, prefix: *const u8, token_count: u64, sources: *const auxstore_snapshot_source_t, n: usize, stream: u64, errmsg: *mut *mut c_char) -> c_int;
    /// [`auxstore_snapshot`] put with `options` (NULL: none), as [`auxstore_put_snapshot_ex`]; a
    /// bad chain is refused before anything is enqueued.
    pub fn auxstore_snapshot_ex(pipeline: *mut auxstore_pipeline_t, ns: u64, prefix: *const u8, token_count: u64, sources: *const auxstore_snapshot_source_t, n: usize, stream: u64, options: *const auxstore_put_options_t, errmsg: *mut *mut c_char) -> c_int;
    /// [`auxstore_snapshot_ex`] with a per-snapshot completion (`done` not null), called once
    /// for an accepted snapshot when its write ends.
    pub fn auxstore_snapshot_with_done(pipeline: *mut auxstore_pipeline_t, ns: u64, prefix: *const u8, token_count: u64, sources: *const auxstore_snapshot_source_t, n: usize, stream: u64, options: *const auxstore_put_options_t, done: auxstore_snapshot_done_fn, arg: *mut c_void, errmsg: *mut *mut c_char) -> c_int;
    /// Waits until every accepted snapshot is written; the first write error since the last flush.
    pub fn auxstore_pipeline_flush(pipeline: *mut auxstore_pipeline_t, errmsg: *mut *mut c_char) -> c_int;

    // ---- restores with a handle ----------------------------------------------------------------
    /// Fills `struct_size` and the defaults (the pipeline's own stream, no lease, no callbacks).
    pub fn auxstore_restore_options_init(options: *mut auxstore_restore_options_t);
    /// Starts a restore into `n` fresh targets; OK: `*out` is its handle (release with
    /// [`auxstore_restore_handle_release`]) and errors found later are the handle's result. The
    /// targets must not be used or released until the restore is done. On failure no counter moves.
    pub fn auxstore_restore_start(pipeline: *mut auxstore_pipeline_t, ns: u64, prefix: *const u8, targets: *const auxstore_restore_target_t, n: usize, options: *const auxstore_restore_options_t, out: *mut *mut auxstore_restore_handle_t, errmsg: *mut *mut c_char) -> c_int;
    /// 1 when the restore is done, 0 while it runs; -1 for NULL.
    pub fn auxstore_restore_poll(handle: *const auxstore_restore_handle_t) -> c_int;
    /// Waits until the restore is done; its result (`AUXSTORE_UNAVAILABLE` when cancelled).
    pub fn auxstore_restore_join(handle: *mut auxstore_restore_handle_t, errmsg: *mut *mut c_char) -> c_int;
    /// Asks the restore to stop; it then ends `AUXSTORE_UNAVAILABLE` ("cancelled") unless it
    /// already committed. Returns at once.
    pub fn auxstore_restore_cancel(handle: *mut auxstore_restore_handle_t);
    /// 1 when `layer`'s bytes (and QSA re-pool) are on the device, else 0.
    pub fn auxstore_restore_layer_done(handle: *const auxstore_restore_handle_t, layer: u32) -> c_int;
    /// Waits until `layer` is done (OK) or the restore failed before it (its error). Counters are
    /// committed only when the whole restore is.
    pub fn auxstore_restore_wait_layer(handle: *mut auxstore_restore_handle_t, layer: u32, errmsg: *mut *mut c_char) -> c_int;
    /// Makes `stream` wait, on the device, for `layer`; blocks the host only until the layer's work
    /// is enqueued.
    pub fn auxstore_restore_stream_wait_layer(handle: *mut auxstore_restore_handle_t, layer: u32, stream: u64, errmsg: *mut *mut c_char) -> c_int;
    /// Makes `stream` wait, on the device, for every layer.
    pub fn auxstore_restore_stream_wait_all(handle: *mut auxstore_restore_handle_t, stream: u64, errmsg: *mut *mut c_char) -> c_int;
    /// The layers done so far, ascending, up to `capacity`; `*n` receives how many
    /// (`AUXSTORE_OUT_OF_RANGE`, with `*n` set, when `capacity` is too small).
    pub fn auxstore_restore_layers_done(handle: *const auxstore_restore_handle_t, layers: *mut u32, capacity: usize, n: *mut usize, errmsg: *mut *mut c_char) -> c_int;
    /// Frees the handle; a restore still running goes on (keep its targets until it is done). NULL
    /// is a no-op. Release handles before their backend.
    pub fn auxstore_restore_handle_release(handle: *mut auxstore_restore_handle_t);

    // ---- many snapshots into device states, one handle ---------------------------------------
    /// Restores `n` snapshots with one handle: every snapshot checked first (nothing started on a
    /// refusal), then one pipeline restore each, all at once.
    pub fn auxstore_restore_batch_start(pipeline: *mut auxstore_pipeline_t, snapshots: *const auxstore_restore_snapshot_t, n: usize, options: *const auxstore_restore_options_t, out: *mut *mut auxstore_restore_batch_t, errmsg: *mut *mut c_char) -> c_int;
    /// 1 when every snapshot is done, 0 while some run, -1 for a handle not live.
    pub fn auxstore_restore_batch_poll(batch: *const auxstore_restore_batch_t) -> c_int;
    /// 1 when snapshot `i` is done, 0 while it runs, -1 for a bad handle or `i`.
    pub fn auxstore_restore_batch_snapshot_done(batch: *const auxstore_restore_batch_t, i: usize) -> c_int;
    /// 1 when `layer` of snapshot `i` is on the device, else 0 (-1 as above).
    pub fn auxstore_restore_batch_layer_done(batch: *const auxstore_restore_batch_t, i: usize, layer: u32) -> c_int;
    /// Waits for snapshot `i`: its result.
    pub fn auxstore_restore_batch_wait_snapshot(batch: *mut auxstore_restore_batch_t, i: usize, errmsg: *mut *mut c_char) -> c_int;
    /// Waits for `layer` of snapshot `i`.
    pub fn auxstore_restore_batch_wait_layer(batch: *mut auxstore_restore_batch_t, i: usize, layer: u32, errmsg: *mut *mut c_char) -> c_int;
    /// Waits for every snapshot: OK or the first failed one's error.
    pub fn auxstore_restore_batch_wait(batch: *mut auxstore_restore_batch_t, errmsg: *mut *mut c_char) -> c_int;
    /// The snapshot indices done since the last call, each once, ascending.
    pub fn auxstore_restore_batch_finished(batch: *mut auxstore_restore_batch_t, indices: *mut usize, capacity: usize, n: *mut usize, errmsg: *mut *mut c_char) -> c_int;
    /// Asks every restore to stop; returns at once.
    pub fn auxstore_restore_batch_cancel(batch: *mut auxstore_restore_batch_t);
    /// Frees the handle; restores still running go on.
    pub fn auxstore_restore_batch_release(batch: *mut auxstore_restore_batch_t);
}

/// The `c.h` this crate was built against (found by build.rs; the crate's
/// tests parse it and compare it with [`DECLARED_FUNCTIONS`]).
pub const C_HEADER_PATH: &str = env!("AUXSTORE_SYS_C_H");

/// The folder libauxstore_c.so was linked from (build.rs; empty when
/// pkg-config named no `-L` folder).
pub const LIB_DIR: &str = env!("AUXSTORE_SYS_LIB_DIR");
