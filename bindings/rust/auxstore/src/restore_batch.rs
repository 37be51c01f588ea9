//! Batched restores (`auxstore_restore_batch_*`): many snapshots into device
//! states with one handle, started in a [`RestoreScope`] (vLLM's
//! start_load_kv of a step's requests, then wait_for_layer_load and
//! get_finished).
use crate::backend::StreamRef;
use crate::error::{check, Error, Result};
use crate::pipeline::{c_restore_options, RestoreScope};
use crate::state::State;
use crate::store::Lease;
use crate::sys;
use crate::types::{Namespace, Prefix};
use std::marker::PhantomData;
use std::ptr::{self, NonNull};
use std::sync::Arc;

/// One snapshot of a batched restore: its targets (fresh states, one per
/// layer, each borrowed mutably until the scope ends) and, optionally, a
/// lease that its restore releases when it completes.
pub struct BatchSnapshot<'scope, 't> {
    ns: Namespace,
    prefix: Prefix,
    targets: Vec<(u32, &'scope mut State<'t>)>,
    lease: Option<Lease<'scope>>,
}

impl std::fmt::Debug for BatchSnapshot<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchSnapshot")
            .field("ns", &self.ns)
            .field("prefix", &self.prefix)
            .field("layers", &self.targets.iter().map(|(l, _)| *l).collect::<Vec<_>>())
            .field("lease", &self.lease.as_ref().map(|l| l.id()))
            .finish()
    }
}

impl<'scope, 't> BatchSnapshot<'scope, 't> {
    /// Snapshot (ns, prefix) into `targets` (layer, state).
    pub fn new<I>(ns: Namespace, prefix: &Prefix, targets: I) -> Self
    where
        I: IntoIterator<Item = (u32, &'scope mut State<'t>)>,
    {
        BatchSnapshot { ns, prefix: *prefix, targets: targets.into_iter().collect(), lease: None }
    }
    /// A lease (of the pipeline's store, e.g. from `Store::lookup_leased`)
    /// released when this snapshot's restore completes, whatever the outcome.
    pub fn lease(mut self, lease: Lease<'scope>) -> Self {
        self.lease = Some(lease);
        self
    }
}

// The C handle, released once the scope waited for it (the scope holds a
// clone until then; see RestoreScope::start_batch).
pub(crate) struct BatchHandle {
    raw: NonNull<sys::auxstore_restore_batch_t>,
}

// SAFETY: docs/c-abi.md, "Thread safety": auxstore_restore_batch_t is
// thread-safe except for release, which is Drop here (the last clone).
unsafe impl Send for BatchHandle {}
unsafe impl Sync for BatchHandle {}

impl BatchHandle {
    /// Waits for every restore of the batch, its result ignored (each
    /// snapshot's is the caller's to ask for).
    pub(crate) fn wait_quietly(&self) {
        // SAFETY: a live handle (released only in Drop).
        let _ = check(|e| unsafe { sys::auxstore_restore_batch_wait(self.raw.as_ptr(), e) });
    }
}

impl Drop for BatchHandle {
    fn drop(&mut self) {
        // SAFETY: ours, the last clone; restores still running go on, and
        // the scope waited for them before dropping its clone.
        unsafe { sys::auxstore_restore_batch_release(self.raw.as_ptr()) }
    }
}

/// A running (or finished) batched restore, valid within its scope.
/// Snapshot `i` is the i-th [`BatchSnapshot`] given to
/// [`RestoreScope::start_batch`]. `Send + Sync`. Dropping it stops nothing:
/// the scope still waits for every restore of the batch.
pub struct RestoreBatch<'scope> {
    handle: Arc<BatchHandle>,
    n: usize,
    _p: PhantomData<&'scope ()>,
}

impl std::fmt::Debug for RestoreBatch<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RestoreBatch({} snapshots, done: {})", self.n, self.poll())
    }
}

