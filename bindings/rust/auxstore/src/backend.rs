//! Backends (host or CUDA), device memory and streams.
use crate::error::{check, Error, Result};
use crate::sizes;
use crate::state::State;
use crate::sys;
use crate::types::BackendKind;
use std::ffi::CStr;
use std::marker::PhantomData;
use std::os::raw::c_void;
use std::ptr::{self, NonNull};
use std::sync::Arc;

/// A host or CUDA backend (`auxstore_backend_t`), bound to one device.
/// `Send + Sync` (the C handle is thread-safe), and shareable: an `Arc` over
/// the handle, so `clone()` is cheap. Device buffers, streams and states
/// borrow it; a [`crate::Pipeline`] holds a clone. The handle is destroyed
/// when the last clone goes, so only after all of them.
#[derive(Clone)]
pub struct Backend {
    inner: Arc<BackendHandle>,
}

// The handle itself, destroyed with the last Backend clone. A pipeline
// leaked with mem::forget keeps its clone, so the backend is never
// destroyed under the leaked pipeline's threads.
struct BackendHandle(NonNull<sys::auxstore_backend_t>);

// SAFETY: docs/c-abi.md, "Thread safety": auxstore_backend_t is thread-safe
// except for destroy, which runs only in BackendHandle's drop.
unsafe impl Send for BackendHandle {}
unsafe impl Sync for BackendHandle {}

impl Drop for BackendHandle {
    fn drop(&mut self) {
        // SAFETY: ours; every state, buffer and stream borrowed a Backend
        // clone and is gone (or leaked: a leaked state, buffer or stream does
        // no work of its own), and no pipeline holds a clone any more.
        unsafe { sys::auxstore_backend_destroy(self.0.as_ptr()) }
    }
}

impl std::fmt::Debug for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Backend({})", self.name())
    }
}

impl Backend {
    /// `Auto`: CUDA when built and a device is present, else host. `Cuda`
    /// without one: `Unavailable`. Bound to the calling thread's current
    /// CUDA device.
    pub fn new(kind: BackendKind) -> Result<Backend> {
        let mut raw = ptr::null_mut();
        // SAFETY: a valid out pointer; kind and device are checked by auxstore.
        check(|e| unsafe { sys::auxstore_backend_create(kind.to_c(), &mut raw, e) })?;
        Ok(Backend::from_raw(raw, "auxstore_backend_create"))
    }

    /// The same, bound to CUDA device `device` (`InvalidArgument` for an
    /// index that does not exist; the host backend ignores it).
    pub fn on_device(kind: BackendKind, device: i32) -> Result<Backend> {
        let mut raw = ptr::null_mut();
        // SAFETY: a valid out pointer; kind and device are checked by auxstore.
        check(|e| unsafe { sys::auxstore_backend_create_on_device(kind.to_c(), device, &mut raw, e) })?;
        Ok(Backend::from_raw(raw, "auxstore_backend_create_on_device"))
    }

    fn from_raw(raw: *mut sys::auxstore_backend_t, what: &str) -> Backend {
        let raw = NonNull::new(raw).unwrap_or_else(|| panic!("{what} returned OK and NULL"));
        Backend { inner: Arc::new(BackendHandle(raw)) }
    }

    /// The host backend: "device" memory is host memory auxstore allocates
    /// and checks every copy against; streams are in-order executors.
    pub fn host() -> Result<Backend> {
        Backend::new(BackendKind::Host)
    }

    /// `Host` or `Cuda` (never `Auto`: what `Auto` chose).
    pub fn kind(&self) -> BackendKind {
        // SAFETY: a live handle (self).
        match unsafe { sys::auxstore_backend_kind(self.as_raw()) } {
            sys::AUXSTORE_BACKEND_CUDA => BackendKind::Cuda,
            _ => BackendKind::Host,
        }
    }

    /// The CUDA device index it is bound to (0 for host).
    pub fn device(&self) -> i32 {
        // SAFETY: a live handle (self).
        unsafe { sys::auxstore_backend_device(self.as_raw()) }
    }

    /// `"host"` or `"cuda:N"` (N the device index).
    pub fn name(&self) -> &str {
        // SAFETY: a live handle; the C string is NUL-terminated, never NULL,
        // and stays valid and unchanged while the backend lives, which the
        // returned borrow of `self` guarantees.
        let p = unsafe { sys::auxstore_backend_name(self.as_raw()) };
        if p.is_null() {
            return "";
        }
        unsafe { CStr::from_ptr(p) }.to_str().unwrap_or("")
    }

