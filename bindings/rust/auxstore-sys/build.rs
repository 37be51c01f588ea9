//! Finds libauxstore_c.so and auxstore/c.h, links the library, and probes the
//! header with the C compiler so the tests can check this crate against it.
//!
//! Where the library comes from, first match wins:
//!   AUXSTORE_LIB_DIR   a folder holding libauxstore_c.so (a build tree's
//!                      `capi/`); the header from AUXSTORE_INCLUDE_DIR or,
//!                      failing that, this repository's `include/`
//!   AUXSTORE_PREFIX    an install prefix (`cmake --install --prefix P`):
//!                      P/lib (or P/lib64, P/lib/<multiarch>) and P/include
//!   pkg-config         `pkg-config --libs --cflags auxstore` (set
//!                      PKG_CONFIG_PATH=P/lib/pkgconfig for a prefix)
//! The library's folder goes into the rpath of this crate's own test
//! binaries, and to dependents as DEP_AUXSTORE_C_LIB_DIR (the `auxstore`
//! crate's build.rs puts it in its binaries' rpath too).
//!
//! The probe: build.rs reads every `typedef struct` (and its fields), every
//! enum constant and every numeric `#define AUXSTORE_*` of c.h, compiles a C
//! program printing their sizes, alignments, offsets and values with `cc`
//! (or $CC), and writes OUT_DIR/abi_probe.rs, which tests/abi.rs includes.
use std::env;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

struct Found {
    lib_dirs: Vec<PathBuf>,
    libs: Vec<String>,
    include_dir: Option<PathBuf>,
    how: String,
}

fn main() {
    for var in ["AUXSTORE_LIB_DIR", "AUXSTORE_PREFIX", "AUXSTORE_INCLUDE_DIR", "PKG_CONFIG_PATH", "PKG_CONFIG", "CC"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    println!("cargo:rerun-if-changed=build.rs");

    let found = locate();
    for dir in &found.lib_dirs {
        println!("cargo:rustc-link-search=native={}", dir.display());
        // This crate's own tests find the library without LD_LIBRARY_PATH.
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir.display());
    }
    for lib in &found.libs {
        if lib != "auxstore_c" {
            println!("cargo:rustc-link-lib=dylib={lib}");
        }
    }
    let lib_dir = found.lib_dirs.first().map(|d| d.display().to_string()).unwrap_or_default();
    // For dependents' build scripts: DEP_AUXSTORE_C_LIB_DIR, DEP_AUXSTORE_C_INCLUDE.
    println!("cargo:lib_dir={lib_dir}");
    println!("cargo:rustc-env=AUXSTORE_SYS_LIB_DIR={lib_dir}");

    let include_dir = found.include_dir.clone().unwrap_or_else(repo_include_dir);
    let header = include_dir.join("auxstore").join("c.h");
    if !header.is_file() {
        panic!(
            "auxstore-sys: no auxstore/c.h under {} (library found {}); set AUXSTORE_INCLUDE_DIR \
             to the folder holding auxstore/c.h",
            include_dir.display(),
            found.how
        );
    }
    println!("cargo:rerun-if-changed={}", header.display());
    println!("cargo:include={}", include_dir.display());
    println!("cargo:rustc-env=AUXSTORE_SYS_C_H={}", header.display());

    let text =
        fs::read_to_string(&header).unwrap_or_else(|e| panic!("auxstore-sys: reading {}: {e}", header.display()));
    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("OUT_DIR"));
    probe(&text, &include_dir, &out_dir);
}

fn repo_include_dir() -> PathBuf {
    // bindings/rust/auxstore-sys -> the repository's include/
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    manifest.join("..").join("..").join("..").join("include")
}

fn env_path(var: &str) -> Option<PathBuf> {
    env::var_os(var).filter(|v| !v.is_empty()).map(PathBuf::from)
}

fn has_lib(dir: &Path) -> bool {
    dir.join("libauxstore_c.so").exists()
}