impl<'scope, 'env> RestoreScope<'scope, 'env> {
    /// Starts restoring every snapshot of `snapshots` with one handle, all at
    /// once, on `stream` (the engine's) or the pipeline's own.
    /// Every snapshot is checked first (its targets as [`RestoreScope::start`]
    /// checks them, no state in two snapshots, its lease of this pipeline's
    /// store): `Err` names the first bad one, nothing starts, and the leases
    /// are released. `Ok`: each snapshot's own error (missing, corrupt) is its
    /// result and never stops the others.
    pub fn start_batch<'t>(
        &'scope self,
        snapshots: Vec<BatchSnapshot<'scope, 't>>,
        stream: Option<StreamRef<'scope>>,
    ) -> Result<RestoreBatch<'scope>>
    where
        't: 'scope,
    {
        let pipeline = self.pipeline;
        for (i, s) in snapshots.iter().enumerate() {
            if let Some(l) = &s.lease {
                if !l.store().same_store(pipeline.store()) {
                    return Err(Error::invalid(format!(
                        "auxstore::RestoreScope::start_batch: snapshots[{i}]'s lease belongs to another store"
                    )));
                }
            }
        }
        let targets: Vec<Vec<sys::auxstore_restore_target_t>> = snapshots
            .iter()
            .map(|s| {
                s.targets
                    .iter()
                    .map(|(layer, st)| sys::auxstore_restore_target_t { layer: *layer, state: st.as_raw() })
                    .collect()
            })
            .collect();
        let c: Vec<sys::auxstore_restore_snapshot_t> = snapshots
            .iter()
            .zip(&targets)
            .map(|(s, t)| sys::auxstore_restore_snapshot_t {
                ns: s.ns.0,
                prefix: s.prefix.0,
                targets: if t.is_empty() { ptr::null() } else { t.as_ptr() },
                n_targets: t.len(),
                lease: s.lease.as_ref().map_or(0, |l| l.id()),
            })
            .collect();
        let mut o = c_restore_options();
        if let Some(s) = stream {
            o.use_stream = 1;
            o.stream = pipeline.backend().own_stream(s, "auxstore::RestoreScope::start_batch")?;
        }
        let mut h = ptr::null_mut();
        // SAFETY: live handles; every target is borrowed mutably for 'scope,
        // which the scope's wait (of this batch, registered below before the
        // handle can be used) outlasts; `c` and `targets` outlive the call.
        check(|e| unsafe {
            sys::auxstore_restore_batch_start(
                pipeline.as_raw(),
                if c.is_empty() { ptr::null() } else { c.as_ptr() },
                c.len(),
                &o,
                &mut h,
                e,
            )
        })?;
        let handle = Arc::new(BatchHandle { raw: NonNull::new(h).expect("auxstore_restore_batch_start: OK and NULL") });
        self.inner.batches.lock().unwrap_or_else(|e| e.into_inner()).push(handle.clone());
        let n = snapshots.len();
        for s in snapshots {
            if let Some(l) = s.lease {
                l.into_id(); // its restore releases it
            }
        }
        Ok(RestoreBatch { handle, n, _p: PhantomData })
    }
}

impl RestoreBatch<'_> {
    fn raw(&self) -> *mut sys::auxstore_restore_batch_t {
        self.handle.raw.as_ptr()
    }
    fn check_index(&self, i: usize) -> Result<()> {
        if i >= self.n {
            return Err(Error::invalid(format!("auxstore::RestoreBatch: snapshot {i}: the batch has {}", self.n)));
        }
        Ok(())
    }

    /// How many snapshots it restores.
    pub fn len(&self) -> usize {
        self.n
    }
    /// Whether it restores none.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }
    /// Whether every snapshot is done.
    pub fn poll(&self) -> bool {
        // SAFETY: a live handle (the scope releases it after it ends).
        unsafe { sys::auxstore_restore_batch_poll(self.raw()) == 1 }
    }
    /// Whether snapshot `i` is done (false for an `i` out of range).
    pub fn snapshot_done(&self, i: usize) -> bool {
        // SAFETY: a live handle; C checks `i`.
        unsafe { sys::auxstore_restore_batch_snapshot_done(self.raw(), i) == 1 }
    }
    /// Whether `layer` of snapshot `i` is on the device.
    pub fn layer_done(&self, i: usize, layer: u32) -> bool {
        // SAFETY: a live handle; C checks `i`.
        unsafe { sys::auxstore_restore_batch_layer_done(self.raw(), i, layer) == 1 }
    }
    /// Waits for snapshot `i`: its result.
    pub fn wait_snapshot(&self, i: usize) -> Result<()> {
        self.check_index(i)?;
        // SAFETY: a live handle.
        check(|e| unsafe { sys::auxstore_restore_batch_wait_snapshot(self.raw(), i, e) })
    }
    /// Waits for `layer` of snapshot `i` (vLLM's wait_for_layer_load): `Ok`
    /// once it is on the device, or the snapshot's error if it failed before.
    pub fn wait_layer(&self, i: usize, layer: u32) -> Result<()> {
        self.check_index(i)?;
        // SAFETY: a live handle.
        check(|e| unsafe { sys::auxstore_restore_batch_wait_layer(self.raw(), i, layer, e) })
    }
    /// Waits for every snapshot: `Ok`, or the first failed one's error.
    pub fn wait(&self) -> Result<()> {
        // SAFETY: a live handle.
        check(|e| unsafe { sys::auxstore_restore_batch_wait(self.raw(), e) })
    }
    /// The snapshots done since the last call, each once, ascending (vLLM's
    /// get_finished). Does not wait.
    pub fn finished(&self) -> Result<Vec<usize>> {
        let mut v = vec![0usize; self.n];
        let mut n = 0usize;
        // SAFETY: a live handle; `v` has room for every snapshot.
        check(|e| unsafe {
            sys::auxstore_restore_batch_finished(
                self.raw(),
                if v.is_empty() { ptr::null_mut() } else { v.as_mut_ptr() },
                v.len(),
                &mut n,
                e,
            )
        })?;
        v.truncate(n);
        Ok(v)
    }
    /// Asks every restore to stop (each ends `Unavailable`, "cancelled",
    /// unless it already committed). Returns at once.
    pub fn cancel(&self) {
        // SAFETY: a live handle.
        unsafe { sys::auxstore_restore_batch_cancel(self.raw()) }
    }
}
