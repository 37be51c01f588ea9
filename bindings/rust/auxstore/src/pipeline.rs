//! Pipelines: write-behind snapshots and restores (blocking, or scoped with
//! handles and callbacks).
use crate::backend::{Backend, StreamRef};
use crate::error::{check, Error, Result};
use crate::state::State;
use crate::store::{Lease, Store};
use crate::sys;
use crate::types::{Namespace, PipelineOptions, PipelineStats, Prefix};
use std::ffi::CStr;
use std::marker::PhantomData;
use std::os::raw::{c_char, c_int, c_void};
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::ptr::{self, NonNull};
use std::sync::{Arc, Condvar, Mutex};

/// A pipeline over a store and a backend (`auxstore_pipeline_t`): restores
/// store -> device states, write-behind snapshots device -> store.
/// `Send + Sync`. It owns what it needs: a clone of the [`Store`] and of the
/// [`Backend`] (both `Arc` handles), so an engine can keep the pipeline, the
/// store and the backend side by side in one struct, or give the pipeline
/// to another thread; they close only after it. It is dropped only once
/// every restore scope on it has ended.
pub struct Pipeline {
    raw: NonNull<sys::auxstore_pipeline_t>,
    // Dropped after auxstore_pipeline_destroy (fields drop after Drop::drop).
    store: Store,
    backend: Backend,
}

// SAFETY: docs/c-abi.md, "Thread safety": auxstore_pipeline_t is
// thread-safe except for destroy, which takes `self` by value here.
unsafe impl Send for Pipeline {}
unsafe impl Sync for Pipeline {}

/// What [`Pipeline::snapshot`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SnapshotOutcome {
    /// Accepted: it will be written off the caller's thread
    /// ([`Pipeline::flush`] waits for it).
    Accepted,
    /// Shed (`AUXSTORE_CAPACITY`: the write-behind queue or its pinned memory
    /// is full): nothing enqueued, counted in `snapshots_shed`; the message
    /// says which.
    Shed(String),
}

impl SnapshotOutcome {
    /// Whether the snapshot was accepted (not shed).
    pub fn is_accepted(&self) -> bool {
        *self == SnapshotOutcome::Accepted
    }
}

impl std::fmt::Debug for Pipeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Pipeline({:p})", self.raw.as_ptr())
    }
}

impl Pipeline {
    /// A pipeline with the default options (staging sized to the store's
    /// chunks). It keeps a clone of the store and of the backend until
    /// dropped; its threads start here.
    ///
    /// # Errors
    /// The backend's error when the pinned staging memory is not there.
    pub fn new(store: &Store, backend: &Backend) -> Result<Pipeline> {
        let mut raw = ptr::null_mut();
        // SAFETY: live handles and a valid out pointer.
        check(|e| unsafe { sys::auxstore_pipeline_create(store.as_raw(), backend.as_raw(), &mut raw, e) })?;
        Ok(Pipeline::from_raw(raw, store, backend, "auxstore_pipeline_create"))
    }

    /// A pipeline with `options` (staging buffers, I/O threads, read-ahead,
    /// write-behind queue limits).
    ///
    /// # Errors
    /// `InvalidArgument` when `staging_bytes` is below the store's chunk
    /// size, or when `staging_buffers * staging_bytes` overflows or exceeds
    /// `isize::MAX` (refused before auxstore is called); the backend's error
    /// when the pinned staging memory is not there.
    pub fn with_options(store: &Store, backend: &Backend, options: &PipelineOptions) -> Result<Pipeline> {
        crate::sizes::product(
            "auxstore::Pipeline::with_options: staging (staging_buffers * staging_bytes)",
            &[options.staging_buffers as u64, options.staging_bytes as u64],
        )?;
        crate::sizes::allocation("auxstore::Pipeline::with_options: staging_bytes", options.staging_bytes as u64)?;
        let o = options.to_c();
        let mut raw = ptr::null_mut();
        // SAFETY: live handles, valid options and out
        // pointer; the staging sizes are allocatable (checked above).
        check(|e| unsafe { sys::auxstore_pipeline_create_with(store.as_raw(), backend.as_raw(), &o, &mut raw, e) })?;
        Ok(Pipeline::from_raw(raw, store, backend, "auxstore_pipeline_create_with"))
    }

