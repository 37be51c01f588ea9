//! The store: options (with the log hook), open/close, namespaces, snapshots,
//! lookups, leases, reads, stats and metrics.
use crate::error::{check, Error, Result};
use crate::pipeline::Pipeline;
use crate::sys;
use crate::types::*;
use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

// ---- the log hook ----------------------------------------------------------------

type LogFn = dyn Fn(LogLevel, &str, &str) + Send + Sync + 'static;

/// The closure behind `auxstore_options_set_log_callback`'s `arg`. Shared
/// (Arc) by the options and every store opened with them, so it lives as
/// long as the longest of them: auxstore may call it from any thread while
/// such a store is open, its close included.
pub(crate) struct LogHook {
    f: Box<LogFn>,
    panics: AtomicU64,
}

unsafe extern "C" fn log_trampoline(arg: *mut c_void, level: c_int, source: *const c_char, message: *const c_char) {
    // SAFETY: `arg` is the LogHook an Arc held by the open store keeps alive.
    let hook = &*(arg as *const LogHook);
    let text = |p: *const c_char| {
        if p.is_null() {
            String::new()
        } else {
            CStr::from_ptr(p).to_string_lossy().into_owned()
        }
    };
    let (source, message) = (text(source), text(message));
    // A panic must not unwind into C++ (it would abort): it is caught and
    // counted (Store::log_callback_panics).
    if catch_unwind(AssertUnwindSafe(|| (hook.f)(LogLevel::from_c(level), &source, &message))).is_err() {
        hook.panics.fetch_add(1, Ordering::Relaxed);
    }
}

// ---- options -----------------------------------------------------------------------

/// Open options (`auxstore_options_t`). Defaults: sync durability, 4 MiB
/// chunks, no capacity or TTL limit, read-write, create if missing, warnings
/// to stderr. Setters validate and return `Result<&mut Self>` so they chain:
/// `opts.chunk_bytes(64 << 10)?.capacity_bytes(1 << 30)?;`.
///
/// `Send` (build it on one thread, hand it to another) but not `Sync`: the C
/// ABI does not synchronise the options.
pub struct Options {
    raw: NonNull<sys::auxstore_options_t>,
    log: Option<Arc<LogHook>>,
}

// SAFETY: the C options are plain data plus a std::function over `log`,
// which is Send + Sync; only &mut methods change them.
unsafe impl Send for Options {}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Options(log callback: {})", self.log.is_some())
    }
}

impl Default for Options {
    fn default() -> Options {
        Options::new()
    }
}

impl Options {
    /// The defaults (see [`Options`]).
    ///
    /// # Panics
    /// When auxstore cannot allocate the options (out of memory).
    pub fn new() -> Options {
        // SAFETY: returns NULL only when out of memory.
        let raw = unsafe { sys::auxstore_options_create() };
        Options { raw: NonNull::new(raw).expect("auxstore_options_create: out of memory"), log: None }
    }

    /// Byte budget of the store (0: unlimited); LRU eviction past it.
    pub fn capacity_bytes(&mut self, bytes: u64) -> Result<&mut Self> {
        // SAFETY: a live handle (self) and pointers to values that outlive the call.
        check(|e| unsafe { sys::auxstore_options_set_capacity_bytes(self.raw.as_ptr(), bytes, e) })?;
        Ok(self)
    }

    /// Snapshots older than this expire (0: never).
    pub fn ttl_seconds(&mut self, seconds: u64) -> Result<&mut Self> {
        // SAFETY: a live handle (self) and pointers to values that outlive the call.
        check(|e| unsafe { sys::auxstore_options_set_ttl_seconds(self.raw.as_ptr(), seconds, e) })?;
        Ok(self)
    }

    /// Chunk size of stored layers (> 0).
    pub fn chunk_bytes(&mut self, bytes: u32) -> Result<&mut Self> {
        // SAFETY: a live handle (self) and pointers to values that outlive the call.
        check(|e| unsafe { sys::auxstore_options_set_chunk_bytes(self.raw.as_ptr(), bytes, e) })?;
        Ok(self)
    }

    /// Threads that copy one read's layers into memory at once, when the
    /// layers besides the largest hold a mebibyte or more: 0 (the default) =
    /// one per two cores, 2 to 8; 1 = one layer after another; at most 64.
    pub fn read_lanes(&mut self, lanes: u32) -> Result<&mut Self> {
        // SAFETY: a live handle (self) and pointers to values that outlive the call.
        check(|e| unsafe { sys::auxstore_options_set_read_lanes(self.raw.as_ptr(), lanes, e) })?;
        Ok(self)
    }

