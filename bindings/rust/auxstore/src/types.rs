//! Plain values: prefixes, geometry, kinds, manifests, stats, options.
use crate::error::{Error, Result};
use crate::sys;
use std::fmt;
use std::os::raw::{c_int, c_void};

/// A 128-bit prefix key (the engine's own prefix hash, or one of
/// [`crate::prefix_hashes`]).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
#[repr(transparent)]
pub struct Prefix(pub [u8; 16]);

impl fmt::Debug for Prefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Prefix(")?;
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        write!(f, ")")
    }
}

/// Digest of an exact token sequence ([`crate::token_digest`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct TokenDigest(pub [u8; 16]);

/// A namespace id: the stable fingerprint of a model identity and its
/// geometry (the same in every process that registers the same identity).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Namespace(pub u64);

impl Namespace {
    /// The id as the C ABI takes it (`uint64_t ns`).
    pub fn id(self) -> u64 {
        self.0
    }
}

/// A namespace's geometry. `qsa_hd == 0`: no QSA layers (then the other
/// `qsa_*` fields are 0 too); `dsa_index_head_dim == 0`: no DSA layers.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Geometry {
    /// QSA head dimension: bf16 values per raw key row (0: no QSA layers).
    pub qsa_hd: u32,
    /// QSA rows a sequence can hold (the raw keys buffer's rows).
    pub qsa_max_tokens: u32,
    /// Tokens pooled into one QSA block key.
    pub qsa_ratio: u32,
    /// Leading dimensions of a block key that get the rotary embedding (even,
    /// at most `qsa_hd`).
    pub qsa_rot: u32,
    /// The rotary embedding's base (finite and > 0 when `qsa_rot` > 0).
    pub qsa_theta: f32,
    /// The block-key normalisation's epsilon (finite, >= 0).
    pub qsa_eps: f32,
    /// DSA index head dimension: bf16 values per k_normed and gate row (0: no
    /// DSA layers).
    pub dsa_index_head_dim: u32,
    /// DSA rows a fresh auxstore-allocated state holds (not part of the
    /// namespace id).
    pub dsa_capacity: u32,
}

impl Geometry {
    pub(crate) fn to_c(self) -> sys::auxstore_geometry_t {
        sys::auxstore_geometry_t {
            qsa_hd: self.qsa_hd,
            qsa_max_tokens: self.qsa_max_tokens,
            qsa_ratio: self.qsa_ratio,
            qsa_rot: self.qsa_rot,
            qsa_theta: self.qsa_theta,
            qsa_eps: self.qsa_eps,
            dsa_index_head_dim: self.dsa_index_head_dim,
            dsa_capacity: self.dsa_capacity,
        }
    }
}

/// A layer blob's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// QSA v1: `[ingested u64][pooled u64][raw_keys bf16]` (seed 000).
    Qsa,
    /// DSA v1: `[len u64][index_head_dim u64][k_normed][gate][valid]` (seed 001).
    Dsa,
    /// Any other per-layer state, byte for byte.
    Opaque,
}

impl Kind {
    pub(crate) fn to_c(self) -> u32 {
        (match self {
            Kind::Qsa => sys::AUXSTORE_KIND_QSA,
            Kind::Dsa => sys::AUXSTORE_KIND_DSA,
            Kind::Opaque => sys::AUXSTORE_KIND_OPAQUE,
        }) as u32
    }
    pub(crate) fn from_c(k: i64) -> Result<Kind> {
        match k as c_int {
            sys::AUXSTORE_KIND_QSA => Ok(Kind::Qsa),
            sys::AUXSTORE_KIND_DSA => Ok(Kind::Dsa),
            sys::AUXSTORE_KIND_OPAQUE => Ok(Kind::Opaque),
            other => Err(Error::Internal(format!("unknown blob kind {other}"))),
        }
    }
}

/// When a put is durable: `Sync` (synced commit; the default) or `Async`
/// (`Store::flush` makes everything so far durable).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// Every put is a synced commit: durable when it returns.
    Sync,
    /// Puts are not synced; [`crate::Store::flush`] makes them durable.
    Async,
}

