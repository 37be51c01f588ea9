//! Engine host memory as a read target (issue 24, docs/connectors.md): a
//! `&mut [T]` (any [`Pod`] element type) registered once with a store
//! ([`Store::register_host_buffer`]), and many layers of many snapshots read
//! into it with one handle ([`Store::read_into_host`]), each layer one
//! verified copy from the store's block into the slice, run on the store's
//! pool.
//!
//! Lifetimes: a [`HostBuffer`] borrows the slice for as long as it is
//! registered; a [`HostRead`] borrows the `HostBuffer` mutably until it is
//! dropped, and its drop waits for the reads in flight, so nothing touches
//! the slice while auxstore writes into it. A `HostRead` leaked with
//! `mem::forget` keeps the buffer counted as read: [`HostBuffer::as_slice`]
//! then answers `Busy`, and dropping the buffer aborts the process rather
//! than hand back memory a read may still write.
use crate::error::{check, Error, Result};
use crate::pod::Pod;
use crate::store::Store;
use crate::sys;
use crate::types::{Kind, Namespace, Prefix, PutOptions};
use std::marker::PhantomData;
use std::os::raw::c_void;
use std::ptr;

/// A `&mut [T]` registered with a store as a read target. Unregistered when
/// dropped.
#[derive(Debug)]
pub struct HostBuffer<'a, T: Pod> {
    raw: *mut sys::auxstore_host_buffer_t,
    data: *mut T,
    len: usize,
    reads: usize, // HostReads over it not yet dropped (or leaked)
    _slice: PhantomData<&'a mut [T]>,
}

/// One layer of one snapshot into bytes `[offset, offset + capacity)` of a
/// [`HostBuffer`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostTarget {
    /// The snapshot's namespace.
    pub ns: Namespace,
    /// The snapshot's prefix.
    pub prefix: Prefix,
    /// The layer.
    pub layer: u32,
    /// Byte offset in the buffer.
    pub offset: usize,
    /// Bytes the layer may take there.
    pub capacity: usize,
}

/// One layer of a snapshot put from a [`HostBuffer`]: bytes `[offset,
/// offset + size)` of the buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostLayer {
    /// The layer index.
    pub layer: u32,
    /// Its blob kind.
    pub kind: Kind,
    /// Byte offset in the buffer.
    pub offset: usize,
    /// Its bytes.
    pub size: usize,
}

/// One snapshot put from a [`HostBuffer`] ([`Store::put_from_host`]).
#[derive(Debug, Clone, Copy)]
pub struct HostSnapshot<'l> {
    /// The namespace.
    pub ns: Namespace,
    /// The prefix.
    pub prefix: Prefix,
    /// Tokens the snapshot covers.
    pub token_count: u64,
    /// Its layers, in the buffer.
    pub layers: &'l [HostLayer],
}

/// Layers being read into a [`HostBuffer`] ([`Store::read_into_host`]).
/// Dropping it cancels what has not started and waits for the reads in
/// flight.
#[derive(Debug)]
pub struct HostRead<'b> {
    raw: *mut sys::auxstore_host_read_t,
    n: usize,
    reads: &'b mut usize,
}

impl Store {
    /// Registers `data` as a read target: a [`HostBuffer`] borrowing it.
    ///
    /// # Errors
    /// `InvalidArgument` for an empty slice.
    pub fn register_host_buffer<'a, T: Pod>(&self, data: &'a mut [T]) -> Result<HostBuffer<'a, T>> {
        let bytes = std::mem::size_of_val(data);
        let mut raw = ptr::null_mut();
        // SAFETY: a live store handle; `bytes` writable bytes at `data`, which
        // the HostBuffer borrows for as long as it is registered.
        check(|e| unsafe {
            sys::auxstore_register_host_buffer(self.as_raw(), data.as_mut_ptr() as *mut c_void, bytes, &mut raw, e)
        })?;
        Ok(HostBuffer { raw, data: data.as_mut_ptr(), len: data.len(), reads: 0, _slice: PhantomData })
    }

    /// Starts reading `targets` into `buffer` and returns at once. Each
    /// target is checked first against the buffer (`InvalidArgument` naming
    /// it, nothing read, when it does not fit or overlaps another); each one's
    /// own error (a missing snapshot, a capacity below the layer's size,
    /// `Corruption`) is its result and never stops the others.
    pub fn read_into_host<'b, T: Pod>(
        &self,
        buffer: &'b mut HostBuffer<'_, T>,
        targets: &[HostTarget],
    ) -> Result<HostRead<'b>> {
        let c: Vec<sys::auxstore_host_read_target_t> = targets
            .iter()
            .map(|t| sys::auxstore_host_read_target_t {
                ns: t.ns.0,
                prefix: t.prefix.0,
                layer: t.layer,
                buffer: buffer.raw,
                offset: t.offset,
                capacity: t.capacity,
            })
            .collect();
        let mut raw = ptr::null_mut();
        // SAFETY: a live store handle; `c.len()` targets (NULL for 0) naming a
        // live registered buffer, which the HostRead borrows mutably.
        check(|e| unsafe {
            sys::auxstore_host_read_start(
                self.as_raw(),
                if c.is_empty() { ptr::null() } else { c.as_ptr() },
                c.len(),
                &mut raw,
                e,
            )
        })?;
        buffer.reads += 1;
        Ok(HostRead { raw, n: targets.len(), reads: &mut buffer.reads })
    }
}