    /// The raw handle, for calls into `auxstore_sys` (valid while `self` is).
    pub fn as_raw(&self) -> *mut sys::auxstore_backend_t {
        self.inner.0.as_ptr()
    }

    /// `bytes` of device memory (on the host backend: host memory the
    /// backend checks every copy against), freed when the buffer drops. The
    /// buffer borrows the backend.
    ///
    /// # Errors
    /// `InvalidArgument` for 0 bytes, and for more than `isize::MAX` bytes
    /// (no allocation can be that large; refused before auxstore is
    /// called); `OutOfRange` (host) or the CUDA error when the memory is not
    /// there.
    pub fn alloc(&self, bytes: usize) -> Result<DeviceBuffer<'_>> {
        sizes::allocation("auxstore::Backend::alloc: bytes", bytes as u64)?;
        let mut p = 0u64;
        // SAFETY: a live handle and a valid out pointer. On OK auxstore
        // returns an allocation of `bytes` bytes (<= isize::MAX, checked
        // above): DeviceBuffer's bounds checks rely on that.
        check(|e| unsafe { sys::auxstore_device_alloc(self.as_raw(), bytes, &mut p, e) })?;
        Ok(DeviceBuffer { backend: self, ptr: p, len: bytes })
    }

    /// A new stream (non-blocking on CUDA; an in-order executor on host),
    /// destroyed (after its work) when dropped; it borrows the backend.
    pub fn create_stream(&self) -> Result<Stream<'_>> {
        let mut s = 0u64;
        // SAFETY: a live handle and a valid out pointer.
        check(|e| unsafe { sys::auxstore_stream_create(self.as_raw(), &mut s, e) })?;
        Ok(Stream { backend: self, id: s })
    }

    /// Waits until the work enqueued on `stream` so far is done.
    ///
    /// # Errors
    /// `InvalidArgument` when `stream` belongs to another backend; the
    /// backend's error for a stream it does not know.
    pub fn synchronize<'s>(&self, stream: impl Into<StreamRef<'s>>) -> Result<()> {
        let s = self.own_stream(stream.into(), "auxstore::Backend::synchronize")?;
        // SAFETY: a live handle; an unknown stream id is an error, not UB.
        check(|e| unsafe { sys::auxstore_stream_synchronize(self.as_raw(), s, e) })
    }

    pub(crate) fn own_stream(&self, s: StreamRef<'_>, what: &str) -> Result<u64> {
        if !s.backend.is_null() && !std::ptr::eq(s.backend, self.as_raw()) {
            return Err(Error::invalid(format!("{what}: the stream belongs to another backend")));
        }
        Ok(s.id)
    }

    /// Copies host bytes to `ptr + offset`, asynchronously on `stream`.
    ///
    /// # Safety
    /// `ptr` must be device memory of this backend (an engine's own
    /// `cudaMalloc`'d buffer, or [`DeviceBuffer::into_raw`]) with room for
    /// the copy, nothing else may use those bytes until the stream passed the
    /// copy, and `src` must stay alive and unchanged until then.
    pub unsafe fn copy_h2d_raw(&self, ptr: u64, offset: u64, src: &[u8], stream: StreamRef<'_>) -> Result<()> {
        let s = self.own_stream(stream, "auxstore::Backend::copy_h2d_raw")?;
        // SAFETY: the caller's contract above; `src` is a valid slice.
        check(|e| {
            sys::auxstore_device_copy_h2d(self.as_raw(), ptr, offset, src.as_ptr() as *const c_void, src.len(), s, e)
        })
    }

    /// Copies `ptr + offset` to `dst` after the stream's earlier work;
    /// returns once the bytes are in `dst`.
    ///
    /// # Safety
    /// `ptr` must be device memory of this backend holding
    /// `offset + dst.len()` bytes.
    pub unsafe fn copy_d2h_raw(&self, dst: &mut [u8], ptr: u64, offset: u64, stream: StreamRef<'_>) -> Result<()> {
        let s = self.own_stream(stream, "auxstore::Backend::copy_d2h_raw")?;
        // SAFETY: the caller's contract above; `dst` is a valid, exclusively
        // borrowed slice, written before this returns.
        check(|e| {
            sys::auxstore_device_copy_d2h(self.as_raw(), dst.as_mut_ptr() as *mut c_void, ptr, offset, dst.len(), s, e)
        })
    }

    /// Frees device memory auxstore allocated ([`DeviceBuffer::into_raw`]).
    ///
    /// # Safety
    /// Nothing (no state, no stream work) may still use it.
    pub unsafe fn free_raw(&self, ptr: u64) -> Result<()> {
        // SAFETY: the caller's contract; a pointer the backend did not
        // allocate is an error, not UB.
        check(|e| sys::auxstore_device_free(self.as_raw(), ptr, e))
    }

    /// A fresh QSA state for a layer of `geometry` (its `qsa_*` fields); the
    /// layer weights `k_pool_k` and `k_norm_w` (`qsa_hd` bf16 values each)
    /// are copied to the device and owned by the state.
    ///
    /// # Errors
    /// `InvalidArgument` when a weight slice does not hold `qsa_hd` values,
    /// when a buffer of the geometry would be larger than `isize::MAX` bytes
    /// (or its size overflows), and auxstore's geometry checks (`qsa_hd`,
    /// `qsa_max_tokens`, `qsa_ratio` > 0, `qsa_rot` even and <= `qsa_hd`);
    /// the backend's error when the memory is not there.
    pub fn qsa_state(&self, geometry: &crate::Geometry, k_pool_k: &[u16], k_norm_w: &[u16]) -> Result<State<'_>> {
        sizes::qsa_geometry("auxstore::Backend::qsa_state", geometry)?;
        let hd = geometry.qsa_hd as usize;
        if k_pool_k.len() != hd || k_norm_w.len() != hd {
            return Err(Error::invalid(format!(
                "auxstore::Backend::qsa_state: k_pool_k has {} values and k_norm_w {}, qsa_hd is {hd}",
                k_pool_k.len(),
                k_norm_w.len()
            )));
        }
        let g = geometry.to_c();
        let mut raw = ptr::null_mut();
        // SAFETY: a live handle; both weight slices hold qsa_hd u16 values
        // (checked above), which is what auxstore reads from them.
        check(|e| unsafe {
            sys::auxstore_qsa_state_create(
                self.as_raw(),
                &g,
                k_pool_k.as_ptr() as *const c_void,
                k_norm_w.as_ptr() as *const c_void,
                &mut raw,
                e,
            )
        })?;
        // SAFETY: a state handle auxstore just made on this backend, ours.
        Ok(unsafe { State::from_raw(raw, self) })
    }

    /// A fresh DSA state of `geometry` (`dsa_index_head_dim`,
    /// `dsa_capacity` rows), owning its device memory.
    ///
    /// # Errors
    /// `InvalidArgument` when `dsa_index_head_dim` is 0, or when
    /// `dsa_capacity * dsa_index_head_dim * 2` bytes overflow or exceed
    /// `isize::MAX`; the backend's error when the memory is not there.
    pub fn dsa_state(&self, geometry: &crate::Geometry) -> Result<State<'_>> {
        sizes::dsa_geometry("auxstore::Backend::dsa_state", geometry)?;
        let g = geometry.to_c();
        let mut raw = ptr::null_mut();
        // SAFETY: a live handle, a valid geometry and out pointer.
        check(|e| unsafe { sys::auxstore_dsa_state_create(self.as_raw(), &g, &mut raw, e) })?;
        // SAFETY: a state handle auxstore just made on this backend, ours.
        Ok(unsafe { State::from_raw(raw, self) })
    }

    /// A fresh opaque state holding up to `capacity` bytes, owning its
    /// device memory.
    ///
    /// # Errors
    /// `InvalidArgument` for 0 or more than `isize::MAX` bytes (refused
    /// before auxstore is called); the backend's error when the memory is
    /// not there.
    pub fn opaque_state(&self, capacity: u64) -> Result<State<'_>> {
        sizes::allocation("auxstore::Backend::opaque_state: capacity", capacity)?;
        let mut raw = ptr::null_mut();
        // SAFETY: a live handle and a valid out pointer.
        check(|e| unsafe { sys::auxstore_opaque_state_create(self.as_raw(), capacity, &mut raw, e) })?;
        // SAFETY: a state handle auxstore just made on this backend, ours.
        Ok(unsafe { State::from_raw(raw, self) })
    }

    fn same_backend(&self, b: &DeviceBuffer<'_>, what: &str) -> Result<u64> {
        if b.backend.as_raw() != self.as_raw() {
            return Err(Error::invalid(format!("{what} was allocated by another backend")));
        }
        Ok(b.ptr)
    }

    /// Wraps engine-owned QSA buffers (allocated from this backend) in a
    /// borrowed state carrying the engine's counters. The state borrows the
    /// buffers: they cannot be freed, written or read by the engine while
    /// it lives, and dropping it never frees them.
    ///
    /// # Errors
    /// `InvalidArgument` when a buffer was allocated by another backend,
    /// when a weight buffer holds fewer than `qsa_hd * 2` bytes, when the
    /// geometry's buffer sizes overflow, and auxstore's checks: the raw keys
    /// and block keys too small for the geometry; `OutOfRange` for counters
    /// beyond it (`ingested > qsa_max_tokens`, `pooled > ingested /
    /// qsa_ratio`).
    pub fn borrow_qsa_state<'a>(
        &'a self,
        geometry: &crate::Geometry,
        buffers: QsaBuffers<'a, '_>,
        ingested: u64,
        pooled: u64,
    ) -> Result<State<'a>> {
        let w = "auxstore::Backend::borrow_qsa_state";
        sizes::qsa_geometry(w, geometry)?;
        let raw = sys::auxstore_qsa_buffers_t {
            raw_keys: self.same_backend(buffers.raw_keys, &format!("{w}: raw_keys"))?,
            raw_keys_bytes: buffers.raw_keys.len as u64,
            block_keys: self.same_backend(buffers.block_keys, &format!("{w}: block_keys"))?,
            block_keys_bytes: buffers.block_keys.len as u64,
            k_pool_k: self.same_backend(buffers.k_pool_k, &format!("{w}: k_pool_k"))?,
            k_norm_w: self.same_backend(buffers.k_norm_w, &format!("{w}: k_norm_w"))?,
        };
        let hd = u64::from(geometry.qsa_hd) * 2;
        if (buffers.k_pool_k.len as u64) < hd || (buffers.k_norm_w.len as u64) < hd {
            return Err(Error::invalid(format!("{w}: the weights need qsa_hd * 2 = {hd} bytes each")));
        }
        // SAFETY: the buffers are this backend's live allocations, declared
        // with their real lengths (auxstore checks them against the
        // geometry), and borrowed (the raw keys and block keys mutably) for
        // 'a, the state's lifetime: nothing else can use or free them while
        // the state (or a restore or snapshot of it) runs.
        unsafe { self.borrow_qsa_state_raw(geometry, &raw, ingested, pooled) }
    }

    /// Wraps engine-owned DSA buffers (allocated from this backend) in a
    /// borrowed state holding `len` rows; borrowing as
    /// [`Backend::borrow_qsa_state`].
    ///
    /// # Errors
    /// `InvalidArgument` when a buffer was allocated by another backend or
    /// holds fewer bytes than `capacity_rows` rows need (k_normed and gate
    /// `capacity_rows * dsa_index_head_dim * 2`, valid `capacity_rows`), or
    /// when those sizes overflow; `OutOfRange` for `len > capacity_rows`.
    pub fn borrow_dsa_state<'a>(
        &'a self,
        geometry: &crate::Geometry,
        buffers: DsaBuffers<'a, '_>,
        len: u64,
    ) -> Result<State<'a>> {
        let w = "auxstore::Backend::borrow_dsa_state";
        sizes::product(
            &format!("{w}: k_normed and gate (capacity_rows * dsa_index_head_dim * 2)"),
            &[buffers.capacity_rows, u64::from(geometry.dsa_index_head_dim), 2],
        )?;
        let raw = sys::auxstore_dsa_buffers_t {
            capacity_rows: buffers.capacity_rows,
            k_normed: self.same_backend(buffers.k_normed, &format!("{w}: k_normed"))?,
            k_normed_bytes: buffers.k_normed.len as u64,
            gate: self.same_backend(buffers.gate, &format!("{w}: gate"))?,
            gate_bytes: buffers.gate.len as u64,
            valid: self.same_backend(buffers.valid, &format!("{w}: valid"))?,
            valid_bytes: buffers.valid.len as u64,
        };
        // SAFETY: as borrow_qsa_state: live allocations of this backend with
        // their real lengths, all three borrowed mutably for the state's 'a.
        unsafe { self.borrow_dsa_state_raw(geometry, &raw, len) }
    }

    /// Wraps an engine-owned opaque buffer holding `size` bytes of state
    /// (capacity: the buffer's length), borrowing it mutably while the state
    /// lives.
    ///
    /// # Errors
    /// `InvalidArgument` when the buffer was allocated by another backend;
    /// `OutOfRange` when `size` exceeds the buffer's length.
    pub fn borrow_opaque_state<'a>(&'a self, buffer: &'a mut DeviceBuffer<'_>, size: u64) -> Result<State<'a>> {
        let p = self.same_backend(buffer, "auxstore::Backend::borrow_opaque_state: buffer")?;
        // SAFETY: as borrow_qsa_state: a live allocation of this backend of
        // `buffer.len` bytes, borrowed mutably for the state's 'a.
        unsafe { self.borrow_opaque_state_raw(p, buffer.len as u64, size) }
    }

    /// Borrowed QSA state over raw device addresses (an engine's own
    /// `cudaMalloc`'d buffers). auxstore checks the sizes against the
    /// geometry.
    ///
    /// # Safety
    /// The addresses must be device memory of this backend with at least the
    /// declared bytes, and stay allocated — and unused by anything else while
    /// a restore or snapshot runs on the state — for as long as the state
    /// lives.
    pub unsafe fn borrow_qsa_state_raw(
        &self,
        geometry: &crate::Geometry,
        buffers: &sys::auxstore_qsa_buffers_t,
        ingested: u64,
        pooled: u64,
    ) -> Result<State<'_>> {
        let g = geometry.to_c();
        let mut raw = ptr::null_mut();
        // SAFETY: the caller's contract; the handle and pointers are valid.
        check(|e| sys::auxstore_qsa_state_borrow(self.as_raw(), &g, buffers, ingested, pooled, &mut raw, e))?;
        Ok(State::from_raw(raw, self))
    }

    /// Borrowed DSA state over raw device addresses.
    ///
    /// # Safety
    /// As [`Backend::borrow_qsa_state_raw`].
    pub unsafe fn borrow_dsa_state_raw(
        &self,
        geometry: &crate::Geometry,
        buffers: &sys::auxstore_dsa_buffers_t,
        len: u64,
    ) -> Result<State<'_>> {
        let g = geometry.to_c();
        let mut raw = ptr::null_mut();
        // SAFETY: the caller's contract; the handle and pointers are valid.
        check(|e| sys::auxstore_dsa_state_borrow(self.as_raw(), &g, buffers, len, &mut raw, e))?;
        Ok(State::from_raw(raw, self))
    }

    /// Borrowed opaque state over a raw device address.
    ///
    /// # Safety
    /// As [`Backend::borrow_qsa_state_raw`].
    pub unsafe fn borrow_opaque_state_raw(&self, buffer: u64, capacity: u64, size: u64) -> Result<State<'_>> {
        let mut raw = ptr::null_mut();
        // SAFETY: the caller's contract; the handle and out pointer are valid.
        check(|e| sys::auxstore_opaque_state_borrow(self.as_raw(), buffer, capacity, size, &mut raw, e))?;
        Ok(State::from_raw(raw, self))
    }
}