/// When a put on a store with a shared tier returns ([`crate::Options::shared`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SharedWrite {
    /// Once the pool acknowledged the snapshot's pages and manifest.
    Through,
    /// Once committed locally; the upload queued and written behind.
    Behind,
}

/// Which backend: `Auto` (CUDA when built and a device answers, else host).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendKind {
    /// CUDA when this build has it and a device answers, else host.
    Auto,
    /// Host memory standing in for device memory, streams as executors.
    Host,
    /// A CUDA device (`Unavailable` without one).
    Cuda,
}

impl BackendKind {
    pub(crate) fn to_c(self) -> c_int {
        match self {
            BackendKind::Auto => sys::AUXSTORE_BACKEND_AUTO,
            BackendKind::Host => sys::AUXSTORE_BACKEND_HOST,
            BackendKind::Cuda => sys::AUXSTORE_BACKEND_CUDA,
        }
    }
}

/// A log record's level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    /// Detail for debugging (RocksDB's debug records).
    Debug,
    /// Informational records (RocksDB's info log, its option dumps).
    Info,
    /// Something went wrong and was handled (auxstore's warnings).
    Warn,
    /// An operation failed.
    Error,
}

impl LogLevel {
    pub(crate) fn to_c(self) -> c_int {
        match self {
            LogLevel::Debug => sys::AUXSTORE_LOG_DEBUG,
            LogLevel::Info => sys::AUXSTORE_LOG_INFO,
            LogLevel::Warn => sys::AUXSTORE_LOG_WARN,
            LogLevel::Error => sys::AUXSTORE_LOG_ERROR,
        }
    }
    pub(crate) fn from_c(l: c_int) -> LogLevel {
        match l {
            sys::AUXSTORE_LOG_DEBUG => LogLevel::Debug,
            sys::AUXSTORE_LOG_INFO => LogLevel::Info,
            sys::AUXSTORE_LOG_WARN => LogLevel::Warn,
            _ => LogLevel::Error,
        }
    }
}

/// Element type of a declared opaque layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DType {
    /// Unsigned 8-bit integer (1 byte).
    U8,
    /// Signed 8-bit integer (1 byte).
    I8,
    /// bfloat16 (2 bytes).
    Bf16,
    /// IEEE half precision (2 bytes).
    F16,
    /// IEEE single precision (4 bytes).
    F32,
    /// Signed 32-bit integer (4 bytes).
    I32,
    /// IEEE double precision (8 bytes).
    F64,
    /// Signed 64-bit integer (8 bytes).
    I64,
}

impl DType {
    pub(crate) fn to_c(self) -> u32 {
        (match self {
            DType::U8 => sys::AUXSTORE_DTYPE_U8,
            DType::I8 => sys::AUXSTORE_DTYPE_I8,
            DType::Bf16 => sys::AUXSTORE_DTYPE_BF16,
            DType::F16 => sys::AUXSTORE_DTYPE_F16,
            DType::F32 => sys::AUXSTORE_DTYPE_F32,
            DType::I32 => sys::AUXSTORE_DTYPE_I32,
            DType::F64 => sys::AUXSTORE_DTYPE_F64,
            DType::I64 => sys::AUXSTORE_DTYPE_I64,
        }) as u32
    }
}

/// An opaque layer's declared shape: a blob of it must be exactly
/// `prod(shape) * size_of(dtype)` bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpaqueLayer {
    /// The layer index the declaration is for.
    pub layer: u32,
    /// The element type.
    pub dtype: DType,
    /// 1 to 8 dimensions.
    pub shape: Vec<u64>,
}

/// A namespace's whole identity ([`crate::Store::register_namespace_ex`]):
/// every field but `geometry.dsa_capacity` is part of the id, so a snapshot
/// of another weight revision or shard is never returned.
#[derive(Debug, Clone, PartialEq)]
pub struct NamespaceSpec {
    /// The model's name (no NUL bytes).
    pub model_id: String,
    /// The weights' revision, when the model has several (no NUL bytes).
    pub weight_revision: Option<String>,
    /// This process's tensor-parallel rank (< `tp_world_size`).
    pub tp_rank: u32,
    /// Tensor-parallel world size; 0 is taken as 1 (unsharded).
    pub tp_world_size: u32,
    /// The layers' geometry.
    pub geometry: Geometry,
    /// Declared opaque layers, whose blobs must have exactly the declared
    /// size; ascending, unique layers.
    pub opaque_layers: Vec<OpaqueLayer>,
    /// Rows per stored page of QSA/DSA layers (part of the id): a multiple
    /// of the block size of the chained puts ([`PutOptions::block_chain`]);
    /// 0 (the default): each chained put's block size.
    pub page_tokens: u32,
}