fn locate() -> Found {
    let include_env = env_path("AUXSTORE_INCLUDE_DIR");
    if let Some(dir) = env_path("AUXSTORE_LIB_DIR") {
        if !has_lib(&dir) {
            println!(
                "cargo:warning=AUXSTORE_LIB_DIR={} holds no libauxstore_c.so (build the auxstore_c \
                 target first)",
                dir.display()
            );
        }
        return Found {
            lib_dirs: vec![dir.clone()],
            libs: vec!["auxstore_c".into()],
            include_dir: include_env,
            how: format!("through AUXSTORE_LIB_DIR={}", dir.display()),
        };
    }
    if let Some(prefix) = env_path("AUXSTORE_PREFIX") {
        let mut candidates = vec![prefix.join("lib"), prefix.join("lib64")];
        if let Ok(entries) = fs::read_dir(prefix.join("lib")) {
            for e in entries.flatten() {
                candidates.push(e.path());
            }
        }
        let dir = candidates.iter().find(|d| has_lib(d)).cloned().unwrap_or_else(|| {
            println!(
                "cargo:warning=AUXSTORE_PREFIX={}: no libauxstore_c.so under lib/ (run cmake \
                 --install first)",
                prefix.display()
            );
            prefix.join("lib")
        });
        return Found {
            lib_dirs: vec![dir],
            libs: vec!["auxstore_c".into()],
            include_dir: include_env.or_else(|| Some(prefix.join("include"))),
            how: format!("through AUXSTORE_PREFIX={}", prefix.display()),
        };
    }
    if let Some(found) = pkg_config(include_env.clone()) {
        return found;
    }
    panic!(
        "auxstore-sys: cannot find libauxstore_c.so. Set one of\n  AUXSTORE_LIB_DIR=<build>/capi  \
         (a build tree)\n  AUXSTORE_PREFIX=<prefix>        (after cmake --install --prefix \
         <prefix>)\nor make `pkg-config --libs auxstore` work (PKG_CONFIG_PATH=<prefix>/lib/pkgconfig)."
    );
}

// Runs the pkg-config binary itself (no crate): -L, -l and -I.
fn pkg_config(include_env: Option<PathBuf>) -> Option<Found> {
    let exe = env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".into());
    let run = |args: &[&str]| -> Option<String> {
        let out = Command::new(&exe).args(args).arg("auxstore").output().ok()?;
        if !out.status.success() {
            return None;
        }
        String::from_utf8(out.stdout).ok()
    };
    let libs = run(&["--libs"])?;
    let cflags = run(&["--cflags"]).unwrap_or_default();
    let mut found =
        Found { lib_dirs: Vec::new(), libs: Vec::new(), include_dir: include_env, how: "through pkg-config".into() };
    for flag in libs.split_whitespace() {
        if let Some(dir) = flag.strip_prefix("-L") {
            found.lib_dirs.push(PathBuf::from(dir));
        } else if let Some(lib) = flag.strip_prefix("-l") {
            found.libs.push(lib.to_string());
        }
    }
    if found.include_dir.is_none() {
        found.include_dir = cflags
            .split_whitespace()
            .filter_map(|f| f.strip_prefix("-I"))
            .map(PathBuf::from)
            .find(|d| d.join("auxstore").join("c.h").is_file());
    }
    if !found.libs.iter().any(|l| l == "auxstore_c") {
        found.libs.push("auxstore_c".into());
    }
    Some(found)
}

// ---- the header probe --------------------------------------------------------

