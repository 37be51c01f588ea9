//! Checked byte-size arithmetic for everything the safe crate hands to C as a
//! size to allocate: a product that overflows, or a size no Rust slice (and
//! no allocation) can have — more than `isize::MAX` bytes — is refused here,
//! as `InvalidArgument` naming the method and the size, before C sees it.
//! So no size reaching auxstore from safe code can wrap in its own rounding.
use crate::error::{Error, Result};
use crate::types::Geometry;

/// The largest size of one allocation: `isize::MAX` bytes (Rust's bound for
/// any object and slice).
pub(crate) const MAX_BYTES: u64 = isize::MAX as u64;

/// `bytes`, when it is at most [`MAX_BYTES`]; else `InvalidArgument` naming
/// `what` (e.g. `"auxstore::Backend::alloc: bytes"`).
pub(crate) fn allocation(what: &str, bytes: u64) -> Result<u64> {
    if bytes > MAX_BYTES {
        return Err(Error::invalid(format!(
            "{what} is {bytes}, more than isize::MAX ({MAX_BYTES}), the most one allocation can hold"
        )));
    }
    Ok(bytes)
}

/// `factors` multiplied, when the product neither overflows nor exceeds
/// [`MAX_BYTES`]; else `InvalidArgument` naming `what` and the factors.
pub(crate) fn product(what: &str, factors: &[u64]) -> Result<u64> {
    let overflow = || {
        let f: Vec<String> = factors.iter().map(|v| v.to_string()).collect();
        Error::invalid(format!("{what}: {} bytes overflow (more than isize::MAX, {MAX_BYTES})", f.join(" * ")))
    };
    let mut p: u64 = 1;
    for &f in factors {
        p = p.checked_mul(f).ok_or_else(overflow)?;
    }
    if p > MAX_BYTES {
        return Err(overflow());
    }
    Ok(p)
}

/// Checks that every buffer a QSA state of `g` allocates has a byte size an
/// allocation can have: raw keys `qsa_max_tokens * qsa_hd * 2`, block keys
/// `qsa_max_tokens / qsa_ratio * qsa_hd * 2`, weights `qsa_hd * 2`.
/// (Whether the geometry makes sense otherwise is auxstore's check.)
pub(crate) fn qsa_geometry(what: &str, g: &Geometry) -> Result<()> {
    let (hd, max) = (u64::from(g.qsa_hd), u64::from(g.qsa_max_tokens));
    product(&format!("{what}: raw keys (qsa_max_tokens * qsa_hd * 2)"), &[max, hd, 2])?;
    if g.qsa_ratio > 0 {
        let blocks = max / u64::from(g.qsa_ratio);
        product(&format!("{what}: block keys (qsa_max_tokens / qsa_ratio * qsa_hd * 2)"), &[blocks, hd, 2])?;
    }
    Ok(())
}

/// The same for a DSA state of `g`: k_normed and gate `dsa_capacity *
/// dsa_index_head_dim * 2` bytes each, valid `dsa_capacity`.
pub(crate) fn dsa_geometry(what: &str, g: &Geometry) -> Result<()> {
    let (dim, cap) = (u64::from(g.dsa_index_head_dim), u64::from(g.dsa_capacity));
    product(&format!("{what}: k_normed and gate (dsa_capacity * dsa_index_head_dim * 2)"), &[cap, dim, 2])?;
    Ok(())
}