impl NamespaceSpec {
    /// An unsharded identity with no revision and no declared opaque layers.
    pub fn new(model_id: impl Into<String>, geometry: Geometry) -> NamespaceSpec {
        NamespaceSpec {
            model_id: model_id.into(),
            weight_revision: None,
            tp_rank: 0,
            tp_world_size: 1,
            geometry,
            opaque_layers: Vec::new(),
            page_tokens: 0,
        }
    }
}

/// One layer of a snapshot to write.
#[derive(Debug, Clone, Copy)]
pub struct Layer<'a> {
    /// The layer index (unique within a snapshot).
    pub layer: u32,
    /// The blob's kind; QSA and DSA blobs are checked against the
    /// namespace's geometry.
    pub kind: Kind,
    /// The blob, borrowed for the call only.
    pub data: &'a [u8],
}

impl<'a> Layer<'a> {
    /// Layer `layer` of kind `kind` holding `data`.
    pub fn new(layer: u32, kind: Kind, data: &'a [u8]) -> Layer<'a> {
        Layer { layer, kind, data }
    }
    /// Layer `layer` of kind `kind` holding the elements of `data` (f32,
    /// an engine's bf16 type, ...: any [`crate::Pod`]), as their bytes in
    /// memory order, with no copy.
    pub fn from_slice<T: crate::Pod>(layer: u32, kind: Kind, data: &'a [T]) -> Layer<'a> {
        Layer { layer, kind, data: crate::bytes_of(data) }
    }
}

/// One snapshot of [`crate::Store::put_snapshots`]: what
/// [`crate::Store::put_snapshot_with`] takes.
#[derive(Debug, Clone, Copy)]
pub struct SnapshotPut<'a> {
    /// Its namespace.
    pub ns: Namespace,
    /// Its prefix.
    pub prefix: Prefix,
    /// Tokens it covers.
    pub token_count: u64,
    /// Its layers, borrowed for the call only.
    pub layers: &'a [Layer<'a>],
    /// How it is put (None: as [`crate::Store::put_snapshot`]).
    pub options: Option<&'a PutOptions<'a>>,
}

/// How a snapshot is put ([`crate::Store::put_snapshot_with`],
/// `auxstore_put_options_t`). [`Default`] is none: no digest, each layer
/// stored whole. Built by chaining:
/// `PutOptions::new().token_digest(d).block_chain(&chain, 16)`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PutOptions<'a> {
    /// Stored in the manifest; `longest_prefix_for_tokens` then checks it.
    pub token_digest: Option<TokenDigest>,
    /// The chained prefix hashes of the snapshot's tokens, one per complete
    /// block of `block_size` tokens ([`crate::prefix_hashes`], or the
    /// engine's own chain), shortest first; at most `token_count /
    /// block_size` of them. Non-empty: QSA and DSA rows are stored in pages
    /// shared with every snapshot of the same namespace and chain, and only
    /// pages not stored yet are written (docs/format.md, "Pages").
    pub block_chain: &'a [Prefix],
    /// Tokens per block of `block_chain` (> 0 with a chain).
    pub block_size: u32,
}

