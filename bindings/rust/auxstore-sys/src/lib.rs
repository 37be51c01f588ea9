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
//! Linking (build.rs): `AUXSTORE_LIB_DIR` (a build tree's folder holding
//! libauxstore_c.so, e.g. `build/capi`), else `AUXSTORE_PREFIX` (an install
//! prefix: `$AUXSTORE_PREFIX/lib`), else `pkg-config --libs auxstore`.
#![allow(non_camel_case_types)]
#![allow(clippy::missing_safety_doc)]

use std::marker::{PhantomData, PhantomPinned};
pub use std::os::raw::{c_char, c_int, c_void};

// ---- status codes (auxstore::StatusCode) ------------------------------------
pub const AUXSTORE_OK: c_int = 0;
pub const AUXSTORE_NOT_FOUND: c_int = 1;
pub const AUXSTORE_CORRUPTION: c_int = 2;
pub const AUXSTORE_INVALID_ARGUMENT: c_int = 3;
pub const AUXSTORE_OUT_OF_RANGE: c_int = 4;
pub const AUXSTORE_CAPACITY: c_int = 5;
pub const AUXSTORE_IO_ERROR: c_int = 6;
pub const AUXSTORE_BUSY: c_int = 7;
pub const AUXSTORE_UNAVAILABLE: c_int = 8;
pub const AUXSTORE_NOT_SUPPORTED: c_int = 9;
pub const AUXSTORE_INTERNAL: c_int = 10;

// ---- blob kinds, durability, backends -----------------------------------------
pub const AUXSTORE_KIND_QSA: c_int = 1;
pub const AUXSTORE_KIND_DSA: c_int = 2;
pub const AUXSTORE_KIND_OPAQUE: c_int = 3;
pub const AUXSTORE_SYNC: c_int = 0;
pub const AUXSTORE_ASYNC: c_int = 1;
pub const AUXSTORE_BACKEND_AUTO: c_int = 0;
pub const AUXSTORE_BACKEND_HOST: c_int = 1;
pub const AUXSTORE_BACKEND_CUDA: c_int = 2;

// ---- log levels ------------------------------------------------------------------
pub const AUXSTORE_LOG_DEBUG: c_int = 0;
pub const AUXSTORE_LOG_INFO: c_int = 1;
pub const AUXSTORE_LOG_WARN: c_int = 2;
pub const AUXSTORE_LOG_ERROR: c_int = 3;

// ---- element types of a declared opaque layer (auxstore::DType) ------------------
pub const AUXSTORE_DTYPE_U8: c_int = 1;
pub const AUXSTORE_DTYPE_I8: c_int = 2;
pub const AUXSTORE_DTYPE_BF16: c_int = 3;
pub const AUXSTORE_DTYPE_F16: c_int = 4;
pub const AUXSTORE_DTYPE_F32: c_int = 5;
pub const AUXSTORE_DTYPE_I32: c_int = 6;
pub const AUXSTORE_DTYPE_F64: c_int = 7;
pub const AUXSTORE_DTYPE_I64: c_int = 8;

// ---- pipeline histograms -----------------------------------------------------------
pub const AUXSTORE_LATENCY_BUCKETS: usize = 24;
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
}

// ---- plain types ------------------------------------------------------------------------

/// A namespace's geometry (`qsa_hd == 0`: no QSA layers; `dsa_index_head_dim
/// == 0`: no DSA layers).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct auxstore_geometry_t {
    pub qsa_hd: u32,
    pub qsa_max_tokens: u32,
    pub qsa_ratio: u32,
    pub qsa_rot: u32,
    pub qsa_theta: f32,
    pub qsa_eps: f32,
    pub dsa_index_head_dim: u32,
    pub dsa_capacity: u32,
}

/// One layer of a snapshot to write.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct auxstore_layer_t {
    pub layer: u32,
    pub kind: u32,
    pub data: *const c_void,
    pub size: usize,
}