    /// When puts are durable: [`Durability::Sync`] (the default) or
    /// [`Durability::Async`].
    pub fn durability(&mut self, durability: Durability) -> Result<&mut Self> {
        let d = match durability {
            Durability::Sync => sys::AUXSTORE_SYNC,
            Durability::Async => sys::AUXSTORE_ASYNC,
        };
        // SAFETY: a live handle (self) and pointers to values that outlive the call.
        check(|e| unsafe { sys::auxstore_options_set_durability(self.raw.as_ptr(), d, e) })?;
        Ok(self)
    }

    /// Open read-only (writes are then `Unavailable`; several read-only
    /// handles and one writer may coexist).
    pub fn read_only(&mut self, read_only: bool) -> Result<&mut Self> {
        // SAFETY: a live handle (self) and pointers to values that outlive the call.
        check(|e| unsafe { sys::auxstore_options_set_read_only(self.raw.as_ptr(), read_only as c_int, e) })?;
        Ok(self)
    }

    /// Whether opening a missing store creates it (the default); `false`:
    /// opening a missing store is `NotFound`.
    pub fn create_if_missing(&mut self, create: bool) -> Result<&mut Self> {
        // SAFETY: a live handle (self) and pointers to values that outlive the call.
        check(|e| unsafe { sys::auxstore_options_set_create_if_missing(self.raw.as_ptr(), create as c_int, e) })?;
        Ok(self)
    }

    /// The shared tier (docs/shared-tier.md): `uri` a
    /// `rados://POOL?conf=PATH&namespace=NS...` string ("" = none, the
    /// embedded store alone). [`SharedWrite::Through`]: a put returns once the
    /// pool acknowledged it; [`SharedWrite::Behind`]: once committed locally,
    /// its upload queued (at most `queue_bytes` > 0 of snapshots; when full a
    /// put waits, or with `shed_when_full` is not queued and is counted).
    /// The URI is checked by [`Store::open`].
    pub fn shared(
        &mut self,
        uri: &str,
        write: SharedWrite,
        queue_bytes: u64,
        shed_when_full: bool,
    ) -> Result<&mut Self> {
        let uri = cstring("shared uri", uri)?;
        let mode = match write {
            SharedWrite::Through => sys::AUXSTORE_SHARED_THROUGH,
            SharedWrite::Behind => sys::AUXSTORE_SHARED_BEHIND,
        };
        // SAFETY: a live handle (self) and pointers to values that outlive the call.
        check(|e| unsafe {
            sys::auxstore_options_set_shared(
                self.raw.as_ptr(),
                uri.as_ptr(),
                mode,
                queue_bytes,
                shed_when_full as c_int,
                e,
            )
        })?;
        Ok(self)
    }

    /// Whether what the store reads from the shared pool is also written
    /// into its local directory, behind the call (true, the default). With
    /// false the lookups answer from the pool's records and reads of
    /// snapshots only the pool holds go straight from the pool into memory
    /// each time; calls that work on a local copy (manifests and so the
    /// restore pipeline, row reads, leases) still write one, and a put
    /// (write-through) goes to the pool alone, nothing into the directory.
    pub fn shared_local_copies(&mut self, local_copies: bool) -> Result<&mut Self> {
        // SAFETY: a live handle (self) and pointers to values that outlive the call.
        check(|e| unsafe {
            sys::auxstore_options_set_shared_local_copies(self.raw.as_ptr(), local_copies as c_int, e)
        })?;
        Ok(self)
    }

    /// Delivers auxstore's warnings and RocksDB's info log (`level >=
    /// min_level`) to `f(level, source, message)` instead of any log file;
    /// `source` is "auxstore" or "rocksdb". `f` may run on any auxstore or
    /// RocksDB thread while a store opened with these options is open, its
    /// close included: it must be quick and must not call auxstore. A panic
    /// in `f` is caught at the boundary and counted
    /// ([`Store::log_callback_panics`]).
    pub fn log_callback<F>(&mut self, min_level: LogLevel, f: F) -> Result<&mut Self>
    where
        F: Fn(LogLevel, &str, &str) + Send + Sync + 'static,
    {
        let hook = Arc::new(LogHook { f: Box::new(f), panics: AtomicU64::new(0) });
        let arg = Arc::as_ptr(&hook) as *mut c_void;
        // SAFETY: live options; `arg` is the LogHook that `self.log` and
        // every store opened with these options keep alive (an Arc each), so
        // it outlives every call of the trampoline.
        check(|e| unsafe {
            sys::auxstore_options_set_log_callback(self.raw.as_ptr(), Some(log_trampoline), arg, min_level.to_c(), e)
        })?;
        // Stores already opened with the previous hook keep their own Arc.
        self.log = Some(hook);
        Ok(self)
    }