impl<'a> PutOptions<'a> {
    /// No digest, no chain: each layer stored whole (the same as
    /// [`Default`]).
    pub fn new() -> PutOptions<'a> {
        PutOptions::default()
    }
    /// The C view, valid while `self` (its digest and chain) is borrowed.
    pub(crate) fn to_c(&self) -> sys::auxstore_put_options_t {
        sys::auxstore_put_options_t {
            struct_size: std::mem::size_of::<sys::auxstore_put_options_t>(),
            token_digest: self.token_digest.as_ref().map_or(std::ptr::null(), |d| d.0.as_ptr()),
            // Prefix is repr(transparent) over [u8; 16].
            block_chain: if self.block_chain.is_empty() {
                std::ptr::null()
            } else {
                self.block_chain.as_ptr() as *const [u8; 16]
            },
            n_blocks: self.block_chain.len(),
            block_size: self.block_size,
        }
    }
    /// Stores the digest of the tokens the prefix covers ([`crate::token_digest`]).
    pub fn token_digest(mut self, digest: TokenDigest) -> Self {
        self.token_digest = Some(digest);
        self
    }
    /// Stores QSA/DSA rows in pages shared along `chain` (blocks of `block_size` tokens).
    pub fn block_chain(mut self, chain: &'a [Prefix], block_size: u32) -> Self {
        self.block_chain = chain;
        self.block_size = block_size;
        self
    }
}

/// One layer of a stored snapshot, as its manifest describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LayerInfo {
    /// The layer index.
    pub layer: u32,
    /// The blob's kind.
    pub kind: Kind,
    /// The blob's size in bytes.
    pub bytes: u64,
    /// The layer digest: XXH3-64 over the blob's header and each page's and
    /// tail's XXH3-64 (not a plain XXH3 of the blob).
    pub xxh3: u64,
}

/// A stored snapshot's manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    /// The tokens the snapshot covers (as put).
    pub token_count: u64,
    /// Its layers, ascending.
    pub layers: Vec<LayerInfo>,
}

/// One layer read into memory the caller provides ([`crate::Store::read_layers`]).
#[derive(Debug)]
pub struct LayerDest<'a> {
    /// The layer to read.
    pub layer: u32,
    /// Where to put it (its capacity is the slice's length).
    pub buf: &'a mut [u8],
    /// Out: the layer's size (the first `size` bytes of `buf` hold it).
    pub size: usize,
}

impl<'a> LayerDest<'a> {
    /// Layer `layer` into `buf` (`size` 0 until read).
    pub fn new(layer: u32, buf: &'a mut [u8]) -> LayerDest<'a> {
        LayerDest { layer, buf, size: 0 }
    }
    /// Layer `layer` into the elements of `buf` (any [`crate::Pod`]: f32,
    /// an engine's bf16 type, ...), written as bytes in memory order, with
    /// no copy; its capacity is `buf`'s size in bytes.
    pub fn from_slice<T: crate::Pod>(layer: u32, buf: &'a mut [T]) -> LayerDest<'a> {
        LayerDest { layer, buf: crate::bytes_of_mut(buf), size: 0 }
    }
    /// The bytes read.
    pub fn bytes(&self) -> &[u8] {
        &self.buf[..self.size.min(self.buf.len())]
    }
}

/// The longest stored prefix of a token sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrefixMatch {
    /// The stored prefix key (the chained hash of the covered blocks).
    pub prefix: Prefix,
    /// The tokens the prefix covers.
    pub tokens: u64,
}

/// The store's counters and gauges (`auxstore_stats_t`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stats {
    /// Visible snapshots (gauge).
    pub snapshots: u64,
    /// Every snapshot's layers in full (a page shared by n snapshots counts n
    /// times).
    pub payload_bytes: u64,
    /// Lookups that found a snapshot (docs/metrics.md says which calls
    /// count), since this handle opened.
    pub hits: u64,
    /// Lookups that found none.
    pub misses: u64,
    /// Snapshots this handle wrote (write-behind ones once written).
    pub puts: u64,
    /// Puts of a prefix already stored (no-ops).
    pub duplicate_puts: u64,
    /// Snapshots evicted for the byte budget (LRU; leased ones skipped).
    pub evictions: u64,
    /// Snapshots expired by their TTL.
    pub expirations: u64,
    /// Snapshots quarantined for corruption (persisted: counts across
    /// opens).
    pub quarantines: u64,
    /// Record groups without a manifest (a torn write's leftovers) seen.
    pub orphans_seen: u64,
    /// ... and removed.
    pub orphans_removed: u64,
    /// Commits recovered and made since the store was created.
    pub commit_seq: u64,
    /// The last commit known durable (docs/durability.md).
    pub durable_watermark: u64,
    /// Commits the open found lost and accepted.
    pub lost_commits_at_open: u64,
    /// Layer bytes this handle wrote.
    pub bytes_written: u64,
    /// Layer bytes this handle read and verified (reads and restores).
    pub bytes_read: u64,
    /// The byte budget the store was opened with (0: unlimited).
    pub capacity_bytes: u64,
    /// Live leases of this handle (gauge).
    pub leases: u64,
    /// The background LRU index has loaded.
    pub index_ready: bool,
    /// A write failed: reopen to write again.
    pub fenced: bool,
    /// The bytes stored for the snapshots, each shared page once: what
    /// `capacity_bytes` budgets.
    pub unique_bytes: u64,
}