impl Store {
    /// Starts putting `snapshots`, whose layers lie in `buffer`, and returns
    /// at once (write-behind; LMCache's `batched_submit_put_task`, Mooncake's
    /// `batch_put_from`): target `i` of the [`HostRead`] is snapshot `i`
    /// (`wait_target(i)` gives its bytes). Each put is
    /// [`Store::put_snapshot`]'s, straight from the buffer; the `HostRead`
    /// borrows the buffer mutably, so the engine cannot change those bytes
    /// until it is dropped.
    ///
    /// # Errors
    /// `InvalidArgument` naming `snapshots[i].layers[k]` for a layer outside
    /// the buffer; nothing is written.
    pub fn put_from_host<'b, T: Pod>(
        &self,
        buffer: &'b mut HostBuffer<'_, T>,
        snapshots: &[HostSnapshot<'_>],
    ) -> Result<HostRead<'b>> {
        self.put_from_host_with(buffer, snapshots, &[])
    }

    /// [`Store::put_from_host`] with put options per snapshot: `options` is
    /// empty (none) or holds one [`PutOptions`] per snapshot, e.g. a block
    /// chain, so the snapshot's QSA and DSA rows go into pages shared with
    /// the chain's other snapshots ([`Store::put_snapshot_with`]).
    ///
    /// # Errors
    /// As `put_from_host`, and `InvalidArgument` when `options` is neither
    /// empty nor one per snapshot, or naming `options[i]` (a chain without a
    /// block size ...); nothing is written.
    pub fn put_from_host_with<'b, T: Pod>(
        &self,
        buffer: &'b mut HostBuffer<'_, T>,
        snapshots: &[HostSnapshot<'_>],
        options: &[PutOptions<'_>],
    ) -> Result<HostRead<'b>> {
        if !options.is_empty() && options.len() != snapshots.len() {
            return Err(Error::invalid(format!(
                "auxstore::Store::put_from_host_with: {} options for {} snapshots",
                options.len(),
                snapshots.len()
            )));
        }
        let c_options: Vec<sys::auxstore_put_options_t> = options.iter().map(PutOptions::to_c).collect();
        let option_ptrs: Vec<*const sys::auxstore_put_options_t> =
            c_options.iter().map(|o| o as *const sys::auxstore_put_options_t).collect();
        let layers: Vec<Vec<sys::auxstore_host_layer_t>> = snapshots
            .iter()
            .map(|s| {
                s.layers
                    .iter()
                    .map(|l| sys::auxstore_host_layer_t {
                        layer: l.layer,
                        kind: l.kind.to_c(),
                        buffer: buffer.raw,
                        offset: l.offset,
                        size: l.size,
                    })
                    .collect()
            })
            .collect();
        let c: Vec<sys::auxstore_host_put_t> = snapshots
            .iter()
            .zip(&layers)
            .map(|(s, l)| sys::auxstore_host_put_t {
                ns: s.ns.0,
                prefix: s.prefix.0,
                token_count: s.token_count,
                n_layers: l.len(),
                layers: if l.is_empty() { ptr::null() } else { l.as_ptr() },
            })
            .collect();
        let mut raw = ptr::null_mut();
        // SAFETY: a live store handle; `c.len()` snapshots (NULL for 0), each
        // with `n_layers` layers in the live registered buffer, which the
        // HostRead borrows mutably; `layers` and the options (NULL, or one
        // per snapshot, their chains borrowed) outlive the call (the C side
        // copies the descriptions and the chains).
        check(|e| unsafe {
            sys::auxstore_host_put_start_ex(
                self.as_raw(),
                if c.is_empty() { ptr::null() } else { c.as_ptr() },
                c.len(),
                if option_ptrs.is_empty() { ptr::null() } else { option_ptrs.as_ptr() },
                &mut raw,
                e,
            )
        })?;
        buffer.reads += 1;
        Ok(HostRead { raw, n: snapshots.len(), reads: &mut buffer.reads })
    }
}

