//! One layer's device state of one sequence: auxstore-allocated or borrowed.
use crate::backend::Backend;
use crate::error::{check, Result};
use crate::sys;
use crate::types::{Bytes, Kind};
use std::marker::PhantomData;
use std::os::raw::c_void;
use std::ptr::{self, NonNull};

/// One layer's device state (`auxstore_state_t`): QSA, DSA or opaque.
///
/// * Made by [`Backend::qsa_state`] / [`Backend::dsa_state`] /
///   [`Backend::opaque_state`] it owns its device memory (freed on drop).
/// * Made by [`Backend::borrow_qsa_state`] and friends it wraps the engine's
///   buffers, which it borrows for `'a` (mutably where auxstore writes), and
///   dropping it frees only the handle.
///
/// `'a` covers the backend and any borrowed buffers, so neither can go away
/// first. `Send` but not `Sync`: one user at a time (docs/c-abi.md); a
/// restore takes its targets by `&mut` for as long as it runs.
pub struct State<'a> {
    raw: NonNull<sys::auxstore_state_t>,
    _p: PhantomData<&'a Backend>,
}

// SAFETY: the handle may move between threads; it is used by one at a time
// (no Sync), and its backend is thread-safe.
unsafe impl Send for State<'_> {}

impl std::fmt::Debug for State<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("State")
            .field("kind", &self.kind())
            .field("borrowed", &self.is_borrowed())
            .field("counters", &self.counters().ok())
            .finish()
    }
}

/// A state's counters: QSA `ingested` / DSA `len` / opaque size in `count`,
/// QSA pooled blocks in `pooled` (0 for the others).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counters {
    /// QSA: tokens ingested; DSA: rows held (`len`); opaque: bytes held.
    pub count: u64,
    /// QSA: pooled blocks; 0 for DSA and opaque states.
    pub pooled: u64,
}

impl<'a> State<'a> {
    /// # Safety
    /// `raw` is a state handle made on `backend`, owned by the new value.
    pub(crate) unsafe fn from_raw(raw: *mut sys::auxstore_state_t, _backend: &Backend) -> State<'a> {
        State { raw: NonNull::new(raw).expect("auxstore state: OK and NULL"), _p: PhantomData }
    }

    /// The raw handle, for calls into `auxstore_sys` (valid while `self` is).
    pub fn as_raw(&self) -> *mut sys::auxstore_state_t {
        self.raw.as_ptr()
    }

    /// The state's kind: QSA, DSA or opaque.
    pub fn kind(&self) -> Kind {
        // SAFETY: a live handle (self).
        let k = unsafe { sys::auxstore_state_kind(self.as_raw()) };
        Kind::from_c(k as i64).unwrap_or(Kind::Opaque)
    }

    /// Whether the engine owns the buffers (a borrowed state).
    pub fn is_borrowed(&self) -> bool {
        // SAFETY: a live handle (self).
        unsafe { sys::auxstore_state_is_borrowed(self.as_raw()) == 1 }
    }

    /// The state's counters (see [`Counters`]); they move only when a
    /// restore or [`State::load`] commits, or with [`State::set_counters`].
    pub fn counters(&self) -> Result<Counters> {
        let mut c = Counters::default();
        // SAFETY: a live handle and valid out pointers.
        check(|e| unsafe { sys::auxstore_state_counters(self.as_raw(), &mut c.count, &mut c.pooled, e) })?;
        Ok(c)
    }

    /// Reports what the engine's own kernels wrote: QSA `ingested` / `pooled`,
    /// DSA `len`, opaque size (`pooled` 0 for those), checked as a restored
    /// header is.
    ///
    /// # Errors
    /// `OutOfRange` for counters beyond the state's geometry or capacity
    /// (nothing changes).
    pub fn set_counters(&mut self, count: u64, pooled: u64) -> Result<()> {
        // SAFETY: a live handle, borrowed mutably (one user).
        check(|e| unsafe { sys::auxstore_state_set_counters(self.as_raw(), count, pooled, e) })
    }

    /// The device addresses of its buffers: QSA raw_keys, block_keys; DSA
    /// k_normed, gate, valid; opaque buffer.
    pub fn buffers(&self) -> Result<Vec<u64>> {
        let mut p = [0u64; 3];
        let mut n = 0usize;
        // SAFETY: a live handle; `p` has room for the 3 addresses auxstore
        // writes at most (`n` is clamped below all the same).
        check(|e| unsafe { sys::auxstore_state_buffers(self.as_raw(), p.as_mut_ptr(), &mut n, e) })?;
        Ok(p[..n.min(3)].to_vec())
    }

    /// Fills a fresh state from a blob of its kind (what the engine's own
    /// ingest would leave), synchronously; checked as a restore is.
    ///
    /// # Errors
    /// `InvalidArgument` or `Corruption` for a blob of another kind, size or
    /// geometry; `OutOfRange` for one larger than the state holds; nothing
    /// changes on error.
    pub fn load(&mut self, blob: &[u8]) -> Result<()> {
        // SAFETY: a live handle borrowed mutably; `blob` is a valid slice,
        // only read during the call.
        check(|e| unsafe { sys::auxstore_state_load(self.as_raw(), blob.as_ptr() as *const c_void, blob.len(), e) })
    }

    /// The state's current blob (the bytes a snapshot of it holds), copied
    /// to host memory the returned [`Bytes`] owns.
    pub fn read(&self) -> Result<Bytes> {
        let (mut d, mut n) = (ptr::null_mut(), 0usize);
        // SAFETY: a live handle and valid out pointers.
        check(|e| unsafe { sys::auxstore_state_read(self.as_raw(), &mut d, &mut n, e) })?;
        // SAFETY: on OK, `n` bytes auxstore malloc'd at `d`, now ours.
        Ok(unsafe { Bytes::from_raw(d, n) })
    }

    /// A QSA state's pooled block keys (`pooled * qsa_hd` bf16), which a
    /// restore recomputes on the device.
    pub fn qsa_block_keys(&self) -> Result<Bytes> {
        let (mut d, mut n) = (ptr::null_mut(), 0usize);
        // SAFETY: a live handle and valid out pointers.
        check(|e| unsafe { sys::auxstore_qsa_state_read_block_keys(self.as_raw(), &mut d, &mut n, e) })?;
        // SAFETY: as read().
        Ok(unsafe { Bytes::from_raw(d, n) })
    }

    /// Frees the state (its device memory unless borrowed) and reports the
    /// first failure; dropping does the same and ignores it.
    pub fn release(self) -> Result<()> {
        let raw = self.raw.as_ptr();
        std::mem::forget(self);
        // SAFETY: ours; the handle is gone even when an error is returned.
        check(|e| unsafe { sys::auxstore_state_release(raw, e) })
    }
}

impl Drop for State<'_> {
    fn drop(&mut self) {
        // SAFETY: ours; no restore can still hold it (restores borrow it).
        let _ = check(|e| unsafe { sys::auxstore_state_release(self.raw.as_ptr(), e) });
    }
}