/// An engine's QSA buffers for one layer of one sequence (see
/// [`Backend::borrow_qsa_state`]): raw keys `>= qsa_max_tokens * qsa_hd * 2`
/// bytes, block keys `>= qsa_max_tokens / qsa_ratio * qsa_hd * 2`, and the
/// layer's weights (`qsa_hd` bf16 each; shared by reference, so several
/// layers' states may use the same weights).
#[derive(Debug)]
pub struct QsaBuffers<'a, 'b> {
    /// The raw keys, `qsa_max_tokens` rows of `qsa_hd` bf16 (written by
    /// restores: borrowed mutably).
    pub raw_keys: &'a mut DeviceBuffer<'b>,
    /// The pooled block keys, `qsa_max_tokens / qsa_ratio` rows of `qsa_hd`
    /// bf16 (re-pooled by restores: borrowed mutably).
    pub block_keys: &'a mut DeviceBuffer<'b>,
    /// The layer's `k_pool_k` weights, `qsa_hd` bf16 (only read).
    pub k_pool_k: &'a DeviceBuffer<'a>,
    /// The layer's `k_norm_w` weights, `qsa_hd` bf16 (only read).
    pub k_norm_w: &'a DeviceBuffer<'a>,
}

/// An engine's DSA buffers: `capacity_rows` rows each (k_normed and gate
/// `>= capacity_rows * dsa_index_head_dim * 2` bytes, valid `>=
/// capacity_rows`).
#[derive(Debug)]
pub struct DsaBuffers<'a, 'b> {
    /// Rows each buffer holds (the engine's reservation per sequence).
    pub capacity_rows: u64,
    /// The normalised index keys, `dsa_index_head_dim` bf16 per row.
    pub k_normed: &'a mut DeviceBuffer<'b>,
    /// The gate values, `dsa_index_head_dim` bf16 per row.
    pub gate: &'a mut DeviceBuffer<'b>,
    /// One validity byte per row.
    pub valid: &'a mut DeviceBuffer<'b>,
}