/// The shared tier's counters by one handle (`auxstore_shared_stats_t`,
/// docs/shared-tier.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SharedStats {
    /// Whether the store has a shared tier.
    pub shared: bool,
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
    /// Write-behind snapshots waiting for upload now (gauge).
    pub queued: u64,
    /// Snapshots restored from the pool into the local store.
    pub restores: u64,
    /// Pool objects found damaged (their snapshots quarantined).
    pub corruptions: u64,
}

impl From<sys::auxstore_stats_t> for Stats {
    fn from(s: sys::auxstore_stats_t) -> Stats {
        Stats {
            snapshots: s.snapshots,
            payload_bytes: s.payload_bytes,
            hits: s.hits,
            misses: s.misses,
            puts: s.puts,
            duplicate_puts: s.duplicate_puts,
            evictions: s.evictions,
            expirations: s.expirations,
            quarantines: s.quarantines,
            orphans_seen: s.orphans_seen,
            orphans_removed: s.orphans_removed,
            commit_seq: s.commit_seq,
            durable_watermark: s.durable_watermark,
            lost_commits_at_open: s.lost_commits_at_open,
            bytes_written: s.bytes_written,
            bytes_read: s.bytes_read,
            capacity_bytes: s.capacity_bytes,
            leases: s.leases,
            index_ready: s.index_ready != 0,
            fenced: s.fenced != 0,
            unique_bytes: s.unique_bytes,
        }
    }
}

/// A pipeline's configuration; [`Default`] is `auxstore_pipeline_options_init`
/// (4 x 4 MiB staging; I/O threads and layers in flight one per two cores,
/// 2 to 8; 8 snapshots and 64 MiB queued).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PipelineOptions {
    /// Pinned staging buffers restores read chunks into.
    pub staging_buffers: usize,
    /// Bytes of each staging buffer: at least the store's chunk size.
    pub staging_bytes: usize,
    /// Threads reading and writing the store.
    pub io_threads: usize,
    /// Layers a restore reads ahead of the one being copied to the device.
    pub restore_read_ahead: usize,
    /// Snapshots accepted but not yet written...
    pub snapshot_queue: usize,
    /// ...and the pinned bytes they may hold; past either one is shed.
    pub snapshot_bytes: u64,
}

impl Default for PipelineOptions {
    fn default() -> PipelineOptions {
        let mut o = sys::auxstore_pipeline_options_t::default();
        // SAFETY: a valid out pointer.
        unsafe { sys::auxstore_pipeline_options_init(&mut o) };
        PipelineOptions {
            staging_buffers: o.staging_buffers,
            staging_bytes: o.staging_bytes,
            io_threads: o.io_threads,
            restore_read_ahead: o.restore_read_ahead,
            snapshot_queue: o.snapshot_queue,
            snapshot_bytes: o.snapshot_bytes,
        }
    }
}

impl PipelineOptions {
    pub(crate) fn to_c(self) -> sys::auxstore_pipeline_options_t {
        let mut o = sys::auxstore_pipeline_options_t::default();
        // SAFETY: a valid out pointer (fills struct_size).
        unsafe { sys::auxstore_pipeline_options_init(&mut o) };
        o.staging_buffers = self.staging_buffers;
        o.staging_bytes = self.staging_bytes;
        o.io_threads = self.io_threads;
        o.restore_read_ahead = self.restore_read_ahead;
        o.snapshot_queue = self.snapshot_queue;
        o.snapshot_bytes = self.snapshot_bytes;
        o
    }
}

