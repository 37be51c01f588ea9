//! Puts the folder auxstore-sys linked libauxstore_c.so from into the rpath
//! of this crate's tests and examples (a dependency's rpath does not carry
//! over), so they run without LD_LIBRARY_PATH. Your own binaries need the
//! same two lines in their build.rs, or LD_LIBRARY_PATH (docs/rust.md).
fn main() {
    println!("cargo:rerun-if-env-changed=DEP_AUXSTORE_C_LIB_DIR");
    if let Ok(dir) = std::env::var("DEP_AUXSTORE_C_LIB_DIR") {
        if !dir.is_empty() {
            println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
        }
    }
}