    fn from_raw(raw: *mut sys::auxstore_pipeline_t, store: &Store, backend: &Backend, what: &str) -> Self {
        let raw = NonNull::new(raw).unwrap_or_else(|| panic!("{what} returned OK and NULL"));
        // The clones keep the store and the backend open for the pipeline's
        // threads, also when the pipeline is leaked with mem::forget.
        Pipeline { raw, store: store.clone(), backend: backend.clone() }
    }

    /// The raw handle, for calls into `auxstore_sys` (valid while `self` is).
    pub fn as_raw(&self) -> *mut sys::auxstore_pipeline_t {
        self.raw.as_ptr()
    }
    /// The store it reads and writes (its clone).
    pub fn store(&self) -> &Store {
        &self.store
    }
    /// The backend its states and streams belong to (its clone).
    pub fn backend(&self) -> &Backend {
        &self.backend
    }

    /// The pipeline's own stream (restores without a stream run on it).
    pub fn stream(&self) -> StreamRef<'_> {
        // SAFETY: a live handle; the id stays valid while the pipeline does,
        // which the returned reference's borrow of `self` guarantees.
        StreamRef::of(unsafe { sys::auxstore_pipeline_stream(self.as_raw()) }, self.backend.as_raw())
    }

    /// The pipeline's counters and restore histograms (docs/metrics.md).
    pub fn stats(&self) -> Result<PipelineStats> {
        let mut s = sys::auxstore_pipeline_stats_t::default();
        // SAFETY: a live handle and a valid out pointer.
        check(|e| unsafe { sys::auxstore_pipeline_stats(self.as_raw(), &mut s, e) })?;
        Ok(s.into())
    }

    /// Prometheus text of the pipeline's counters and histograms (with the
    /// store's too: [`crate::metrics_text`]).
    pub fn metrics_text(&self, labels: Option<&str>) -> Result<String> {
        crate::store::metrics_text(None, Some(self), labels)
    }

    /// Write-behind snapshot of `sources` (layer, state): their bytes are
    /// copied D2H on `stream` (ordered after the engine's kernels on it) into
    /// pinned memory and written to the store off this thread. Shedding is
    /// `Ok(SnapshotOutcome::Shed)`, never a wait.
    ///
    /// This safe call then waits for `stream` to pass those copies, so the
    /// sources are free to change or be dropped when it returns (the store
    /// write still happens behind). [`Pipeline::snapshot_async`] skips that
    /// wait.
    ///
    /// # Errors
    /// `InvalidArgument` for a stream of another backend, a state of another
    /// backend, repeated layers or a bad namespace; the errors auxstore
    /// finds before enqueueing (nothing is enqueued then). Write errors come
    /// later, from [`Pipeline::flush`].
    pub fn snapshot<'s>(
        &self,
        ns: Namespace,
        prefix: &Prefix,
        token_count: u64,
        sources: &[(u32, &State<'_>)],
        stream: impl Into<StreamRef<'s>>,
    ) -> Result<SnapshotOutcome> {
        let stream = stream.into();
        // SAFETY: the stream is synchronised before the sources are released
        // (the `&State` borrows end when this returns). Should that
        // synchronize fail (a CUDA context already broken), the copies may
        // still be pending; every later call on the backend fails too.
        let outcome = unsafe { self.snapshot_async(ns, prefix, token_count, sources, stream)? };
        if outcome.is_accepted() {
            self.backend.synchronize(stream)?;
        }
        Ok(outcome)
    }

    /// [`Pipeline::snapshot`] without waiting for the stream: the C ABI's
    /// semantics.
    ///
    /// # Safety
    /// The sources' device bytes must stay unchanged, and the states (with
    /// their buffers) alive, until `stream` has passed the copies (e.g. until
    /// the engine synchronises it or records an event after them).
    pub unsafe fn snapshot_async(
        &self,
        ns: Namespace,
        prefix: &Prefix,
        token_count: u64,
        sources: &[(u32, &State<'_>)],
        stream: StreamRef<'_>,
    ) -> Result<SnapshotOutcome> {
        let s = self.backend.own_stream(stream, "auxstore::Pipeline::snapshot")?;
        let c: Vec<sys::auxstore_snapshot_source_t> = sources
            .iter()
            .map(|(layer, state)| sys::auxstore_snapshot_source_t { layer: *layer, state: state.as_raw() as *const _ })
            .collect();
        // SAFETY: live handles; `c` holds `c.len()` sources, each a live
        // state borrowed for the call (the caller's contract covers the
        // asynchronous copies).
        let r = check(|e| {
            sys::auxstore_snapshot(self.as_raw(), ns.0, prefix.0.as_ptr(), token_count, c.as_ptr(), c.len(), s, e)
        });
        match r {
            Ok(()) => Ok(SnapshotOutcome::Accepted),
            Err(Error::Capacity(m)) => Ok(SnapshotOutcome::Shed(m)),
            Err(e) => Err(e),
        }
    }

    /// Waits until every accepted snapshot is written; the first write error
    /// since the last flush.
    pub fn flush(&self) -> Result<()> {
        // SAFETY: a live handle.
        check(|e| unsafe { sys::auxstore_pipeline_flush(self.as_raw(), e) })
    }

    /// Restores snapshot (ns, prefix) into fresh `targets` (one per snapshot
    /// layer) and waits for the result. A failure moves no counter. The
    /// targets are borrowed mutably for the call.
    ///
    /// # Errors
    /// `NotFound` when the snapshot is not stored; `InvalidArgument` for a
    /// target of another backend, repeated or missing layers, or a target
    /// whose kind or geometry does not fit; `Corruption` when stored bytes
    /// fail their checksums (the snapshot is quarantined).
    pub fn restore_wait(&self, ns: Namespace, prefix: &Prefix, targets: &mut [(u32, &mut State<'_>)]) -> Result<()> {
        let c = c_targets(targets.iter_mut().map(|(l, s)| (*l, &**s)));
        // SAFETY: live handles; every target is a live state borrowed
        // mutably until this returns, which is after the restore completed.
        check(|e| unsafe { sys::auxstore_restore_wait(self.as_raw(), ns.0, prefix.0.as_ptr(), c.as_ptr(), c.len(), e) })
    }

    /// Runs `f` with a [`RestoreScope`] in which restores can be started
    /// asynchronously (handles, callbacks). Their targets are borrowed
    /// mutably for the whole scope, and the scope returns only when every
    /// restore started in it has completed and its callbacks have returned
    /// — also when `f` panics, or leaks a handle with `mem::forget` — so no
    /// target can be used or freed while a restore still writes it.
    ///
    /// Callbacks run on pipeline threads; a callback that panics is caught,
    /// and the scope then panics once everything has completed.
    pub fn scope<'env, F, T>(&'env self, f: F) -> T
    where
        F: for<'scope> FnOnce(&'scope RestoreScope<'scope, 'env>) -> T,
    {
        let scope = RestoreScope {
            pipeline: self,
            inner: Arc::new(ScopeInner::default()),
            _scope: PhantomData,
            _env: PhantomData,
        };
        let r = catch_unwind(AssertUnwindSafe(|| f(&scope)));
        let panics = scope.inner.wait_all();
        match r {
            Err(p) => resume_unwind(p),
            Ok(_) if panics > 0 => panic!("auxstore: {panics} restore callback(s) panicked"),
            Ok(v) => v,
        }
    }
}

impl Drop for Pipeline {
    fn drop(&mut self) {
        // SAFETY: ours; no scope (hence no restore of ours) is running. It
        // waits for accepted snapshots; the store and backend clones go after.
        unsafe { sys::auxstore_pipeline_destroy(self.raw.as_ptr()) }
    }
}

/// `auxstore_restore_options_init`'s defaults.
pub(crate) fn c_restore_options() -> sys::auxstore_restore_options_t {
    let mut o = sys::auxstore_restore_options_t {
        struct_size: 0,
        use_stream: 0,
        stream: 0,
        lease: 0,
        on_layer: None,
        on_layer_arg: ptr::null_mut(),
        done: None,
        done_arg: ptr::null_mut(),
        use_rows: 0,
        first_row: 0,
        last_row: 0,
    };
    // SAFETY: a valid out pointer (fills struct_size and the defaults).
    unsafe { sys::auxstore_restore_options_init(&mut o) };
    o
}

fn c_targets<'x, I: IntoIterator<Item = (u32, &'x State<'x>)>>(targets: I) -> Vec<sys::auxstore_restore_target_t> {
    targets.into_iter().map(|(layer, s)| sys::auxstore_restore_target_t { layer, state: s.as_raw() }).collect()
}

// ---- scopes -----------------------------------------------------------------------

#[derive(Default)]
pub(crate) struct ScopeInner {
    // (restores whose done callback has not returned yet, callback panics)
    state: Mutex<(usize, usize)>,
    cv: Condvar,
    // Batched restores started in the scope (they report through their
    // handle, not a callback): waited for when the scope ends.
    pub(crate) batches: Mutex<Vec<Arc<crate::restore_batch::BatchHandle>>>,
}

impl ScopeInner {
    fn started(&self) {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).0 += 1;
    }
    fn finished(&self, panicked: usize) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.0 -= 1;
        s.1 += panicked;
        self.cv.notify_all();
    }
    fn panicked(&self) {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).1 += 1;
    }
    /// Waits for every restore; returns how many callbacks panicked.
    fn wait_all(&self) -> usize {
        let batches = std::mem::take(&mut *self.batches.lock().unwrap_or_else(|e| e.into_inner()));
        for b in &batches {
            b.wait_quietly();
        }
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        while s.0 > 0 {
            s = self.cv.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        s.1
    }
}