    /// Back to warnings on stderr.
    pub fn clear_log_callback(&mut self) -> Result<&mut Self> {
        // SAFETY: a live handle (self) and pointers to values that outlive the call.
        check(|e| unsafe {
            sys::auxstore_options_set_log_callback(self.raw.as_ptr(), None, ptr::null_mut(), sys::AUXSTORE_LOG_WARN, e)
        })?;
        self.log = None;
        Ok(self)
    }
}

impl Drop for Options {
    fn drop(&mut self) {
        // SAFETY: ours; a store opened with them copied what it needs (and
        // holds its own Arc of the log hook).
        unsafe { sys::auxstore_options_destroy(self.raw.as_ptr()) }
    }
}

// ---- the store -------------------------------------------------------------------------

/// An open store (`auxstore_t`). `Send + Sync`, and shareable: a `Store` is
/// an `Arc` over the handle, so `clone()` is cheap and every clone (and
/// every [`Pipeline`] made on it, which holds one) uses the same open store;
/// it closes when the last of them is dropped. Every call may be made from
/// any number of threads at once.
#[derive(Clone)]
pub struct Store {
    inner: Arc<StoreHandle>,
}

// The handle itself: closed when the last Store clone (or pipeline holding
// one) goes. A pipeline leaked with mem::forget keeps its clone, so the
// store is never closed under the leaked pipeline's threads.
struct StoreHandle {
    raw: NonNull<sys::auxstore_t>,
    // Dropped after auxstore_close (fields drop after Drop::drop).
    log: Option<Arc<LogHook>>,
}

// SAFETY: docs/c-abi.md, "Thread safety": auxstore_t is thread-safe except
// for close, which runs only in StoreHandle's drop, when no clone is left.
unsafe impl Send for StoreHandle {}
unsafe impl Sync for StoreHandle {}

impl Drop for StoreHandle {
    fn drop(&mut self) {
        // SAFETY: ours; no Store clone, pipeline, lease or restore is left
        // (leases and restores borrow a Store, pipelines hold a clone). The
        // log hook is freed after this.
        unsafe { sys::auxstore_close(self.raw.as_ptr()) }
    }
}

pub(crate) fn cstring(what: &str, s: &str) -> Result<CString> {
    CString::new(s).map_err(|_| Error::invalid(format!("{what} contains a NUL byte")))
}

#[cfg(unix)]
fn path_cstring(path: &Path) -> Result<CString> {
    use std::os::unix::ffi::OsStrExt;
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| Error::invalid("auxstore::Store::open: path contains a NUL byte"))
}

#[cfg(not(unix))]
fn path_cstring(path: &Path) -> Result<CString> {
    cstring(
        "auxstore::Store::open: path",
        path.to_str().ok_or_else(|| Error::invalid("auxstore::Store::open: path is not UTF-8"))?,
    )
}

impl Store {
    /// Opens (creating when allowed) the store at `path`.
    pub fn open(path: impl AsRef<Path>, options: &Options) -> Result<Store> {
        Store::open_raw(path.as_ref(), Some(options))
    }

    /// Opens with the default options.
    pub fn open_default(path: impl AsRef<Path>) -> Result<Store> {
        Store::open_raw(path.as_ref(), None)
    }

    fn open_raw(path: &Path, options: Option<&Options>) -> Result<Store> {
        let p = path_cstring(path)?;
        let mut raw = ptr::null_mut();
        let o = options.map_or(ptr::null(), |o| o.raw.as_ptr() as *const _);
        // SAFETY: a NUL-terminated path, NULL or live options (only read),
        // a valid out pointer.
        check(|e| unsafe { sys::auxstore_open(p.as_ptr(), o, &mut raw, e) })?;
        Ok(Store {
            inner: Arc::new(StoreHandle {
                raw: NonNull::new(raw).expect("auxstore_open returned OK and NULL"),
                log: options.and_then(|o| o.log.clone()),
            }),
        })
    }

    /// Drops this clone (the same as dropping it). The last clone to go,
    /// when no pipeline holds one any more, closes the store: waits for its
    /// background work, then frees the handle and, after that, the log hook.
    pub fn close(self) {}