/// One layer of a stored snapshot, as its manifest describes it.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct auxstore_layer_info_t {
    pub layer: u32,
    pub kind: u32,
    pub bytes: u64,
    pub xxh3: u64,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct auxstore_stats_t {
    pub snapshots: u64,
    pub payload_bytes: u64,
    pub hits: u64,
    pub misses: u64,
    pub puts: u64,
    pub duplicate_puts: u64,
    pub evictions: u64,
    pub expirations: u64,
    pub quarantines: u64,
    pub orphans_seen: u64,
    pub orphans_removed: u64,
    pub commit_seq: u64,
    pub durable_watermark: u64,
    pub lost_commits_at_open: u64,
    pub bytes_written: u64,
    pub bytes_read: u64,
    pub capacity_bytes: u64,
    pub leases: u64,
    pub index_ready: c_int,
    pub fenced: c_int,
    pub unique_bytes: u64,
}

/// Where a restore puts one layer.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct auxstore_restore_target_t {
    pub layer: u32,
    pub state: *mut auxstore_state_t,
}

/// `fn(arg, level, source, message)`: see `auxstore_options_set_log_callback`.
pub type auxstore_log_fn =
    Option<unsafe extern "C" fn(arg: *mut c_void, level: c_int, source: *const c_char, message: *const c_char)>;

/// An opaque layer's declared shape.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct auxstore_opaque_layer_desc_t {
    pub layer: u32,
    pub dtype: u32,
    pub ndim: u32,
    pub shape: [u64; 8],
}

/// A namespace's whole identity (`struct_size = size_of::<Self>()`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct auxstore_namespace_t {
    pub struct_size: usize,
    pub model_id: *const c_char,
    pub weight_revision: *const c_char,
    pub tp_rank: u32,
    pub tp_world_size: u32,
    pub geometry: auxstore_geometry_t,
    pub n_opaque_layers: usize,
    pub opaque_layers: *const auxstore_opaque_layer_desc_t,
    pub page_tokens: u32,
}

/// How a snapshot is put (`struct_size = size_of::<Self>()`): a token
/// digest and the block chain that stores QSA/DSA rows in shared pages.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct auxstore_put_options_t {
    pub struct_size: usize,
    pub token_digest: *const u8,
    pub block_chain: *const [u8; 16],
    pub n_blocks: usize,
    pub block_size: u32,
}

/// One layer into memory the caller provides.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct auxstore_layer_dest_t {
    pub layer: u32,
    pub data: *mut c_void,
    pub capacity: usize,
    pub size: usize,
}

/// An engine-owned QSA layer's device buffers.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct auxstore_qsa_buffers_t {
    pub raw_keys: u64,
    pub raw_keys_bytes: u64,
    pub block_keys: u64,
    pub block_keys_bytes: u64,
    pub k_pool_k: u64,
    pub k_norm_w: u64,
}

/// An engine-owned DSA layer's device buffers.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct auxstore_dsa_buffers_t {
    pub capacity_rows: u64,
    pub k_normed: u64,
    pub k_normed_bytes: u64,
    pub gate: u64,
    pub gate_bytes: u64,
    pub valid: u64,
    pub valid_bytes: u64,
}

/// Called once when a restore ends (`message` NULL on success).
pub type auxstore_restore_done_fn = Option<unsafe extern "C" fn(arg: *mut c_void, code: c_int, message: *const c_char)>;