/// Where asynchronous restores run ([`Pipeline::scope`]). Like
/// `std::thread::scope`: `'scope` is the scope itself, `'env` what it
/// borrows; targets are borrowed for `'scope`, i.e. until the scope ends.
/// `Sync`: restores may be started from several threads of the scope.
pub struct RestoreScope<'scope, 'env: 'scope> {
    pub(crate) pipeline: &'env Pipeline,
    pub(crate) inner: Arc<ScopeInner>,
    _scope: PhantomData<&'scope mut &'scope ()>,
    _env: PhantomData<&'env mut &'env ()>,
}

impl std::fmt::Debug for RestoreScope<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.inner.state.lock().unwrap_or_else(|e| e.into_inner());
        write!(f, "RestoreScope({} running)", s.0)
    }
}

impl std::fmt::Debug for RestoreOptions<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RestoreOptions")
            .field("stream", &self.stream)
            .field("lease", &self.lease.as_ref().map(|l| l.id()))
            .field("rows", &self.rows)
            .field("on_layer", &self.on_layer.is_some())
            .field("on_done", &self.done.is_some())
            .finish()
    }
}

/// Options of one scoped restore (`auxstore_restore_options_t`).
#[derive(Default)]
pub struct RestoreOptions<'scope> {
    stream: Option<StreamRef<'scope>>,
    lease: Option<Lease<'scope>>,
    rows: Option<std::ops::Range<u64>>,
    on_layer: Option<Box<dyn Fn(u32) + Send + Sync + 'scope>>,
    done: Option<Box<dyn FnOnce(Result<()>) + Send + 'scope>>,
}