fn strip_comments(src: &str) -> String {
    let mut out = String::with_capacity(src.len());
    let b = src.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'/' && i + 1 < b.len() && b[i + 1] == b'*' {
            i += 2;
            while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                i += 1;
            }
            i += 2;
            out.push(' ');
        } else if b[i] == b'/' && i + 1 < b.len() && b[i + 1] == b'/' {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else {
            out.push(b[i] as char);
            i += 1;
        }
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

// The declarator's name: `shape[8]` -> shape, `*model_id` -> model_id.
fn declarator_name(part: &str) -> String {
    let part = part.split('[').next().unwrap_or("");
    let trimmed = part.trim_end_matches(|c: char| !is_ident(c));
    let start = trimmed.rfind(|c: char| !is_ident(c)).map(|i| i + 1).unwrap_or(0);
    trimmed[start..].to_string()
}

struct CStruct {
    name: String,
    fields: Vec<String>,
}

fn parse_structs(src: &str) -> Vec<CStruct> {
    let mut out = Vec::new();
    let mut rest = src;
    while let Some(at) = rest.find("typedef struct") {
        rest = &rest[at + "typedef struct".len()..];
        let open = match rest.find(&['{', ';'][..]) {
            Some(i) if rest.as_bytes()[i] == b'{' => i,
            Some(i) => {
                rest = &rest[i..]; // an opaque handle: `typedef struct X X;`
                continue;
            }
            None => break,
        };
        let close = match rest[open..].find('}') {
            Some(i) => open + i,
            None => break,
        };
        let body = &rest[open + 1..close];
        let after = &rest[close + 1..];
        let name: String = after.trim_start().chars().take_while(|&c| is_ident(c)).collect();
        let mut fields = Vec::new();
        for decl in body.split(';') {
            let decl = decl.trim();
            if decl.is_empty() {
                continue;
            }
            for part in decl.split(',') {
                let n = declarator_name(part);
                if !n.is_empty() {
                    fields.push(n);
                }
            }
        }
        out.push(CStruct { name, fields });
        rest = after;
    }
    out
}

fn parse_constants(src: &str) -> Vec<String> {
    let mut names = Vec::new();
    // enum { NAME = value, ... }
    let mut rest = src;
    while let Some(at) = rest.find("enum") {
        rest = &rest[at + 4..];
        let t = rest.trim_start();
        if !t.starts_with('{') {
            continue;
        }
        let close = match t.find('}') {
            Some(i) => i,
            None => break,
        };
        for item in t[1..close].split(',') {
            let name: String = item.trim().chars().take_while(|&c| is_ident(c)).collect();
            if !name.is_empty() {
                names.push(name);
            }
        }
        rest = &t[close..];
    }
    // #define AUXSTORE_NAME <number>
    for line in src.lines() {
        let mut words = line.split_whitespace();
        if words.next() != Some("#define") {
            continue;
        }
        if let (Some(name), Some(value)) = (words.next(), words.next()) {
            if name.starts_with("AUXSTORE_") && value.chars().all(|c| c.is_ascii_digit()) {
                names.push(name.to_string());
            }
        }
    }
    names
}

fn probe(header_text: &str, include_dir: &Path, out_dir: &Path) {
    let src = strip_comments(header_text);
    let structs = parse_structs(&src);
    let constants = parse_constants(&src);

    let mut c = String::from(
        "#include <stddef.h>\n#include <stdio.h>\n#include \"auxstore/c.h\"\n\
         #define S(T) printf(\"S %s %zu %zu\\n\", #T, sizeof(T), (size_t)_Alignof(T));\n\
         #define F(T, f) printf(\"F %s %s %zu %zu\\n\", #T, #f, offsetof(T, f), sizeof(((T*)0)->f));\n\
         #define C(N) printf(\"C %s %lld\\n\", #N, (long long)(N));\n\
         int main(void) {\n",
    );
    for s in &structs {
        writeln!(c, "  S({})", s.name).unwrap();
        for f in &s.fields {
            writeln!(c, "  F({}, {})", s.name, f).unwrap();
        }
    }
    for k in &constants {
        writeln!(c, "  C({k})").unwrap();
    }
    c.push_str("  return 0;\n}\n");
    let probe_c = out_dir.join("abi_probe.c");
    let probe_exe = out_dir.join("abi_probe");
    fs::write(&probe_c, c).expect("writing abi_probe.c");

    let cc = env::var("CC").unwrap_or_else(|_| "cc".into());
    let status = Command::new(&cc)
        .arg("-std=c11")
        .arg("-I")
        .arg(include_dir)
        .arg(&probe_c)
        .arg("-o")
        .arg(&probe_exe)
        .status()
        .unwrap_or_else(|e| panic!("auxstore-sys: running the C compiler `{cc}`: {e} (set CC)"));
    if !status.success() {
        panic!("auxstore-sys: `{cc}` could not compile the header probe {}", probe_c.display());
    }
    let out = Command::new(&probe_exe).output().expect("running abi_probe");
    assert!(out.status.success(), "abi_probe failed");
    let text = String::from_utf8(out.stdout).expect("abi_probe output");

    // OUT_DIR/abi_probe.rs: macro calls that tests/abi.rs defines.
    let mut rs = String::from("// Generated by auxstore-sys/build.rs from the C compiler's view of c.h.\n");
    rs.push_str("pub fn c_layouts(check: &mut Checker) {\n");
    for line in text.lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        match w.as_slice() {
            ["S", name, size, align] => {
                writeln!(rs, "    check_struct!(check, {name}, {size}, {align});").unwrap();
            }
            ["F", name, field, offset, size] => {
                writeln!(rs, "    check_field!(check, {name}, {field}, {offset}, {size});").unwrap();
            }
            ["C", name, value] => {
                writeln!(rs, "    check_const!(check, {name}, {value});").unwrap();
            }
            _ => {}
        }
    }
    rs.push_str("}\n");
    writeln!(
        rs,
        "pub const C_STRUCT_COUNT: usize = {};\npub const C_CONSTANT_COUNT: usize = {};",
        structs.len(),
        constants.len()
    )
    .unwrap();
    fs::write(out_dir.join("abi_probe.rs"), rs).expect("writing abi_probe.rs");
}