/// A pipeline's counters and restore histograms (`auxstore_pipeline_stats_t`).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PipelineStats {
    /// Restores that completed successfully.
    pub restores_ok: u64,
    /// Restores that failed, the cancelled ones included.
    pub restores_failed: u64,
    /// Restores that ended cancelled.
    pub restores_cancelled: u64,
    /// Restores in flight (gauge).
    pub restores_running: u64,
    /// Layer bytes of the restores that succeeded.
    pub bytes_restored: u64,
    /// Write-behind snapshots accepted into the queue.
    pub snapshots_accepted: u64,
    /// Write-behind snapshots shed (queue or pinned memory full).
    pub snapshots_shed: u64,
    /// Write-behind snapshots written to the store.
    pub snapshots_written: u64,
    /// Write-behind snapshots whose store write failed.
    pub snapshots_failed: u64,
    /// Layer bytes of the write-behind snapshots written.
    pub bytes_snapshotted: u64,
    /// Chunk reads that waited for a free staging buffer.
    pub staging_waits: u64,
    /// Restores that succeeded, by latency: bucket i counts [2^i, 2^(i+1)) us.
    pub restore_latency_us: [u64; sys::AUXSTORE_LATENCY_BUCKETS],
    /// The sum of those latencies, in microseconds.
    pub restore_latency_us_sum: u64,
    /// Their throughput: bucket i counts [2^i, 2^(i+1)) MiB/s.
    pub restore_throughput_mibps: [u64; sys::AUXSTORE_THROUGHPUT_BUCKETS],
    /// The sum of those throughputs, in MiB/s.
    pub restore_throughput_mibps_sum: f64,
}

impl From<sys::auxstore_pipeline_stats_t> for PipelineStats {
    fn from(s: sys::auxstore_pipeline_stats_t) -> PipelineStats {
        PipelineStats {
            restores_ok: s.restores_ok,
            restores_failed: s.restores_failed,
            restores_cancelled: s.restores_cancelled,
            restores_running: s.restores_running,
            bytes_restored: s.bytes_restored,
            snapshots_accepted: s.snapshots_accepted,
            snapshots_shed: s.snapshots_shed,
            snapshots_written: s.snapshots_written,
            snapshots_failed: s.snapshots_failed,
            bytes_snapshotted: s.bytes_snapshotted,
            staging_waits: s.staging_waits,
            restore_latency_us: s.restore_latency_us,
            restore_latency_us_sum: s.restore_latency_us_sum,
            restore_throughput_mibps: s.restore_throughput_mibps,
            restore_throughput_mibps_sum: s.restore_throughput_mibps_sum,
        }
    }
}

/// Bytes auxstore allocated (a layer, a state readback), freed with
/// `auxstore_free` on drop; derefs to `[u8]`.
pub struct Bytes {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: plain malloc'd memory owned by this value alone; shared access is
// read-only.
unsafe impl Send for Bytes {}
unsafe impl Sync for Bytes {}

impl Bytes {
    /// Takes ownership of `len` bytes auxstore malloc'd at `ptr`.
    ///
    /// # Safety
    /// `ptr` is NULL (then the value is empty, whatever `len` says) or
    /// `len` initialised bytes from auxstore's allocator, owned by no one
    /// else.
    pub(crate) unsafe fn from_raw(ptr: *mut c_void, len: usize) -> Bytes {
        Bytes { ptr: ptr as *mut u8, len: if ptr.is_null() { 0 } else { len } }
    }
}

impl std::ops::Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: `len` initialised bytes at `ptr`, owned by self.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl AsRef<[u8]> for Bytes {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl fmt::Debug for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Bytes({} bytes)", self.len)
    }
}

impl Drop for Bytes {
    fn drop(&mut self) {
        // SAFETY: NULL or auxstore's allocation, owned by this value alone.
        unsafe { sys::auxstore_free(self.ptr as *mut c_void) }
    }
}

/// Reads a little-endian u16 vector out of bytes (bf16 values).
pub fn bf16_from_bytes(bytes: &[u8]) -> Vec<u16> {
    bytes.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect()
}

/// Bytes of a u16 slice (bf16 values), little-endian.
pub fn bf16_to_bytes(values: &[u16]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}
