//! Prefix hashes, token digests and the CPU reference of the QSA re-pool.
use crate::error::{check, Error, Result};
use crate::sys;
use crate::types::{Geometry, Prefix, TokenDigest};
use std::os::raw::c_void;
use std::ptr;

/// Chained block hashes of `tokens`: one per complete block of `block_size`
/// tokens, shortest first, seeded with `salt` (the engine-independent
/// prefix keys `Store::longest_prefix_for_tokens` probes).
///
/// # Errors
/// `InvalidArgument` for `block_size` 0.
pub fn prefix_hashes(tokens: &[u32], block_size: u32, salt: u64) -> Result<Vec<Prefix>> {
    let n = if block_size == 0 { 0 } else { tokens.len() / block_size as usize };
    let mut out = vec![Prefix::default(); n];
    let mut got = 0usize;
    // SAFETY: `tokens` is a valid slice; `out` has room for `n` prefixes
    // (Prefix is repr(transparent) over [u8; 16]) and auxstore writes at
    // most `n`; `got` is clamped by truncate.
    check(|e| unsafe {
        sys::auxstore_prefix_hash(
            tokens.as_ptr(),
            tokens.len(),
            block_size,
            salt,
            if n == 0 { ptr::null_mut() } else { out.as_mut_ptr() as *mut [u8; 16] },
            n,
            &mut got,
            e,
        )
    })?;
    out.truncate(got);
    Ok(out)
}

/// Digest of the exact token sequence (independent of the prefix hash).
pub fn token_digest(tokens: &[u32], salt: u64) -> Result<TokenDigest> {
    let mut d = TokenDigest::default();
    // SAFETY: a valid slice and a 16-byte out array.
    check(|e| unsafe { sys::auxstore_token_digest(tokens.as_ptr(), tokens.len(), salt, d.0.as_mut_ptr(), e) })?;
    Ok(d)
}

/// The CPU reference of the re-pool kernel (design.md section 2): blocks
/// `[0, n_blocks)` of `raw_keys` (`ingested * qsa_hd` bf16) with the layer's
/// `k_pool_k` and `k_norm_w` (`qsa_hd` bf16 each); `n_blocks * qsa_hd` bf16
/// block keys, what a restore's re-pool must produce.
///
/// # Errors
/// `InvalidArgument` when a slice is shorter than the geometry needs, for
/// `qsa_ratio` 0 and auxstore's geometry checks; `OutOfRange` when the
/// blocks need more than `ingested` tokens (`n_blocks * qsa_ratio >
/// ingested`) or `ingested > qsa_max_tokens`.
pub fn qsa_block_pool_host(
    geometry: &Geometry,
    raw_keys: &[u16],
    ingested: u64,
    k_pool_k: &[u16],
    k_norm_w: &[u16],
    n_blocks: u32,
) -> Result<Vec<u16>> {
    let hd = geometry.qsa_hd as u64;
    let need = ingested
        .checked_mul(hd)
        .ok_or_else(|| Error::invalid("auxstore::qsa_block_pool_host: ingested * qsa_hd overflows"))?;
    if (raw_keys.len() as u64) < need || (k_pool_k.len() as u64) < hd || (k_norm_w.len() as u64) < hd {
        return Err(Error::invalid(format!(
            "auxstore::qsa_block_pool_host: raw_keys has {} values (need {need}), k_pool_k {} and k_norm_w {} \
             (need qsa_hd = {hd})",
            raw_keys.len(),
            k_pool_k.len(),
            k_norm_w.len()
        )));
    }
    if geometry.qsa_ratio == 0 {
        return Err(Error::invalid("auxstore::qsa_block_pool_host: qsa_ratio is 0"));
    }
    // Checked before the output is allocated: n_blocks full blocks must lie
    // within the ingested tokens, which bounds the output by raw_keys.
    if u64::from(n_blocks) * u64::from(geometry.qsa_ratio) > ingested {
        return Err(Error::OutOfRange(format!(
            "auxstore::qsa_block_pool_host: {n_blocks} blocks of {} tokens need more than the {ingested} ingested",
            geometry.qsa_ratio
        )));
    }
    let out_len = crate::sizes::product("auxstore::qsa_block_pool_host: block keys", &[u64::from(n_blocks), hd, 2])?;
    let mut out = vec![0u16; (out_len / 2) as usize];
    let g = geometry.to_c();
    // A valid pointer for n_blocks 0 (which C refuses).
    let mut none = [0u16; 1];
    // SAFETY: raw_keys holds ingested * qsa_hd values and each weight
    // qsa_hd (checked above); `out` has room for n_blocks * qsa_hd values,
    // all auxstore writes.
    check(|e| unsafe {
        sys::auxstore_qsa_block_pool_host(
            &g,
            raw_keys.as_ptr() as *const c_void,
            ingested,
            k_pool_k.as_ptr() as *const c_void,
            k_norm_w.as_ptr() as *const c_void,
            n_blocks,
            if out.is_empty() { none.as_mut_ptr() as *mut c_void } else { out.as_mut_ptr() as *mut c_void },
            e,
        )
    })?;
    Ok(out)
}
