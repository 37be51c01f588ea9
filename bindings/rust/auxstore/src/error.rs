//! Errors: one variant per C status code, each carrying auxstore's message.
use crate::sys;
use std::ffi::CStr;
use std::fmt;
use std::os::raw::{c_char, c_int, c_void};
use std::ptr;

/// An auxstore error: the C ABI's status code (one variant per code) and its
/// message, which names the function and the argument
/// (`auxstore_put_snapshot: layers[1].kind is 9, not a known kind ...`).
/// Errors found by the Rust wrapper itself (a slice too short, a NUL in a
/// string, a size whose byte count overflows) are `InvalidArgument` or
/// `OutOfRange` with a message naming the Rust method.
///
/// Each variant is named exactly as auxstore names its code (C++
/// `StatusCode`, `auxstore_code_name`): `Error::IOError(_).code_name()` is
/// `"IOError"`, and `{:?}` of any error starts with its [`Error::code_name`].
/// The enum is `#[non_exhaustive]`: a later auxstore may add a code, so a
/// `match` needs a `_` arm (a code this crate does not know is `Internal`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// `AUXSTORE_NOT_FOUND`: no such snapshot, layer, lease or namespace.
    NotFound(String),
    /// `AUXSTORE_CORRUPTION`: stored or supplied bytes fail a check.
    Corruption(String),
    /// `AUXSTORE_INVALID_ARGUMENT`: a bad argument.
    InvalidArgument(String),
    /// `AUXSTORE_OUT_OF_RANGE`: a size or count beyond what the target holds.
    OutOfRange(String),
    /// `AUXSTORE_CAPACITY`: the store or a queue is full; the call was shed.
    Capacity(String),
    /// `AUXSTORE_IO_ERROR` ("IOError"): the file system failed.
    IOError(String),
    /// `AUXSTORE_BUSY`: another handle holds the store for writing.
    Busy(String),
    /// `AUXSTORE_UNAVAILABLE`: the handle cannot serve this now (read-only,
    /// fenced, cancelled), or no CUDA device.
    Unavailable(String),
    /// `AUXSTORE_NOT_SUPPORTED`: not supported by this build.
    NotSupported(String),
    /// `AUXSTORE_INTERNAL`: a bug, or an exception caught at the boundary
    /// (also any code this crate does not know, with the code in the message).
    Internal(String),
}

/// `Result<T, auxstore::Error>`.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// The error for a C status code with its message. `AUXSTORE_OK` and any
    /// value that is not a code give `Internal`, naming the value.
    pub fn from_code(code: i32, message: impl Into<String>) -> Error {
        let m = message.into();
        match code {
            sys::AUXSTORE_NOT_FOUND => Error::NotFound(m),
            sys::AUXSTORE_CORRUPTION => Error::Corruption(m),
            sys::AUXSTORE_INVALID_ARGUMENT => Error::InvalidArgument(m),
            sys::AUXSTORE_OUT_OF_RANGE => Error::OutOfRange(m),
            sys::AUXSTORE_CAPACITY => Error::Capacity(m),
            sys::AUXSTORE_IO_ERROR => Error::IOError(m),
            sys::AUXSTORE_BUSY => Error::Busy(m),
            sys::AUXSTORE_UNAVAILABLE => Error::Unavailable(m),
            sys::AUXSTORE_NOT_SUPPORTED => Error::NotSupported(m),
            sys::AUXSTORE_INTERNAL => Error::Internal(m),
            sys::AUXSTORE_OK => Error::Internal(format!("status code 0 (OK) is not an error: {m}")),
            other => Error::Internal(format!("unknown status code {other}: {m}")),
        }
    }

    /// The C status code (`AUXSTORE_NOT_FOUND` ... `AUXSTORE_INTERNAL`).
    pub fn code(&self) -> i32 {
        match self {
            Error::NotFound(_) => sys::AUXSTORE_NOT_FOUND,
            Error::Corruption(_) => sys::AUXSTORE_CORRUPTION,
            Error::InvalidArgument(_) => sys::AUXSTORE_INVALID_ARGUMENT,
            Error::OutOfRange(_) => sys::AUXSTORE_OUT_OF_RANGE,
            Error::Capacity(_) => sys::AUXSTORE_CAPACITY,
            Error::IOError(_) => sys::AUXSTORE_IO_ERROR,
            Error::Busy(_) => sys::AUXSTORE_BUSY,
            Error::Unavailable(_) => sys::AUXSTORE_UNAVAILABLE,
            Error::NotSupported(_) => sys::AUXSTORE_NOT_SUPPORTED,
            Error::Internal(_) => sys::AUXSTORE_INTERNAL,
        }
    }

    /// The code's name as auxstore spells it ("NotFound", "Corruption",
    /// "IOError", ...): the same as the variant's name.
    pub fn code_name(&self) -> &'static str {
        code_name(self.code())
    }

    /// auxstore's message, prefixed with the C function's name (or, for a
    /// check the wrapper made, the Rust method's `auxstore::Type::method`).
    pub fn message(&self) -> &str {
        match self {
            Error::NotFound(m)
            | Error::Corruption(m)
            | Error::InvalidArgument(m)
            | Error::OutOfRange(m)
            | Error::Capacity(m)
            | Error::IOError(m)
            | Error::Busy(m)
            | Error::Unavailable(m)
            | Error::NotSupported(m)
            | Error::Internal(m) => m,
        }
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Error {
        Error::InvalidArgument(message.into())
    }
}

/// The name of a status code ("OK", "NotFound", ..., "Unknown"), from
/// `auxstore_code_name`.
pub fn code_name(code: i32) -> &'static str {
    // SAFETY: auxstore_code_name returns static, NUL-terminated storage.
    unsafe { CStr::from_ptr(sys::auxstore_code_name(code)) }.to_str().unwrap_or("Unknown")
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code_name(), self.message())
    }
}

impl std::error::Error for Error {}

/// A `char*` error message slot for one call; frees what it holds.
pub(crate) struct ErrMsg(*mut c_char);

impl ErrMsg {
    pub(crate) fn new() -> ErrMsg {
        ErrMsg(ptr::null_mut())
    }
    pub(crate) fn out(&mut self) -> *mut *mut c_char {
        &mut self.0
    }
    pub(crate) fn text(&self, code: c_int) -> String {
        if self.0.is_null() {
            format!("{} (no message)", code_name(code))
        } else {
            // SAFETY: auxstore wrote a NUL-terminated malloc'd string.
            unsafe { CStr::from_ptr(self.0) }.to_string_lossy().into_owned()
        }
    }
}

impl Drop for ErrMsg {
    fn drop(&mut self) {
        // SAFETY: NULL or a string auxstore malloc'd.
        unsafe { sys::auxstore_free(self.0 as *mut c_void) }
    }
}

/// Runs one C call with an error slot and turns its code into a Result.
pub(crate) fn check<F: FnOnce(*mut *mut c_char) -> c_int>(f: F) -> Result<()> {
    let mut err = ErrMsg::new();
    let code = f(err.out());
    if code == sys::AUXSTORE_OK {
        Ok(())
    } else {
        Err(Error::from_code(code, err.text(code)))
    }
}