    /// Whether `other` is a clone of this store (the same open handle).
    pub fn same_store(&self, other: &Store) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// The raw handle, for calls into `auxstore_sys` (valid while `self` is).
    pub fn as_raw(&self) -> *mut sys::auxstore_t {
        self.inner.raw.as_ptr()
    }

    /// How many times the log callback panicked (each caught at the boundary).
    pub fn log_callback_panics(&self) -> u64 {
        self.inner.log.as_ref().map_or(0, |h| h.panics.load(Ordering::Relaxed))
    }

    /// Registers (idempotently) a model id and geometry: an unsharded
    /// identity with no revision (see [`Store::register_namespace_ex`]).
    ///
    /// # Errors
    /// `InvalidArgument` for a NUL in `model_id` or a geometry auxstore
    /// refuses; `Unavailable` on a read-only handle when the namespace is
    /// not registered yet.
    pub fn register_namespace(&self, model_id: &str, geometry: &Geometry) -> Result<Namespace> {
        let m = cstring("auxstore::Store::register_namespace: model_id", model_id)?;
        let g = geometry.to_c();
        let mut ns = 0u64;
        // SAFETY: a live handle (self) and pointers to values that outlive the call.
        check(|e| unsafe { sys::auxstore_register_namespace(self.as_raw(), m.as_ptr(), &g, &mut ns, e) })?;
        Ok(Namespace(ns))
    }

    /// Registers (idempotently) a namespace with its whole identity: model
    /// id, weight revision, TP rank / world size, geometry, declared opaque
    /// layers, page size. The same spec gives the same [`Namespace`] in
    /// every process.
    ///
    /// # Errors
    /// `InvalidArgument` for a NUL in a string, an opaque layer with no or
    /// more than 8 dimensions, layers not ascending, a bad geometry or
    /// `tp_rank >= tp_world_size`.
    pub fn register_namespace_ex(&self, spec: &NamespaceSpec) -> Result<Namespace> {
        let model = cstring("auxstore::Store::register_namespace_ex: model_id", &spec.model_id)?;
        let revision = match &spec.weight_revision {
            Some(r) => Some(cstring("auxstore::Store::register_namespace_ex: weight_revision", r)?),
            None => None,
        };
        let mut descs = Vec::with_capacity(spec.opaque_layers.len());
        for (i, l) in spec.opaque_layers.iter().enumerate() {
            if l.shape.is_empty() || l.shape.len() > 8 {
                return Err(Error::invalid(format!(
                    "auxstore::Store::register_namespace_ex: opaque_layers[{i}] has {} dimensions, \
                     not 1..8",
                    l.shape.len()
                )));
            }
            let mut d = sys::auxstore_opaque_layer_desc_t {
                layer: l.layer,
                dtype: l.dtype.to_c(),
                ndim: l.shape.len() as u32,
                shape: [0; 8],
            };
            d.shape[..l.shape.len()].copy_from_slice(&l.shape);
            descs.push(d);
        }
        let c = sys::auxstore_namespace_t {
            struct_size: std::mem::size_of::<sys::auxstore_namespace_t>(),
            model_id: model.as_ptr(),
            weight_revision: revision.as_ref().map_or(ptr::null(), |r| r.as_ptr()),
            tp_rank: spec.tp_rank,
            tp_world_size: spec.tp_world_size,
            geometry: spec.geometry.to_c(),
            n_opaque_layers: descs.len(),
            opaque_layers: if descs.is_empty() { ptr::null() } else { descs.as_ptr() },
            page_tokens: spec.page_tokens,
        };
        let mut ns = 0u64;
        // SAFETY: a live handle (self) and pointers to values that outlive the call.
        check(|e| unsafe { sys::auxstore_register_namespace_ex(self.as_raw(), &c, &mut ns, e) })?;
        Ok(Namespace(ns))
    }