impl<'scope> RestoreOptions<'scope> {
    /// The pipeline's own stream, no lease, no callbacks (the same as
    /// [`Default`]).
    pub fn new() -> RestoreOptions<'scope> {
        RestoreOptions::default()
    }
    /// Run on this stream (the engine's; never stream 0) instead of the
    /// pipeline's own.
    pub fn stream(mut self, stream: impl Into<StreamRef<'scope>>) -> Self {
        self.stream = Some(stream.into());
        self
    }
    /// The lease (of the pipeline's store) is released when the restore
    /// completes, whatever the outcome.
    pub fn lease(mut self, lease: Lease<'scope>) -> Self {
        self.lease = Some(lease);
        self
    }
    /// Rows `first..last` only, of QSA and DSA targets that hold exactly rows
    /// `0..first` (the engine has the head on its device already): every
    /// layer is still read and verified whole, only the range is uploaded,
    /// the counters become `last` (QSA: the blocks complete by then
    /// re-pooled). The restore's result is `InvalidArgument` for an opaque
    /// target, a range outside the snapshot's rows, or a target holding
    /// another number of rows.
    pub fn rows(mut self, rows: std::ops::Range<u64>) -> Self {
        self.rows = Some(rows);
        self
    }
    /// Called once per layer when its bytes (and QSA re-pool) are on the
    /// device, on a backend thread: it must not block or call auxstore.
    pub fn on_layer(mut self, f: impl Fn(u32) + Send + Sync + 'scope) -> Self {
        self.on_layer = Some(Box::new(f));
        self
    }
    /// Called once with the result when the restore ends, on a pipeline
    /// thread: keep it short; never wait for another restore from it.
    pub fn on_done(mut self, f: impl FnOnce(Result<()>) + Send + 'scope) -> Self {
        self.done = Some(Box::new(f));
        self
    }
}