/// Device memory from [`Backend::alloc`], freed when dropped. Writing needs
/// `&mut`, so a buffer a state borrows (mutably) cannot be written or read
/// by anyone else while the state — and any restore into it — lives.
pub struct DeviceBuffer<'b> {
    backend: &'b Backend,
    ptr: u64,
    len: usize,
}

impl std::fmt::Debug for DeviceBuffer<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DeviceBuffer({:#x}, {} bytes)", self.ptr, self.len)
    }
}

impl<'b> DeviceBuffer<'b> {
    /// The device address (for the engine's kernels, or the `unsafe` raw
    /// calls); valid while the buffer lives.
    pub fn ptr(&self) -> u64 {
        self.ptr
    }
    /// Its size in bytes (what [`Backend::alloc`] was asked for).
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether it holds no bytes (never, for a buffer from
    /// [`Backend::alloc`], which refuses 0).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// The backend that allocated it.
    pub fn backend(&self) -> &'b Backend {
        self.backend
    }

    fn range(&self, offset: usize, n: usize, what: &str) -> Result<()> {
        if offset.checked_add(n).map_or(true, |end| end > self.len) {
            return Err(Error::OutOfRange(format!(
                "auxstore::DeviceBuffer::{what}: {n} bytes at offset {offset} exceed the buffer's {} bytes",
                self.len
            )));
        }
        Ok(())
    }