#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct auxstore_pipeline_options_t {
    pub struct_size: usize,
    pub staging_buffers: usize,
    pub staging_bytes: usize,
    pub io_threads: usize,
    pub restore_read_ahead: usize,
    pub snapshot_queue: usize,
    pub snapshot_bytes: u64,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct auxstore_pipeline_stats_t {
    pub restores_ok: u64,
    pub restores_failed: u64,
    pub restores_cancelled: u64,
    pub restores_running: u64,
    pub bytes_restored: u64,
    pub snapshots_accepted: u64,
    pub snapshots_shed: u64,
    pub snapshots_written: u64,
    pub snapshots_failed: u64,
    pub bytes_snapshotted: u64,
    pub staging_waits: u64,
    pub restore_latency_us: [u64; AUXSTORE_LATENCY_BUCKETS],
    pub restore_latency_us_sum: u64,
    pub restore_throughput_mibps: [u64; AUXSTORE_THROUGHPUT_BUCKETS],
    pub restore_throughput_mibps_sum: f64,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct auxstore_snapshot_source_t {
    pub layer: u32,
    pub state: *const auxstore_state_t,
}

/// Called once per layer when its bytes (and QSA re-pool) are on the device.
pub type auxstore_layer_done_fn = Option<unsafe extern "C" fn(arg: *mut c_void, layer: u32)>;

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct auxstore_restore_options_t {
    pub struct_size: usize,
    pub use_stream: c_int,
    pub stream: u64,
    pub lease: u64,
    pub on_layer: auxstore_layer_done_fn,
    pub on_layer_arg: *mut c_void,
    pub done: auxstore_restore_done_fn,
    pub done_arg: *mut c_void,
}

/// One function this crate declares: its name, return type and parameter
/// types as written here (compared with `c.h` by the crate's tests).
#[derive(Debug, Clone, Copy)]
pub struct DeclaredFn {
    pub name: &'static str,
    pub ret: &'static str,
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
    pub fn auxstore_code_name(code: c_int) -> *const c_char;
    pub fn auxstore_free(ptr: *mut c_void);
    pub fn auxstore_misuse_count() -> u64;

    // ---- options ---------------------------------------------------------------
    pub fn auxstore_options_create() -> *mut auxstore_options_t;
    pub fn auxstore_options_destroy(options: *mut auxstore_options_t);
    pub fn auxstore_options_set_capacity_bytes(options: *mut auxstore_options_t, bytes: u64, errmsg: *mut *mut c_char) -> c_int;
    pub fn auxstore_options_set_ttl_seconds(options: *mut auxstore_options_t, seconds: u64, errmsg: *mut *mut c_char) -> c_int;
    pub fn auxstore_options_set_chunk_bytes(options: *mut auxstore_options_t, bytes: u32, errmsg: *mut *mut c_char) -> c_int;
    pub fn auxstore_options_set_durability(options: *mut auxstore_options_t, durability: c_int, errmsg: *mut *mut c_char) -> c_int;
    pub fn auxstore_options_set_read_only(options: *mut auxstore_options_t, read_only: c_int, errmsg: *mut *mut c_char) -> c_int;
    pub fn auxstore_options_set_create_if_missing(options: *mut auxstore_options_t, create: c_int, errmsg: *mut *mut c_char) -> c_int;
    pub fn auxstore_options_set_log_callback(options: *mut auxstore_options_t, fn_: auxstore_log_fn, arg: *mut c_void, min_level: c_int, errmsg: *mut *mut c_char) -> c_int;

    // ---- store -------------------------------------------------------------------
    pub fn auxstore_open(path: *const c_char, options: *const auxstore_options_t, out: *mut *mut auxstore_t, errmsg: *mut *mut c_char) -> c_int;
    pub fn auxstore_close(db: *mut auxstore_t);
    pub fn auxstore_register_namespace(db: *mut auxstore_t, model_id: *const c_char, geometry: *const auxstore_geometry_t, ns_out: *mut u64, errmsg: *mut *mut c_char) -> c_int;
    pub fn auxstore_register_namespace_ex(db: *mut auxstore_t, ns: *const auxstore_namespace_t, ns_out: *mut u64, errmsg: *mut *mut c_char) -> c_int;
    pub fn auxstore_put_snapshot(db: *mut auxstore_t, ns: u64, prefix: *const u8, token_count: u64, n_layers: usize, layers: *const auxstore_layer_t, errmsg: *mut *mut c_char) -> c_int;
    pub fn auxstore_put_snapshot_with_digest(db: *mut auxstore_t, ns: u64, prefix: *const u8, token_count: u64, token_digest: *const u8, n_layers: usize, layers: *const auxstore_layer_t, errmsg: *mut *mut c_char) -> c_int;
    pub fn auxstore_put_snapshot_ex(db: *mut auxstore_t, ns: u64, prefix: *const u8, token_count: u64, n_layers: usize, layers: *const auxstore_layer_t, options: *const auxstore_put_options_t, errmsg: *mut *mut c_char) -> c_int;
    pub fn auxstore_longest_prefix(db: *mut auxstore_t, ns: u64, candidates: *const [u8; 16], n: usize, found_index: *mut usize, errmsg: *mut *mut c_char) -> c_int;
    pub fn auxstore_longest_prefix_for_tokens(db: *mut auxstore_t, ns: u64, tokens: *const u32, n_tokens: usize, block_size: u32, salt: u64, prefix_out: *mut u8, tokens_out: *mut u64, errmsg: *mut *mut c_char) -> c_int;
    pub fn auxstore_get_manifest(db: *mut auxstore_t, ns: u64, prefix: *const u8, token_count: *mut u64, layers: *mut auxstore_layer_info_t, capacity: usize, n_layers: *mut usize, errmsg: *mut *mut c_char) -> c_int;
    pub fn auxstore_get_layer(db: *mut auxstore_t, ns: u64, prefix: *const u8, layer: u32, data: *mut *mut c_void, size: *mut usize, errmsg: *mut *mut c_char) -> c_int;

    // ---- leases, batched lookups, reads into caller memory -------------------------
    pub fn auxstore_lease_acquire(db: *mut auxstore_t, ns: u64, prefix: *const u8, lease_ms: u64, lease_out: *mut u64, errmsg: *mut *mut c_char) -> c_int;
    pub fn auxstore_lease_release(db: *mut auxstore_t, lease: u64, errmsg: *mut *mut c_char) -> c_int;
    pub fn auxstore_longest_prefix_leased(db: *mut auxstore_t, ns: u64, candidates: *const [u8; 16], n: usize, lease_ms: u64, found_index: *mut usize, lease_out: *mut u64, errmsg: *mut *mut c_char) -> c_int;
    pub fn auxstore_longest_prefix_for_tokens_leased(db: *mut auxstore_t, ns: u64, tokens: *const u32, n_tokens: usize, block_size: u32, salt: u64, lease_ms: u64, prefix_out: *mut u8, tokens_out: *mut u64, lease_out: *mut u64, errmsg: *mut *mut c_char) -> c_int;
    pub fn auxstore_get_manifests(db: *mut auxstore_t, ns: u64, prefixes: *const [u8; 16], n: usize, found: *mut u8, token_counts: *mut u64, errmsg: *mut *mut c_char) -> c_int;
    pub fn auxstore_read_layers(db: *mut auxstore_t, ns: u64, prefix: *const u8, dests: *mut auxstore_layer_dest_t, n: usize, errmsg: *mut *mut c_char) -> c_int;
    pub fn auxstore_erase(db: *mut auxstore_t, ns: u64, prefix: *const u8, errmsg: *mut *mut c_char) -> c_int;
    pub fn auxstore_flush(db: *mut auxstore_t, errmsg: *mut *mut c_char) -> c_int;
    pub fn auxstore_stats(db: *mut auxstore_t, out: *mut auxstore_stats_t, errmsg: *mut *mut c_char) -> c_int;
    pub fn auxstore_metrics_text(db: *mut auxstore_t, pipeline: *const auxstore_pipeline_t, labels: *const c_char, text: *mut *mut c_char, errmsg: *mut *mut c_char) -> c_int;

    // ---- prefix hashes ------------------------------------------------------------------
    pub fn auxstore_prefix_hash(tokens: *const u32, n_tokens: usize, block_size: u32, salt: u64, out: *mut [u8; 16], capacity: usize, n_out: *mut usize, errmsg: *mut *mut c_char) -> c_int;
    pub fn auxstore_token_digest(tokens: *const u32, n_tokens: usize, salt: u64, out: *mut u8, errmsg: *mut *mut c_char) -> c_int;
    pub fn auxstore_qsa_block_pool_host(geometry: *const auxstore_geometry_t, raw_keys: *const c_void, ingested: u64, k_pool_k: *const c_void, k_norm_w: *const c_void, n_blocks: u32, block_keys_out: *mut c_void, errmsg: *mut *mut c_char) -> c_int;

    // ---- backends and device states --------------------------------------------------------
    pub fn auxstore_backend_create(kind: c_int, out: *mut *mut auxstore_backend_t, errmsg: *mut *mut c_char) -> c_int;
    pub fn auxstore_backend_create_on_device(kind: c_int, device: c_int, out: *mut *mut auxstore_backend_t, errmsg: *mut *mut c_char) -> c_int;
    pub fn auxstore_backend_device(backend: *const auxstore_backend_t) -> c_int;

    // ---- device memory, streams --------------------------------------------------------------
    pub fn auxstore_device_alloc(backend: *mut auxstore_backend_t, bytes: usize, ptr_out: *mut u64, errmsg: *mut *mut c_char) -> c_int;
    pub fn auxstore_device_free(backend: *mut auxstore_backend_t, ptr: u64, errmsg: *mut *mut c_char) -> c_int;
    pub fn auxstore_device_copy_h2d(backend: *mut auxstore_backend_t, ptr: u64, offset: u64, src: *const c_void, bytes: usize, stream: u64, errmsg: *mut *mut c_char) -> c_int;
    pub fn auxstore_device_copy_d2h(backend: *mut auxstore_backend_t, dst: *mut c_void, ptr: u64, offset: u64, bytes: usize, stream: u64, errmsg: *mut *mut c_char) -> c_int;
    pub fn auxstore_stream_create(backend: *mut auxstore_backend_t, stream_out: *mut u64, errmsg: *mut *mut c_char) -> c_int;
    pub fn auxstore_stream_destroy(backend: *mut auxstore_backend_t, stream: u64, errmsg: *mut *mut c_char) -> c_int;
    pub fn auxstore_stream_synchronize(backend: *mut auxstore_backend_t, stream: u64, errmsg: *mut *mut c_char) -> c_int;
    pub fn auxstore_backend_destroy(backend: *mut auxstore_backend_t);
    pub fn auxstore_backend_kind(backend: *const auxstore_backend_t) -> c_int;
    pub fn auxstore_backend_name(backend: *const auxstore_backend_t) -> *const c_char;

    // ---- states ------------------------------------------------------------------------------
    pub fn auxstore_qsa_state_create(backend: *mut auxstore_backend_t, geometry: *const auxstore_geometry_t, k_pool_k: *const c_void, k_norm_w: *const c_void, out: *mut *mut auxstore_state_t, errmsg: *mut *mut c_char) -> c_int;
    pub fn auxstore_dsa_state_create(backend: *mut auxstore_backend_t, geometry: *const auxstore_geometry_t, out: *mut *mut auxstore_state_t, errmsg: *mut *mut c_char) -> c_int;
    pub fn auxstore_opaque_state_create(backend: *mut auxstore_backend_t, capacity: u64, out: *mut *mut auxstore_state_t, errmsg: *mut *mut c_char) -> c_int;
    pub fn auxstore_qsa_state_borrow(backend: *mut auxstore_backend_t, geometry: *const auxstore_geometry_t, buffers: *const auxstore_qsa_buffers_t, ingested: u64, pooled: u64, out: *mut *mut auxstore_state_t, errmsg: *mut *mut c_char) -> c_int;
    pub fn auxstore_dsa_state_borrow(backend: *mut auxstore_backend_t, geometry: *const auxstore_geometry_t, buffers: *const auxstore_dsa_buffers_t, len: u64, out: *mut *mut auxstore_state_t, errmsg: *mut *mut c_char) -> c_int;
    pub fn auxstore_opaque_state_borrow(backend: *mut auxstore_backend_t, buffer: u64, capacity: u64, size: u64, out: *mut *mut auxstore_state_t, errmsg: *mut *mut c_char) -> c_int;
    pub fn auxstore_state_buffers(state: *const auxstore_state_t, ptrs: *mut u64, n: *mut usize, errmsg: *mut *mut c_char) -> c_int;
    pub fn auxstore_state_is_borrowed(state: *const auxstore_state_t) -> c_int;
    pub fn auxstore_state_set_counters(state: *mut auxstore_state_t, count: u64, pooled: u64, errmsg: *mut *mut c_char) -> c_int;
    pub fn auxstore_state_release(state: *mut auxstore_state_t, errmsg: *mut *mut c_char) -> c_int;
    pub fn auxstore_state_kind(state: *const auxstore_state_t) -> c_int;
    pub fn auxstore_state_counters(state: *const auxstore_state_t, count: *mut u64, pooled: *mut u64, errmsg: *mut *mut c_char) -> c_int;
    pub fn auxstore_state_load(state: *mut auxstore_state_t, blob: *const c_void, size: usize, errmsg: *mut *mut c_char) -> c_int;
    pub fn auxstore_state_read(state: *const auxstore_state_t, data: *mut *mut c_void, size: *mut usize, errmsg: *mut *mut c_char) -> c_int;
    pub fn auxstore_qsa_state_read_block_keys(state: *const auxstore_state_t, data: *mut *mut c_void, size: *mut usize, errmsg: *mut *mut c_char) -> c_int;

    // ---- restore pipeline ----------------------------------------------------------------------
    pub fn auxstore_pipeline_create(db: *mut auxstore_t, backend: *mut auxstore_backend_t, out: *mut *mut auxstore_pipeline_t, errmsg: *mut *mut c_char) -> c_int;
    pub fn auxstore_pipeline_destroy(pipeline: *mut auxstore_pipeline_t);
    pub fn auxstore_restore(pipeline: *mut auxstore_pipeline_t, ns: u64, prefix: *const u8, targets: *const auxstore_restore_target_t, n: usize, done: auxstore_restore_done_fn, arg: *mut c_void, errmsg: *mut *mut c_char) -> c_int;
    pub fn auxstore_restore_wait(pipeline: *mut auxstore_pipeline_t, ns: u64, prefix: *const u8, targets: *const auxstore_restore_target_t, n: usize, errmsg: *mut *mut c_char) -> c_int;

    // ---- pipeline options, stats, write-behind snapshots -------------------------------------
    pub fn auxstore_pipeline_options_init(options: *mut auxstore_pipeline_options_t);
    pub fn auxstore_pipeline_create_with(db: *mut auxstore_t, backend: *mut auxstore_backend_t, options: *const auxstore_pipeline_options_t, out: *mut *mut auxstore_pipeline_t, errmsg: *mut *mut c_char) -> c_int;
    pub fn auxstore_pipeline_stream(pipeline: *const auxstore_pipeline_t) -> u64;
    pub fn auxstore_pipeline_stats(pipeline: *const auxstore_pipeline_t, out: *mut auxstore_pipeline_stats_t, errmsg: *mut *mut c_char) -> c_int;
    pub fn auxstore_snapshot(pipeline: *mut auxstore_pipeline_t, ns: u64, prefix: *const u8, token_count: u64, sources: *const auxstore_snapshot_source_t, n: usize, stream: u64, errmsg: *mut *mut c_char) -> c_int;
    pub fn auxstore_snapshot_ex(pipeline: *mut auxstore_pipeline_t, ns: u64, prefix: *const u8, token_count: u64, sources: *const auxstore_snapshot_source_t, n: usize, stream: u64, options: *const auxstore_put_options_t, errmsg: *mut *mut c_char) -> c_int;
    pub fn auxstore_pipeline_flush(pipeline: *mut auxstore_pipeline_t, errmsg: *mut *mut c_char) -> c_int;

    // ---- restores with a handle ----------------------------------------------------------------
    pub fn auxstore_restore_options_init(options: *mut auxstore_restore_options_t);
    pub fn auxstore_restore_start(pipeline: *mut auxstore_pipeline_t, ns: u64, prefix: *const u8, targets: *const auxstore_restore_target_t, n: usize, options: *const auxstore_restore_options_t, out: *mut *mut auxstore_restore_handle_t, errmsg: *mut *mut c_char) -> c_int;
    pub fn auxstore_restore_poll(handle: *const auxstore_restore_handle_t) -> c_int;
    pub fn auxstore_restore_join(handle: *mut auxstore_restore_handle_t, errmsg: *mut *mut c_char) -> c_int;
    pub fn auxstore_restore_cancel(handle: *mut auxstore_restore_handle_t);
    pub fn auxstore_restore_layer_done(handle: *const auxstore_restore_handle_t, layer: u32) -> c_int;
    pub fn auxstore_restore_wait_layer(handle: *mut auxstore_restore_handle_t, layer: u32, errmsg: *mut *mut c_char) -> c_int;
    pub fn auxstore_restore_stream_wait_layer(handle: *mut auxstore_restore_handle_t, layer: u32, stream: u64, errmsg: *mut *mut c_char) -> c_int;
    pub fn auxstore_restore_stream_wait_all(handle: *mut auxstore_restore_handle_t, stream: u64, errmsg: *mut *mut c_char) -> c_int;
    pub fn auxstore_restore_layers_done(handle: *const auxstore_restore_handle_t, layers: *mut u32, capacity: usize, n: *mut usize, errmsg: *mut *mut c_char) -> c_int;
    pub fn auxstore_restore_handle_release(handle: *mut auxstore_restore_handle_t);
}

/// The `c.h` this crate was built against (found by build.rs; the crate's
/// tests parse it and compare it with [`DECLARED_FUNCTIONS`]).
pub const C_HEADER_PATH: &str = env!("AUXSTORE_SYS_C_H");

/// The folder libauxstore_c.so was linked from (build.rs; empty when
/// pkg-config named no `-L` folder).
pub const LIB_DIR: &str = env!("AUXSTORE_SYS_LIB_DIR");