// What the C callbacks' `arg` points to: freed by the done trampoline, the
// last callback of a restore (every on_layer call precedes it on the stream).
struct Callbacks {
    on_layer: Option<Box<dyn Fn(u32) + Send + Sync>>,
    done: Option<Box<dyn FnOnce(Result<()>) + Send>>,
    scope: Arc<ScopeInner>,
}

unsafe extern "C" fn on_layer_trampoline(arg: *mut c_void, layer: u32) {
    // SAFETY: `arg` is a live Callbacks until done_trampoline frees it.
    let cb = &*(arg as *const Callbacks);
    if let Some(f) = &cb.on_layer {
        if catch_unwind(AssertUnwindSafe(|| f(layer))).is_err() {
            cb.scope.panicked();
        }
    }
}

unsafe extern "C" fn done_trampoline(arg: *mut c_void, code: c_int, message: *const c_char) {
    // SAFETY: called exactly once per started restore, after its on_layer
    // calls: the Box is ours now.
    let cb = Box::from_raw(arg as *mut Callbacks);
    let Callbacks { on_layer, done, scope } = *cb;
    let mut panicked = 0;
    if let Some(f) = done {
        let r = if code == sys::AUXSTORE_OK {
            Ok(())
        } else {
            let m =
                if message.is_null() { String::new() } else { CStr::from_ptr(message).to_string_lossy().into_owned() };
            Err(Error::from_code(code, m))
        };
        if catch_unwind(AssertUnwindSafe(move || f(r))).is_err() {
            panicked = 1;
        }
    }
    // The closures may borrow 'scope data: drop them before the scope may end.
    drop(on_layer);
    scope.finished(panicked);
}

#[allow(clippy::type_complexity)]
fn erase_on_layer<'s>(f: Box<dyn Fn(u32) + Send + Sync + 's>) -> Box<dyn Fn(u32) + Send + Sync> {
    // SAFETY: the scope outlives every call and the drop (it waits for the
    // done trampoline, which drops it, before 's ends).
    unsafe { std::mem::transmute::<Box<dyn Fn(u32) + Send + Sync + 's>, Box<dyn Fn(u32) + Send + Sync + 'static>>(f) }
}

#[allow(clippy::type_complexity)]
fn erase_done<'s>(f: Box<dyn FnOnce(Result<()>) + Send + 's>) -> Box<dyn FnOnce(Result<()>) + Send> {
    // SAFETY: as erase_on_layer.
    unsafe {
        std::mem::transmute::<Box<dyn FnOnce(Result<()>) + Send + 's>, Box<dyn FnOnce(Result<()>) + Send + 'static>>(f)
    }
}