    fn c_layers(layers: &[Layer<'_>]) -> Vec<sys::auxstore_layer_t> {
        layers
            .iter()
            .map(|l| sys::auxstore_layer_t {
                layer: l.layer,
                kind: l.kind.to_c(),
                data: l.data.as_ptr() as *const c_void,
                size: l.data.len(),
            })
            .collect()
    }

    /// Writes a snapshot (layer indices unique, each checked against the
    /// namespace's geometry first; nothing is written on failure). A prefix
    /// already stored: Ok, nothing written.
    pub fn put_snapshot(&self, ns: Namespace, prefix: &Prefix, token_count: u64, layers: &[Layer<'_>]) -> Result<()> {
        let c = Store::c_layers(layers);
        // SAFETY: a live handle (self) and pointers to values that outlive the call.
        check(|e| unsafe {
            sys::auxstore_put_snapshot(self.as_raw(), ns.0, prefix.0.as_ptr(), token_count, c.len(), c.as_ptr(), e)
        })
    }

    /// The same, storing the digest of the tokens the prefix covers, which
    /// `longest_prefix_for_tokens` then checks.
    pub fn put_snapshot_with_digest(
        &self,
        ns: Namespace,
        prefix: &Prefix,
        token_count: u64,
        digest: &TokenDigest,
        layers: &[Layer<'_>],
    ) -> Result<()> {
        let c = Store::c_layers(layers);
        // SAFETY: a live handle (self) and pointers to values that outlive the call.
        check(|e| unsafe {
            sys::auxstore_put_snapshot_with_digest(
                self.as_raw(),
                ns.0,
                prefix.0.as_ptr(),
                token_count,
                digest.0.as_ptr(),
                c.len(),
                c.as_ptr(),
                e,
            )
        })
    }

    /// `put_snapshot` with options (`auxstore_put_snapshot_ex`): a token
    /// digest, and a block chain that stores the QSA/DSA rows in pages
    /// shared with the other snapshots of the chain (a growing sequence's
    /// turns then write only their new rows). The chain is checked before
    /// anything is written (`InvalidArgument`: a chain without a block size,
    /// longer than `token_count / block_size`, or blocks that do not divide
    /// the namespace's `page_tokens`).
    pub fn put_snapshot_with(
        &self,
        ns: Namespace,
        prefix: &Prefix,
        token_count: u64,
        layers: &[Layer<'_>],
        options: &PutOptions<'_>,
    ) -> Result<()> {
        let c = Store::c_layers(layers);
        let o = options.to_c();
        // SAFETY: a live handle (self) and pointers to values that outlive the call.
        check(|e| unsafe {
            sys::auxstore_put_snapshot_ex(
                self.as_raw(),
                ns.0,
                prefix.0.as_ptr(),
                token_count,
                c.len(),
                c.as_ptr(),
                &o,
                e,
            )
        })
    }

    /// Puts every snapshot of `puts`, each as [`Store::put_snapshot_with`]
    /// puts it, in order (`auxstore_put_snapshots`): one outcome per
    /// snapshot, a refused or failed one never stopping the others. The
    /// first failure carries the store's message; later ones name their
    /// index and code. On a shared pool the pages of all go to the pool in
    /// one window (a connector's batch of pages).
    pub fn put_snapshots(&self, puts: &[crate::SnapshotPut<'_>]) -> Vec<Result<()>> {
        let layers: Vec<Vec<sys::auxstore_layer_t>> = puts.iter().map(|p| Store::c_layers(p.layers)).collect();
        let options: Vec<Option<sys::auxstore_put_options_t>> =
            puts.iter().map(|p| p.options.map(|o| o.to_c())).collect();
        let c: Vec<sys::auxstore_snapshot_put_t> = puts
            .iter()
            .enumerate()
            .map(|(i, p)| sys::auxstore_snapshot_put_t {
                ns: p.ns.0,
                prefix: p.prefix.0,
                token_count: p.token_count,
                n_layers: layers[i].len(),
                layers: layers[i].as_ptr(),
                options: options[i].as_ref().map_or(ptr::null(), |o| o as *const _),
            })
            .collect();
        let mut codes = vec![sys::AUXSTORE_OK; puts.len()];
        let mut err = crate::error::ErrMsg::new();
        // SAFETY: a live handle (self); `c`, the layers and options it points
        // to, and `codes` (puts.len() entries) outlive the call.
        let first =
            unsafe { sys::auxstore_put_snapshots(self.as_raw(), c.as_ptr(), c.len(), codes.as_mut_ptr(), err.out()) };
        let message = err.text(first);
        let mut seen_failure = false;
        codes
            .iter()
            .enumerate()
            .map(|(i, &code)| {
                if code == sys::AUXSTORE_OK {
                    return Ok(());
                }
                let text = if seen_failure {
                    format!("auxstore_put_snapshots: snapshots[{i}]: {}", crate::error::code_name(code))
                } else {
                    message.clone()
                };
                seen_failure = true;
                Err(Error::from_code(code, text))
            })
            .collect()
    }

    /// The C view of a prefix slice: NULL when empty, else its elements
    /// (Prefix is `repr(transparent)` over `[u8; 16]`), valid while the
    /// slice is borrowed.
    fn candidates(prefixes: &[Prefix]) -> *const [u8; 16] {
        if prefixes.is_empty() {
            ptr::null()
        } else {
            // Prefix is a newtype over [u8; 16] (same layout as the C array).
            prefixes.as_ptr() as *const [u8; 16]
        }
    }

    /// The longest stored prefix among `candidates` (shortest first): its
    /// index, or None when none is stored.
    pub fn longest_prefix(&self, ns: Namespace, candidates: &[Prefix]) -> Result<Option<usize>> {
        let mut found = 0usize;
        // SAFETY: a live handle (self) and pointers to values that outlive the call.
        not_found_is_none(check(|e| unsafe {
            sys::auxstore_longest_prefix(
                self.as_raw(),
                ns.0,
                Store::candidates(candidates),
                candidates.len(),
                &mut found,
                e,
            )
        }))
        .map(|o| o.map(|_| found))
    }

    /// `longest_prefix` that also leases what it found for `lease_ms`.
    pub fn longest_prefix_leased(
        &self,
        ns: Namespace,
        candidates: &[Prefix],
        lease_ms: u64,
    ) -> Result<Option<(usize, Lease<'_>)>> {
        let (mut found, mut lease) = (0usize, 0u64);
        // SAFETY: a live handle (self) and pointers to values that outlive the call.
        let r = not_found_is_none(check(|e| unsafe {
            sys::auxstore_longest_prefix_leased(
                self.as_raw(),
                ns.0,
                Store::candidates(candidates),
                candidates.len(),
                lease_ms,
                &mut found,
                &mut lease,
                e,
            )
        }))?;
        Ok(r.map(|_| (found, Lease { store: self, id: lease })))
    }

    /// The longest stored prefix of `tokens` at every block boundary
    /// ([`crate::prefix_hashes`] with `block_size` and `salt`), token digest
    /// checked when stored; None when none is.
    pub fn longest_prefix_for_tokens(
        &self,
        ns: Namespace,
        tokens: &[u32],
        block_size: u32,
        salt: u64,
    ) -> Result<Option<PrefixMatch>> {
        let mut m = PrefixMatch { prefix: Prefix::default(), tokens: 0 };
        // SAFETY: a live handle (self) and pointers to values that outlive the call.
        let r = not_found_is_none(check(|e| unsafe {
            sys::auxstore_longest_prefix_for_tokens(
                self.as_raw(),
                ns.0,
                tokens.as_ptr(),
                tokens.len(),
                block_size,
                salt,
                m.prefix.0.as_mut_ptr(),
                &mut m.tokens,
                e,
            )
        }))?;
        Ok(r.map(|_| m))
    }

    /// `longest_prefix_for_tokens` that also leases what it found.
    pub fn longest_prefix_for_tokens_leased(
        &self,
        ns: Namespace,
        tokens: &[u32],
        block_size: u32,
        salt: u64,
        lease_ms: u64,
    ) -> Result<Option<(PrefixMatch, Lease<'_>)>> {
        let mut m = PrefixMatch { prefix: Prefix::default(), tokens: 0 };
        let mut lease = 0u64;
        // SAFETY: a live handle (self) and pointers to values that outlive the call.
        let r = not_found_is_none(check(|e| unsafe {
            sys::auxstore_longest_prefix_for_tokens_leased(
                self.as_raw(),
                ns.0,
                tokens.as_ptr(),
                tokens.len(),
                block_size,
                salt,
                lease_ms,
                m.prefix.0.as_mut_ptr(),
                &mut m.tokens,
                &mut lease,
                e,
            )
        }))?;
        Ok(r.map(|_| (m, Lease { store: self, id: lease })))
    }

    /// A stored snapshot's manifest (`NotFound` when it is not stored).
    pub fn get_manifest(&self, ns: Namespace, prefix: &Prefix) -> Result<Manifest> {
        let mut capacity = 0usize;
        let mut layers: Vec<sys::auxstore_layer_info_t> = Vec::new();
        loop {
            layers.resize(capacity, sys::auxstore_layer_info_t::default());
            let (mut tokens, mut n) = (0u64, 0usize);
            // SAFETY: a live handle; `layers` has room for `capacity`
            // entries (auxstore reports more as OutOfRange, writing none).
            let r = check(|e| unsafe {
                sys::auxstore_get_manifest(
                    self.as_raw(),
                    ns.0,
                    prefix.0.as_ptr(),
                    &mut tokens,
                    if capacity == 0 { ptr::null_mut() } else { layers.as_mut_ptr() },
                    capacity,
                    &mut n,
                    e,
                )
            });
            match r {
                Ok(()) => {
                    layers.truncate(n);
                    let mut out = Vec::with_capacity(n);
                    for l in &layers {
                        out.push(LayerInfo {
                            layer: l.layer,
                            kind: Kind::from_c(l.kind as i64)?,
                            bytes: l.bytes,
                            xxh3: l.xxh3,
                        });
                    }
                    return Ok(Manifest { token_count: tokens, layers: out });
                }
                // *n_layers is set: size the array and ask again.
                Err(Error::OutOfRange(_)) if n > capacity => capacity = n,
                Err(e) => return Err(e),
            }
        }
    }

    /// Which of `prefixes` are stored, in one batched lookup: the token count
    /// of each one found. Counts no hit and changes no recency.
    pub fn get_manifests(&self, ns: Namespace, prefixes: &[Prefix]) -> Result<Vec<Option<u64>>> {
        let mut found = vec![0u8; prefixes.len()];
        let mut counts = vec![0u64; prefixes.len()];
        // SAFETY: a live handle; `found` and `counts` have one entry per
        // prefix, as auxstore writes.
        check(|e| unsafe {
            sys::auxstore_get_manifests(
                self.as_raw(),
                ns.0,
                Store::candidates(prefixes),
                prefixes.len(),
                found.as_mut_ptr(),
                counts.as_mut_ptr(),
                e,
            )
        })?;
        Ok(found.iter().zip(counts).map(|(&f, c)| if f != 0 { Some(c) } else { None }).collect())
    }

    /// One whole layer, every chunk checksum and the layer digest
    /// verified (a mismatch: `Corruption`, and the snapshot is quarantined).
    pub fn get_layer(&self, ns: Namespace, prefix: &Prefix, layer: u32) -> Result<Bytes> {
        let (mut data, mut size) = (ptr::null_mut(), 0usize);
        // SAFETY: a live handle and valid out pointers.
        check(|e| unsafe {
            sys::auxstore_get_layer(self.as_raw(), ns.0, prefix.0.as_ptr(), layer, &mut data, &mut size, e)
        })?;
        // SAFETY: on OK, `size` bytes auxstore malloc'd at `data`, now ours.
        Ok(unsafe { Bytes::from_raw(data, size) })
    }

    /// Reads layers straight into the callers' buffers (each chunk copied
    /// once while it is verified); every capacity is checked first
    /// (`OutOfRange`, nothing read). Sets each `dest.size`.
    pub fn read_layers(&self, ns: Namespace, prefix: &Prefix, dests: &mut [LayerDest<'_>]) -> Result<()> {
        let mut c: Vec<sys::auxstore_layer_dest_t> = dests
            .iter_mut()
            .map(|d| sys::auxstore_layer_dest_t {
                layer: d.layer,
                data: d.buf.as_mut_ptr() as *mut c_void,
                capacity: d.buf.len(),
                size: 0,
            })
            .collect();
        // SAFETY: a live handle; each dest points into a slice borrowed
        // mutably for the call, with its length as capacity (auxstore checks
        // every capacity before writing, and writes at most that).
        check(|e| unsafe {
            sys::auxstore_read_layers(self.as_raw(), ns.0, prefix.0.as_ptr(), c.as_mut_ptr(), c.len(), e)
        })?;
        for (d, c) in dests.iter_mut().zip(&c) {
            d.size = c.size;
        }
        Ok(())
    }

    /// Removes a snapshot (a synced commit); one not stored: Ok.
    pub fn erase(&self, ns: Namespace, prefix: &Prefix) -> Result<()> {
        // SAFETY: a live handle (self) and pointers to values that outlive the call.
        check(|e| unsafe { sys::auxstore_erase(self.as_raw(), ns.0, prefix.0.as_ptr(), e) })
    }

    /// Makes every snapshot accepted so far durable.
    pub fn flush(&self) -> Result<()> {
        // SAFETY: a live handle (self) and pointers to values that outlive the call.
        check(|e| unsafe { sys::auxstore_flush(self.as_raw(), e) })
    }

    /// The store's counters and gauges (docs/metrics.md); the counters start
    /// at 0 on every open, except `quarantines`.
    pub fn stats(&self) -> Result<Stats> {
        let mut s = sys::auxstore_stats_t::default();
        // SAFETY: a live handle (self) and pointers to values that outlive the call.
        check(|e| unsafe { sys::auxstore_stats(self.as_raw(), &mut s, e) })?;
        Ok(s.into())
    }

    /// The shared tier's counters by this handle (`shared` false, all 0,
    /// for a store without one).
    pub fn shared_stats(&self) -> Result<SharedStats> {
        let mut s = sys::auxstore_shared_stats_t {
            struct_size: std::mem::size_of::<sys::auxstore_shared_stats_t>(),
            ..Default::default()
        };
        // SAFETY: a live handle (self) and a pointer to a value that outlives the call.
        check(|e| unsafe { sys::auxstore_shared_stats(self.as_raw(), &mut s, e) })?;
        Ok(SharedStats {
            shared: s.shared != 0,
            uploads: s.uploads,
            pages_stored: s.pages_stored,
            pages_present: s.pages_present,
            upload_failures: s.upload_failures,
            shed: s.shed,
            queued: s.queued,
            restores: s.restores,
            corruptions: s.corruptions,
        })
    }

    /// Leases a snapshot for `lease_ms` (pinned against eviction, TTL expiry
    /// and compaction until released, dropped, or given to a restore).
    pub fn lease(&self, ns: Namespace, prefix: &Prefix, lease_ms: u64) -> Result<Lease<'_>> {
        let mut id = 0u64;
        // SAFETY: a live handle (self) and pointers to values that outlive the call.
        check(|e| unsafe {
            sys::auxstore_lease_acquire(self.as_raw(), ns.0, prefix.0.as_ptr(), lease_ms, &mut id, e)
        })?;
        Ok(Lease { store: self, id })
    }

    /// Releases a lease by id (`NotFound` when unknown, expired or released).
    pub fn release_lease(&self, id: u64) -> Result<()> {
        // SAFETY: a live handle (self) and pointers to values that outlive the call.
        check(|e| unsafe { sys::auxstore_lease_release(self.as_raw(), id, e) })
    }

    /// Prometheus text (format 0.0.4) of the store's counters and gauges;
    /// `labels` (e.g. `instance="a"`) goes on every sample.
    pub fn metrics_text(&self, labels: Option<&str>) -> Result<String> {
        metrics_text(Some(self), None, labels)
    }
}

fn not_found_is_none(r: Result<()>) -> Result<Option<()>> {
    match r {
        Ok(()) => Ok(Some(())),
        Err(Error::NotFound(_)) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Prometheus text of a store's and/or a pipeline's metrics (at least one).
pub fn metrics_text(store: Option<&Store>, pipeline: Option<&Pipeline>, labels: Option<&str>) -> Result<String> {
    let l = match labels {
        Some(l) => Some(cstring("auxstore::metrics_text: labels", l)?),
        None => None,
    };
    let mut text: *mut c_char = ptr::null_mut();
    // SAFETY: live handles or NULL, a NUL-terminated label string or NULL,
    // a valid out pointer.
    check(|e| unsafe {
        sys::auxstore_metrics_text(
            store.map_or(ptr::null_mut(), |s| s.as_raw()),
            pipeline.map_or(ptr::null(), |p| p.as_raw() as *const _),
            l.as_ref().map_or(ptr::null(), |l| l.as_ptr()),
            &mut text,
            e,
        )
    })?;
    if text.is_null() {
        return Err(Error::Internal("auxstore_metrics_text returned OK and no text".into()));
    }
    // SAFETY: a NUL-terminated string auxstore malloc'd, ours; freed once.
    let s = unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned();
    unsafe { sys::auxstore_free(text as *mut c_void) };
    Ok(s)
}

// ---- leases -----------------------------------------------------------------------------

/// A lease on a snapshot, released when dropped (or given to a restore with
/// [`crate::RestoreOptions::lease`], which releases it when the restore
/// completes). It borrows its store: a store cannot close under a lease.
#[derive(Debug)]
pub struct Lease<'s> {
    store: &'s Store,
    id: u64,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Store({:p})", self.inner.raw.as_ptr())
    }
}

impl<'s> Lease<'s> {
    /// The lease id (as `auxstore_lease_release` takes it).
    pub fn id(&self) -> u64 {
        self.id
    }
    /// The store that holds the lease.
    pub fn store(&self) -> &'s Store {
        self.store
    }
    /// Releases it now (`NotFound` when it had expired).
    pub fn release(self) -> Result<()> {
        let r = self.store.release_lease(self.id);
        std::mem::forget(self);
        r
    }
    /// Gives the id up without releasing it (it still expires).
    pub fn into_id(self) -> u64 {
        let id = self.id;
        std::mem::forget(self);
        id
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        // Expired leases are NotFound: nothing to do either way.
        let _ = self.store.release_lease(self.id);
    }
}
