//! Plain-old-data element types: layer data as `&[T]` / `&mut [T]` (f32,
//! bf16 or f16 as the engine holds them) instead of bytes, with no copy.
use std::mem::size_of_val;

/// A plain-old-data element type: every bit pattern is a valid value, and
/// it has no padding, no pointers and no drop glue, so a `&[T]` can be
/// viewed as its bytes and a `&mut [T]` filled from bytes. Implemented for
/// the integer and float types and for arrays of them; implement it for an
/// engine's own element type (a `#[repr(transparent)]` bf16 or f16 over
/// `u16`, say) with `unsafe impl auxstore::Pod for Bf16 {}`.
///
/// # Safety
/// Only for `Copy` types without padding bytes whose every bit pattern is a
/// valid value (no `bool`, `char`, references or enums).
pub unsafe trait Pod: Copy + Send + Sync + 'static {}

macro_rules! pod {
    ($($t:ty),*) => { $(
        // SAFETY: a primitive number: no padding, every bit pattern valid.
        unsafe impl Pod for $t {}
    )* };
}
pod!(u8, i8, u16, i16, u32, i32, u64, i64, u128, i128, usize, isize, f32, f64);
// SAFETY: an array of Pod has no padding between its elements.
unsafe impl<T: Pod, const N: usize> Pod for [T; N] {}

/// The bytes of `data` (no copy).
pub fn bytes_of<T: Pod>(data: &[T]) -> &[u8] {
    // SAFETY: T is Pod (no padding: every byte is initialised); the byte
    // slice covers exactly `data`'s memory and borrows it.
    unsafe { std::slice::from_raw_parts(data.as_ptr() as *const u8, size_of_val(data)) }
}

/// The bytes of `data`, writable (no copy): any bytes written leave valid
/// `T`s behind, since every bit pattern of a Pod type is a value.
pub fn bytes_of_mut<T: Pod>(data: &mut [T]) -> &mut [u8] {
    // SAFETY: as bytes_of, and every bit pattern written is a valid T.
    unsafe { std::slice::from_raw_parts_mut(data.as_mut_ptr() as *mut u8, size_of_val(data)) }
}