impl<'scope, 'env> RestoreScope<'scope, 'env> {
    /// The pipeline the scope's restores run on.
    pub fn pipeline(&self) -> &'env Pipeline {
        self.pipeline
    }

    fn callbacks(
        &self,
        on_layer: Option<Box<dyn Fn(u32) + Send + Sync + 'scope>>,
        done: Option<Box<dyn FnOnce(Result<()>) + Send + 'scope>>,
    ) -> *mut Callbacks {
        Box::into_raw(Box::new(Callbacks {
            on_layer: on_layer.map(erase_on_layer),
            done: done.map(erase_done),
            scope: self.inner.clone(),
        }))
    }

    /// Starts restoring snapshot (ns, prefix) into fresh `targets` (one per
    /// layer; each borrowed mutably until the scope ends). `Ok`: started,
    /// the handle reports progress and the result (a missing snapshot or
    /// corruption found later is the handle's result). `Err`: refused, no
    /// callback runs, the lease (if any) is released.
    pub fn start<'t, I>(
        &'scope self,
        ns: Namespace,
        prefix: &Prefix,
        targets: I,
        options: RestoreOptions<'scope>,
    ) -> Result<RestoreHandle<'scope>>
    where
        't: 'scope,
        I: IntoIterator<Item = (u32, &'scope mut State<'t>)>,
    {
        let c = c_targets(targets.into_iter().map(|(l, s)| (l, &*s)));
        let backend = &self.pipeline.backend;
        let mut o = c_restore_options();
        if let Some(s) = options.stream {
            o.use_stream = 1;
            o.stream = backend.own_stream(s, "auxstore::RestoreScope::start")?;
        }
        if let Some(r) = &options.rows {
            if r.start > r.end {
                return Err(Error::invalid(format!(
                    "auxstore::RestoreScope::start: rows {}..{} end before they start",
                    r.start, r.end
                )));
            }
            o.use_rows = 1;
            o.first_row = r.start;
            o.last_row = r.end;
        }
        if let Some(l) = &options.lease {
            if !l.store().same_store(&self.pipeline.store) {
                return Err(Error::invalid("auxstore::RestoreScope::start: the lease belongs to another store"));
            }
            o.lease = l.id();
        }
        let has_on_layer = options.on_layer.is_some();
        let arg = self.callbacks(options.on_layer, options.done);
        if has_on_layer {
            o.on_layer = Some(on_layer_trampoline);
            o.on_layer_arg = arg as *mut c_void;
        }
        o.done = Some(done_trampoline);
        o.done_arg = arg as *mut c_void;
        self.inner.started();
        let mut h = ptr::null_mut();
        // SAFETY: live handles; the targets are borrowed mutably for 'scope,
        // which the scope's wait_all outlasts; `arg` lives until the done
        // trampoline (called exactly once on OK) or the error arm frees it.
        let r = check(|e| unsafe {
            sys::auxstore_restore_start(
                self.pipeline.as_raw(),
                ns.0,
                prefix.0.as_ptr(),
                c.as_ptr(),
                c.len(),
                &o,
                &mut h,
                e,
            )
        });
        match r {
            Ok(()) => {
                if let Some(l) = options.lease {
                    l.into_id(); // the restore releases it
                }
                Ok(RestoreHandle {
                    raw: NonNull::new(h).expect("auxstore_restore_start: OK and NULL"),
                    backend: backend.as_raw(),
                    _p: PhantomData,
                })
            }
            Err(e) => {
                // Refused: the callbacks will never run.
                // SAFETY: `arg` came from Box::into_raw and C did not keep it.
                drop(unsafe { Box::from_raw(arg) });
                self.inner.finished(0);
                Err(e)
            }
        }
    }

    /// Starts a restore whose only report is `done(result)`, called once on a
    /// pipeline thread (`auxstore_restore`). `Err`: refused, `done` is not
    /// called.
    pub fn start_with_callback<'t, I, F>(
        &'scope self,
        ns: Namespace,
        prefix: &Prefix,
        targets: I,
        done: F,
    ) -> Result<()>
    where
        't: 'scope,
        I: IntoIterator<Item = (u32, &'scope mut State<'t>)>,
        F: FnOnce(Result<()>) + Send + 'scope,
    {
        let c = c_targets(targets.into_iter().map(|(l, s)| (l, &*s)));
        let arg = self.callbacks(None, Some(Box::new(done)));
        self.inner.started();
        // SAFETY: as in `start`.
        let r = check(|e| unsafe {
            sys::auxstore_restore(
                self.pipeline.as_raw(),
                ns.0,
                prefix.0.as_ptr(),
                c.as_ptr(),
                c.len(),
                Some(done_trampoline),
                arg as *mut c_void,
                e,
            )
        });
        if r.is_err() {
            // SAFETY: `arg` came from Box::into_raw and C did not keep it.
            drop(unsafe { Box::from_raw(arg) });
            self.inner.finished(0);
        }
        r
    }
}

/// A running (or finished) restore (`auxstore_restore_handle_t`), valid
/// within its scope. `Send + Sync` (the C handle is thread-safe). Dropping
/// it does not stop the restore: the scope still waits for it.
pub struct RestoreHandle<'scope> {
    raw: NonNull<sys::auxstore_restore_handle_t>,
    backend: *const sys::auxstore_backend_t,
    _p: PhantomData<&'scope ()>,
}