impl<T: Pod> HostBuffer<'_, T> {
    /// Its size in bytes.
    pub fn size_bytes(&self) -> usize {
        self.len * std::mem::size_of::<T>()
    }

    /// The slice, to read what the reads wrote.
    ///
    /// # Errors
    /// `Busy` when a [`HostRead`] over it was leaked (`mem::forget`).
    pub fn as_slice(&self) -> Result<&[T]> {
        if self.reads > 0 {
            return Err(Error::Busy("a HostRead over this buffer was leaked".into()));
        }
        // SAFETY: the memory is borrowed for 'a, and no read writes into it.
        Ok(unsafe { std::slice::from_raw_parts(self.data, self.len) })
    }
}

impl<T: Pod> Drop for HostBuffer<'_, T> {
    fn drop(&mut self) {
        // SAFETY: the handle this buffer registered, unregistered once.
        let code = unsafe { sys::auxstore_unregister_host_buffer(self.raw, ptr::null_mut()) };
        if code == sys::AUXSTORE_BUSY {
            eprintln!("auxstore: a HostBuffer dropped under a leaked HostRead: aborting");
            std::process::abort();
        }
    }
}

impl HostRead<'_> {
    /// How many targets it reads.
    pub fn len(&self) -> usize {
        self.n
    }
    /// True when it reads no target.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }
    /// True when every target is done.
    pub fn poll(&self) -> bool {
        // SAFETY: a live read handle.
        unsafe { sys::auxstore_host_read_poll(self.raw) == 1 }
    }
    /// True when target `i` is done.
    pub fn target_done(&self, i: usize) -> bool {
        // SAFETY: a live read handle (an `i` out of range answers -1).
        unsafe { sys::auxstore_host_read_target_done(self.raw, i) == 1 }
    }
    /// Waits for every target: the first failed target's error, if any.
    pub fn wait(&self) -> Result<()> {
        // SAFETY: a live read handle.
        check(|e| unsafe { sys::auxstore_host_read_wait(self.raw, e) })
    }
    /// Waits for target `i`: the layer's size in bytes, or its error.
    pub fn wait_target(&self, i: usize) -> Result<usize> {
        let mut size = 0usize;
        // SAFETY: a live read handle and a valid out pointer.
        check(|e| unsafe { sys::auxstore_host_read_wait_target(self.raw, i, &mut size, e) })?;
        Ok(size)
    }
    /// Waits for every target of the snapshot (`ns`, `prefix`): one prefix in
    /// two namespaces is two snapshots.
    pub fn wait_snapshot(&self, ns: Namespace, prefix: &Prefix) -> Result<()> {
        // SAFETY: a live read handle and a 16-byte prefix.
        check(|e| unsafe { sys::auxstore_host_read_wait_snapshot(self.raw, ns.0, prefix.0.as_ptr(), e) })
    }
    /// The snapshots (namespace, prefix) whose every target completed since
    /// the last call, each once (vLLM's `get_finished`); does not wait.
    pub fn finished(&self) -> Result<Vec<(Namespace, Prefix)>> {
        let mut out = vec![sys::auxstore_snapshot_ref_t::default(); self.n];
        let mut n = 0usize;
        // SAFETY: a live read handle; `out.len()` slots (NULL for 0).
        check(|e| unsafe {
            sys::auxstore_host_read_finished(
                self.raw,
                if out.is_empty() { ptr::null_mut() } else { out.as_mut_ptr() },
                out.len(),
                &mut n,
                e,
            )
        })?;
        Ok(out[..n].iter().map(|s| (Namespace(s.ns), Prefix(s.prefix))).collect())
    }
    /// Targets not started end with `Unavailable("cancelled")`.
    pub fn cancel(&self) {
        // SAFETY: a live read handle.
        unsafe { sys::auxstore_host_read_cancel(self.raw) }
    }
}

impl Drop for HostRead<'_> {
    fn drop(&mut self) {
        // SAFETY: the handle this read started, released once; it waits for
        // the reads in flight.
        unsafe { sys::auxstore_host_read_release(self.raw) }
        *self.reads -= 1;
    }
}