    /// Copies `src` to `offset` on `stream` and waits for the stream (so
    /// `src` is free again when this returns).
    ///
    /// # Errors
    /// `OutOfRange` when `offset + src.len()` exceeds the buffer (nothing
    /// copied); `InvalidArgument` for a stream of another backend; the
    /// backend's copy or synchronize error.
    pub fn write<'s>(&mut self, offset: usize, src: &[u8], stream: impl Into<StreamRef<'s>>) -> Result<()> {
        let stream = stream.into();
        // SAFETY: the range is checked in write_async; the stream is
        // synchronised before `src` is released. (Should that synchronize
        // fail — a CUDA context already broken — the copy may still be
        // pending; the backend reports every later call as failed too.)
        unsafe { self.write_async(offset, src, stream)? };
        self.backend.synchronize(stream)
    }

    /// Copies `src` to `offset`, asynchronously on `stream`.
    ///
    /// # Safety
    /// `src` must stay alive and unchanged until the stream passed the copy.
    pub unsafe fn write_async(&mut self, offset: usize, src: &[u8], stream: StreamRef<'_>) -> Result<()> {
        self.range(offset, src.len(), "write")?;
        // SAFETY: in bounds of this live allocation (checked above; its
        // length is the allocation's, <= isize::MAX); `&mut self` keeps
        // every other user out; `src` is the caller's contract.
        self.backend.copy_h2d_raw(self.ptr, offset as u64, src, stream)
    }

    /// Copies `dst.len()` bytes at `offset` into `dst` after the stream's
    /// earlier work; returns once they are there.
    ///
    /// # Errors
    /// `OutOfRange` when `offset + dst.len()` exceeds the buffer (nothing
    /// copied); `InvalidArgument` for a stream of another backend.
    pub fn read<'s>(&self, offset: usize, dst: &mut [u8], stream: impl Into<StreamRef<'s>>) -> Result<()> {
        self.range(offset, dst.len(), "read")?;
        // SAFETY: in bounds of this live allocation of this backend (checked
        // above); the copy is complete when the call returns.
        unsafe { self.backend.copy_d2h_raw(dst, self.ptr, offset as u64, stream.into()) }
    }

    /// `n` bytes at `offset`, read back into a new vector.
    ///
    /// # Errors
    /// As [`DeviceBuffer::read`]; the range is checked before the vector is
    /// allocated, so a huge `n` is `OutOfRange`, not an allocation failure.
    pub fn read_vec<'s>(&self, offset: usize, n: usize, stream: impl Into<StreamRef<'s>>) -> Result<Vec<u8>> {
        self.range(offset, n, "read_vec")?;
        let mut v = vec![0u8; n];
        self.read(offset, &mut v, stream)?;
        Ok(v)
    }

    /// Gives the memory up without freeing it: its device address, to free
    /// with [`Backend::free_raw`] (or leave to the backend, which frees what
    /// is left when destroyed).
    pub fn into_raw(self) -> u64 {
        let p = self.ptr;
        std::mem::forget(self);
        p
    }
}

