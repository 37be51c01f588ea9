//! The connector's batched calls (issue 24, docs/connectors.md): the
//! consecutive-hit count over prefixes and over a block chain's pages, a
//! lookup that leases every hit, each one batched lookup in auxstore, and
//! row ranges of a layer.
use crate::error::{check, Result};
use crate::store::Store;
use crate::sys;
use crate::types::{Namespace, Prefix};
use std::ptr;

fn prefix_ptr(prefixes: &[Prefix]) -> *const [u8; 16] {
    if prefixes.is_empty() {
        ptr::null()
    } else {
        // Prefix is repr(transparent) over [u8; 16], the C array's layout.
        prefixes.as_ptr() as *const [u8; 16]
    }
}

/// The stored pages of a block chain ([`Store::count_leading_pages`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ChainPages {
    /// How many LEADING pages of the chain are stored.
    pub pages: usize,
    /// Tokens per page (the namespace's `page_tokens`, else the block size):
    /// the stored rows are `[0, pages * page_tokens)`.
    pub page_tokens: u32,
}

/// Leases taken by [`Store::lookup_leased`], one per prefix asked (0 where
/// it is not stored); every one still held is released when dropped.
#[derive(Debug)]
pub struct BatchLeases<'s> {
    store: &'s Store,
    ids: Vec<u64>,
    leading: usize,
}

impl BatchLeases<'_> {
    /// The lease of each prefix asked, in order; 0 where it is not stored.
    pub fn ids(&self) -> &[u64] {
        &self.ids
    }
    /// How many LEADING prefixes are stored (and leased).
    pub fn leading(&self) -> usize {
        self.leading
    }
    /// Releases them now; how many were still held (expired ones are not).
    pub fn release(mut self) -> Result<usize> {
        let ids = std::mem::take(&mut self.ids);
        self.store.release_leases(&ids)
    }
    /// Gives the ids up without releasing them (they still expire).
    pub fn into_ids(mut self) -> Vec<u64> {
        std::mem::take(&mut self.ids)
    }
}

impl Drop for BatchLeases<'_> {
    fn drop(&mut self) {
        if !self.ids.is_empty() {
            let _ = self.store.release_leases(&self.ids);
        }
    }
}

impl Store {
    /// How many LEADING `prefixes` are stored: the consecutive-hit count from
    /// index 0 (SGLang's `batch_exists`). The first is looked up alone and
    /// the rest in one batched lookup, so a first-key miss costs one lookup.
    /// Counts no hit and changes no recency.
    pub fn count_leading_stored(&self, ns: Namespace, prefixes: &[Prefix]) -> Result<usize> {
        let mut count = 0usize;
        // SAFETY: a live handle; `prefixes.len()` prefixes (or NULL for 0)
        // and a valid out pointer.
        check(|e| unsafe {
            sys::auxstore_count_leading_stored(self.as_raw(), ns.0, prefix_ptr(prefixes), prefixes.len(), &mut count, e)
        })?;
        Ok(count)
    }

    /// How many LEADING pages of `block_chain` (chained hashes of blocks of
    /// `block_size` tokens, as [`crate::prefix_hashes`] gives them) the
    /// namespace stores, by whichever snapshot's paged put stored them.
    ///
    /// # Errors
    /// `InvalidArgument` for `block_size` 0 or a namespace page size that is
    /// not a multiple of it; `NotFound` for an unknown namespace.
    pub fn count_leading_pages(&self, ns: Namespace, block_chain: &[Prefix], block_size: u32) -> Result<ChainPages> {
        let mut out = ChainPages::default();
        // SAFETY: a live handle; `block_chain.len()` hashes (or NULL for 0)
        // and valid out pointers.
        check(|e| unsafe {
            sys::auxstore_count_leading_pages(
                self.as_raw(),
                ns.0,
                prefix_ptr(block_chain),
                block_chain.len(),
                block_size,
                &mut out.pages,
                &mut out.page_tokens,
                e,
            )
        })?;
        Ok(out)
    }

    /// Looks up `prefixes` and leases each one stored for `lease_ms`, in one
    /// batched lookup (vLLM's `prepare_load`). Each hit counts and is
    /// touched; the leases go when the result is dropped or released.
    ///
    /// # Errors
    /// `InvalidArgument` for `lease_ms` 0.
    pub fn lookup_leased(&self, ns: Namespace, prefixes: &[Prefix], lease_ms: u64) -> Result<BatchLeases<'_>> {
        let mut ids = vec![0u64; prefixes.len()];
        let mut leading = 0usize;
        // SAFETY: a live handle; `prefixes.len()` prefixes and as many lease
        // slots (NULL for 0 either way) and a valid out pointer.
        check(|e| unsafe {
            sys::auxstore_lookup_leased(
                self.as_raw(),
                ns.0,
                prefix_ptr(prefixes),
                prefixes.len(),
                lease_ms,
                if ids.is_empty() { ptr::null_mut() } else { ids.as_mut_ptr() },
                &mut leading,
                e,
            )
        })?;
        Ok(BatchLeases { store: self, ids, leading })
    }

    /// Rows `[first_row, last_row)` of every array of a QSA or DSA layer
    /// (QSA: raw keys; DSA: k_normed, gate, valid) into `dst`, array after
    /// array (any [`crate::Pod`] element type; its size in bytes is the
    /// capacity). The whole layer is read and verified, only those rows are
    /// copied. Returns `(bytes written, the layer's rows in all)`.
    ///
    /// # Errors
    /// `InvalidArgument` for an opaque layer; `OutOfRange` (nothing read) for
    /// a bad range or a `dst` too small; `NotFound` for no such snapshot or
    /// layer; `Corruption` (quarantined).
    pub fn read_layer_rows<T: crate::Pod>(
        &self,
        ns: Namespace,
        prefix: &Prefix,
        layer: u32,
        rows: std::ops::Range<u64>,
        dst: &mut [T],
    ) -> Result<(usize, u64)> {
        let buf = crate::bytes_of_mut(dst);
        let (mut size, mut total) = (0usize, 0u64);
        // SAFETY: a live handle, a 16-byte prefix, `buf.len()` writable bytes
        // (NULL for 0) and valid out pointers.
        check(|e| unsafe {
            sys::auxstore_read_layer_rows(
                self.as_raw(),
                ns.0,
                prefix.0.as_ptr(),
                layer,
                rows.start,
                rows.end,
                if buf.is_empty() { ptr::null_mut() } else { buf.as_mut_ptr() as *mut std::os::raw::c_void },
                buf.len(),
                &mut size,
                &mut total,
                e,
            )
        })?;
        Ok((size, total))
    }

    /// Releases leases by id, skipping 0 and ones already gone (released,
    /// expired, snapshot erased); how many it released.
    pub fn release_leases(&self, ids: &[u64]) -> Result<usize> {
        let mut released = 0usize;
        // SAFETY: a live handle; `ids.len()` ids (or NULL for 0) and a valid
        // out pointer.
        check(|e| unsafe {
            sys::auxstore_lease_release_many(
                self.as_raw(),
                if ids.is_empty() { ptr::null() } else { ids.as_ptr() },
                ids.len(),
                &mut released,
                e,
            )
        })?;
        Ok(released)
    }
}