// SAFETY: docs/c-abi.md, "Thread safety": auxstore_restore_handle_t is
// thread-safe except for release, which is Drop here.
unsafe impl Send for RestoreHandle<'_> {}
unsafe impl Sync for RestoreHandle<'_> {}

impl std::fmt::Debug for RestoreHandle<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RestoreHandle(done: {})", self.poll())
    }
}

impl<'scope> RestoreHandle<'scope> {
    /// The raw handle, for calls into `auxstore_sys`.
    pub fn as_raw(&self) -> *mut sys::auxstore_restore_handle_t {
        self.raw.as_ptr()
    }

    /// Whether it is done.
    pub fn poll(&self) -> bool {
        // SAFETY: a live handle (self; released only in Drop).
        unsafe { sys::auxstore_restore_poll(self.as_raw()) == 1 }
    }

    /// Waits until done; the restore's result (`Unavailable` when cancelled).
    pub fn join(&self) -> Result<()> {
        // SAFETY: a live handle.
        check(|e| unsafe { sys::auxstore_restore_join(self.as_raw(), e) })
    }

    /// Asks it to stop; it then ends `Unavailable` ("cancelled") unless it
    /// already committed. Returns at once.
    pub fn cancel(&self) {
        // SAFETY: a live handle.
        unsafe { sys::auxstore_restore_cancel(self.as_raw()) }
    }

    /// Whether `layer`'s bytes (and re-pool) are on the device.
    pub fn layer_done(&self, layer: u32) -> bool {
        // SAFETY: a live handle.
        unsafe { sys::auxstore_restore_layer_done(self.as_raw(), layer) == 1 }
    }

    /// Waits until `layer` is done, or the restore failed before it (its
    /// error). Counters are still committed only when the whole restore is.
    pub fn wait_layer(&self, layer: u32) -> Result<()> {
        // SAFETY: a live handle.
        check(|e| unsafe { sys::auxstore_restore_wait_layer(self.as_raw(), layer, e) })
    }

    /// Makes `stream` wait, on the device, for `layer`; blocks the host only
    /// until the layer's work is enqueued.
    pub fn stream_wait_layer<'s>(&self, layer: u32, stream: impl Into<StreamRef<'s>>) -> Result<()> {
        let s = self.stream_of(stream.into())?;
        // SAFETY: a live handle; the stream is borrowed for the call.
        check(|e| unsafe { sys::auxstore_restore_stream_wait_layer(self.as_raw(), layer, s, e) })
    }

    /// Makes `stream` wait, on the device, for every layer.
    pub fn stream_wait_all<'s>(&self, stream: impl Into<StreamRef<'s>>) -> Result<()> {
        let s = self.stream_of(stream.into())?;
        // SAFETY: a live handle; the stream is borrowed for the call.
        check(|e| unsafe { sys::auxstore_restore_stream_wait_all(self.as_raw(), s, e) })
    }

    fn stream_of(&self, s: StreamRef<'_>) -> Result<u64> {
        if !s.backend.is_null() && s.backend != self.backend {
            return Err(Error::invalid("auxstore::RestoreHandle: the stream belongs to another backend"));
        }
        Ok(s.id)
    }

    /// The layers done so far, ascending (for a failed restore: which
    /// layers' bytes were restored).
    pub fn layers_done(&self) -> Result<Vec<u32>> {
        let mut v: Vec<u32> = Vec::new();
        loop {
            let mut n = 0usize;
            let cap = v.len();
            // SAFETY: a live handle; `v` has room for `cap` layers, all
            // auxstore writes (it reports a larger `n` as OutOfRange).
            let r = check(|e| unsafe {
                sys::auxstore_restore_layers_done(
                    self.as_raw(),
                    if cap == 0 { ptr::null_mut() } else { v.as_mut_ptr() },
                    cap,
                    &mut n,
                    e,
                )
            });
            match r {
                Ok(()) => {
                    v.truncate(n);
                    return Ok(v);
                }
                Err(Error::OutOfRange(_)) if n > cap => v.resize(n, 0),
                Err(e) => return Err(e),
            }
        }
    }
}

impl Drop for RestoreHandle<'_> {
    fn drop(&mut self) {
        // SAFETY: ours; a restore still running goes on (the scope waits).
        unsafe { sys::auxstore_restore_handle_release(self.raw.as_ptr()) }
    }
}