impl Drop for DeviceBuffer<'_> {
    fn drop(&mut self) {
        // SAFETY: ours; whatever borrowed it (a state, a restore) is gone,
        // and safe writes waited for their stream.
        let _ = unsafe { self.backend.free_raw(self.ptr) };
    }
}

/// A stream from [`Backend::create_stream`]; dropping it waits for its work,
/// then destroys it. `Send + Sync` (streams are used through the
/// thread-safe backend).
pub struct Stream<'b> {
    backend: &'b Backend,
    id: u64,
}

impl std::fmt::Debug for Stream<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Stream({:#x})", self.id)
    }
}

impl<'b> Stream<'b> {
    /// The stream's id (on CUDA the `cudaStream_t` as an integer, for the
    /// engine's kernels).
    pub fn id(&self) -> u64 {
        self.id
    }
    /// The backend it belongs to.
    pub fn backend(&self) -> &'b Backend {
        self.backend
    }
    /// Waits for the stream's work.
    pub fn synchronize(&self) -> Result<()> {
        self.backend.synchronize(self)
    }
    /// A copyable reference to it.
    pub fn as_stream_ref(&self) -> StreamRef<'_> {
        self.into()
    }
}

impl Drop for Stream<'_> {
    fn drop(&mut self) {
        // SAFETY: a stream of this live backend, ours; destroy waits for
        // its work first.
        let _ = check(|e| unsafe { sys::auxstore_stream_destroy(self.backend.as_raw(), self.id, e) });
    }
}

/// A stream by reference: one of ours ([`Stream`], [`crate::Pipeline::stream`])
/// or, through the unsafe [`StreamRef::from_raw`], the engine's own
/// `cudaStream_t`. It cannot outlive the stream it names.
#[derive(Clone, Copy, Debug)]
pub struct StreamRef<'a> {
    pub(crate) id: u64,
    // The backend it belongs to, when known (checked against the one used).
    pub(crate) backend: *const sys::auxstore_backend_t,
    _p: PhantomData<&'a ()>,
}

// SAFETY: an id and an address only compared, never dereferenced.
unsafe impl Send for StreamRef<'_> {}
unsafe impl Sync for StreamRef<'_> {}

impl<'a> StreamRef<'a> {
    /// An engine's own stream (on CUDA a `cudaStream_t`, as an integer).
    ///
    /// # Safety
    /// It must be a valid stream of the backend it is used with for all of
    /// `'a`, and not 0 (the legacy default stream) where auxstore refuses it.
    pub unsafe fn from_raw(id: u64) -> StreamRef<'a> {
        StreamRef { id, backend: ptr::null(), _p: PhantomData }
    }
    pub(crate) fn of(id: u64, backend: *const sys::auxstore_backend_t) -> StreamRef<'a> {
        StreamRef { id, backend, _p: PhantomData }
    }
    /// The stream's id, as the C ABI takes it.
    pub fn id(&self) -> u64 {
        self.id
    }
}

impl<'a> From<&'a Stream<'_>> for StreamRef<'a> {
    fn from(s: &'a Stream<'_>) -> StreamRef<'a> {
        StreamRef::of(s.id, s.backend.as_raw())
    }
}
