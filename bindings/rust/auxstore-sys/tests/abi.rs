//! auxstore-sys against the header it was built for (AUXSTORE_SYS_C_H, or
//! $AUXSTORE_C_H when set at run time):
//!  - every `auxstore_*` function c.h declares is declared here, with the
//!    same parameter and return types, and nothing here is missing from c.h;
//!  - every struct has the C compiler's size, alignment and field offsets,
//!    and every constant its value (OUT_DIR/abi_probe.rs, from build.rs);
//!  - the library resolves every symbol and answers a few calls.
use auxstore_sys as sys;
use std::collections::BTreeMap;
use std::ffi::CStr;
use std::mem::{align_of, size_of, MaybeUninit};
use std::ptr;

// ---- layouts and constants (generated calls) ---------------------------------

#[derive(Default)]
pub struct Checker {
    problems: Vec<String>,
    structs: usize,
    constants: usize,
}

fn size_of_pointee<T>(_: *const T) -> usize {
    size_of::<T>()
}

macro_rules! check_struct {
    ($c:ident, $t:ident, $size:expr, $align:expr) => {{
        $c.structs += 1;
        let (size, align) = (size_of::<sys::$t>(), align_of::<sys::$t>());
        if size != $size || align != $align {
            $c.problems.push(format!(
                "{}: Rust size {} align {}, C size {} align {}",
                stringify!($t),
                size,
                align,
                $size,
                $align
            ));
        }
    }};
}

macro_rules! check_field {
    ($c:ident, $t:ident, $f:ident, $offset:expr, $size:expr) => {{
        let u = MaybeUninit::<sys::$t>::uninit();
        let base = u.as_ptr();
        // SAFETY: only the field's address is taken; nothing is read.
        let field = unsafe { ptr::addr_of!((*base).$f) };
        let offset = field as usize - base as usize;
        let size = size_of_pointee(field);
        if offset != $offset || size != $size {
            $c.problems.push(format!(
                "{}.{}: Rust offset {} size {}, C offset {} size {}",
                stringify!($t),
                stringify!($f),
                offset,
                size,
                $offset,
                $size
            ));
        }
    }};
}

macro_rules! check_const {
    ($c:ident, $name:ident, $value:expr) => {{
        $c.constants += 1;
        let v = sys::$name as i64;
        if v != $value {
            $c.problems.push(format!("{} is {} here, {} in c.h", stringify!($name), v, $value));
        }
    }};
}

mod probe {
    use super::*;
    include!(concat!(env!("OUT_DIR"), "/abi_probe.rs"));
}

#[test]
fn struct_layouts_and_constants_match_the_c_compiler() {
    let mut c = Checker::default();
    probe::c_layouts(&mut c);
    assert!(c.problems.is_empty(), "layout mismatches:\n  {}", c.problems.join("\n  "));
    assert_eq!(c.structs, probe::C_STRUCT_COUNT);
    assert!(c.structs >= 14, "only {} structs probed: the header parse is off", c.structs);
    assert_eq!(c.constants, probe::C_CONSTANT_COUNT);
    assert!(c.constants >= 33, "only {} constants probed", c.constants);
}

// ---- functions: c.h parsed here, compared with DECLARED_FUNCTIONS -------------

fn header_path() -> String {
    std::env::var("AUXSTORE_C_H").unwrap_or_else(|_| sys::C_HEADER_PATH.to_string())
}

fn strip_comments(src: &str) -> String {
    let mut out = String::new();
    let mut rest = src;
    loop {
        let block = rest.find("/*");
        let line = rest.find("//");
        match (block, line) {
            (Some(b), l) if l.map_or(true, |l| b < l) => {
                out.push_str(&rest[..b]);
                out.push(' ');
                rest = match rest[b + 2..].find("*/") {
                    Some(e) => &rest[b + 2 + e + 2..],
                    None => "",
                };
            }
            (_, Some(l)) => {
                out.push_str(&rest[..l]);
                rest = match rest[l..].find('\n') {
                    Some(e) => &rest[l + e..],
                    None => "",
                };
            }
            _ => {
                out.push_str(rest);
                return out;
            }
        }
    }
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// (name, return type, parameters) of every `auxstore_*(` declaration.
fn parse_header(src: &str) -> Vec<(String, String, Vec<String>)> {
    let src = strip_comments(src);
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(at) = src[i..].find("auxstore_") {
        let start = i + at;
        i = start + 1;
        if start > 0 && is_ident(b[start - 1] as char) {
            continue;
        }
        let end = start + src[start..].find(|c: char| !is_ident(c)).unwrap_or(src.len() - start);
        let after = src[end..].trim_start();
        if !after.starts_with('(') {
            continue; // a type name, or a typedef'd function pointer `(*auxstore_x_fn)(`
        }
        let name = &src[start..end];
        // The return type: back to the previous ';', '{' or '}', minus
        // preprocessor lines.
        let before = &src[..start];
        let from = before.rfind(&[';', '{', '}'][..]).map_or(0, |p| p + 1);
        let ret: String =
            before[from..].lines().filter(|l| !l.trim_start().starts_with('#')).collect::<Vec<_>>().join(" ");
        if ret.contains("typedef") {
            continue;
        }
        // The parameters: up to the matching ')', split at depth-1 commas.
        let open = end + (src[end..].len() - after.len());
        let mut depth = 0;
        let mut params = Vec::new();
        let mut cur = String::new();
        for c in src[open..].chars() {
            match c {
                '(' => {
                    depth += 1;
                    if depth == 1 {
                        continue;
                    }
                }
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                ',' if depth == 1 => {
                    params.push(cur.trim().to_string());
                    cur.clear();
                    continue;
                }
                _ => {}
            }
            cur.push(c);
        }
        let last = cur.split_whitespace().collect::<Vec<_>>().join(" ");
        if !(params.is_empty() && (last.is_empty() || last == "void")) {
            params.push(last);
        }
        let params = params.iter().map(|p| p.split_whitespace().collect::<Vec<_>>().join(" ")).collect();
        out.push((name.to_string(), ret.split_whitespace().collect::<Vec<_>>().join(" "), params));
    }
    out
}

fn rust_base(c: &str) -> String {
    match c {
        "int" => "c_int",
        "char" => "c_char",
        "void" => "c_void",
        "size_t" => "usize",
        "uint8_t" => "u8",
        "uint32_t" => "u32",
        "uint64_t" => "u64",
        "int32_t" => "i32",
        "int64_t" => "i64",
        "float" => "f32",
        "double" => "f64",
        other => other, // auxstore_*_t and the callback typedefs keep their names
    }
    .to_string()
}

/// The Rust type a C parameter (with its name) or return type (without)
/// must have in the sys crate.
fn rust_type(decl: &str, has_name: bool) -> String {
    let decl = decl.trim();
    // `const uint8_t (*candidates)[16]`: a pointer to an array.
    if let Some(p) = decl.find("(*") {
        let base = &decl[..p];
        let n = decl[decl.rfind('[').unwrap() + 1..decl.rfind(']').unwrap()].trim();
        let konst = base.split_whitespace().any(|w| w == "const");
        let t = base.split_whitespace().rfind(|w| *w != "const").unwrap_or("");
        return format!("*{} [{}; {}]", if konst { "const" } else { "mut" }, rust_base(t), n);
    }
    let mut s = decl.to_string();
    let mut stars = 0;
    if let Some(b) = s.find('[') {
        s.truncate(b); // `prefix[16]` decays to a pointer
        stars += 1;
    }
    stars += s.matches('*').count();
    // What lies between the stars: `T* const* p` is a pointer to a const
    // pointer to T (a `const` there makes the next level `*const`).
    let levels: Vec<String> = s.split('*').map(str::to_string).collect();
    let is_const = |part: &str| part.split_whitespace().any(|w| w == "const");
    let s = s.replace('*', " ");
    let mut words: Vec<&str> = s.split_whitespace().collect();
    if has_name && words.len() > 1 {
        words.pop();
    }
    let konst = is_const(&levels[0]);
    let base = words.iter().rfind(|w| **w != "const").copied().unwrap_or("");
    if stars == 0 {
        return if base == "void" { String::new() } else { rust_base(base) };
    }
    let mut t = format!("*{} {}", if konst { "const" } else { "mut" }, rust_base(base));
    for level in 1..stars {
        let c = levels.get(level).is_some_and(|part| is_const(part));
        t = format!("*{} {t}", if c { "const" } else { "mut" });
    }
    t
}

fn squash(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}

#[test]
fn every_header_function_is_declared_with_its_signature() {
    let path = header_path();
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {path}: {e}"));
    let header = parse_header(&text);
    assert!(header.len() >= 80, "only {} functions parsed from {path}", header.len());

    let declared: BTreeMap<&str, &sys::DeclaredFn> = sys::DECLARED_FUNCTIONS.iter().map(|f| (f.name, f)).collect();
    assert_eq!(declared.len(), sys::DECLARED_FUNCTIONS.len(), "a function is declared twice");

    let mut problems = Vec::new();
    let mut in_header = std::collections::BTreeSet::new();
    for (name, ret, params) in &header {
        in_header.insert(name.as_str());
        let f = match declared.get(name.as_str()) {
            Some(f) => f,
            None => {
                problems.push(format!("missing from auxstore-sys: {ret} {name}({})", params.join(", ")));
                continue;
            }
        };
        let want_ret = rust_type(ret, false);
        if squash(&want_ret) != squash(f.ret) {
            problems.push(format!("{name}: returns `{}` here, c.h says `{ret}` (want `{want_ret}`)", f.ret));
        }
        if params.len() != f.params.len() {
            problems.push(format!(
                "{name}: {} parameters here, {} in c.h ({})",
                f.params.len(),
                params.len(),
                params.join(", ")
            ));
            continue;
        }
        for (i, (c, r)) in params.iter().zip(f.params.iter()).enumerate() {
            let want = rust_type(c, true);
            if squash(&want) != squash(r) {
                problems.push(format!("{name}: parameter {i} is `{r}` here, c.h says `{c}` (want `{want}`)"));
            }
        }
    }
    for name in declared.keys() {
        if !in_header.contains(name) {
            problems.push(format!("declared in auxstore-sys but not in c.h: {name}"));
        }
    }
    assert!(problems.is_empty(), "auxstore-sys differs from {path}:\n  {}", problems.join("\n  "));
}

#[test]
fn the_parser_maps_c_types_to_rust() {
    assert_eq!(rust_type("const char* path", true), "*const c_char");
    assert_eq!(rust_type("char** errmsg", true), "*mut *mut c_char");
    assert_eq!(rust_type("const uint8_t prefix[16]", true), "*const u8");
    assert_eq!(rust_type("uint64_t ptrs[3]", true), "*mut u64");
    assert_eq!(rust_type("const uint8_t (*candidates)[16]", true), "*const [u8; 16]");
    assert_eq!(rust_type("uint8_t (*out)[16]", true), "*mut [u8; 16]");
    assert_eq!(rust_type("auxstore_log_fn fn", true), "auxstore_log_fn");
    assert_eq!(rust_type("void", false), "");
    assert_eq!(rust_type("auxstore_options_t*", false), "*mut auxstore_options_t");
    assert_eq!(rust_type("const auxstore_put_options_t* const* options", true), "*const *const auxstore_put_options_t");
    assert_eq!(rust_type("char* const* names", true), "*const *mut c_char");
    let parsed = parse_header(
        "typedef void (*auxstore_x_fn)(void* arg);\n/* auxstore_not(a) */\nint auxstore_a(int x, \
         const uint8_t (*c)[16]);\nvoid auxstore_b(void);\n",
    );
    assert_eq!(parsed.len(), 2);
    assert_eq!(parsed[0], ("auxstore_a".into(), "int".into(), vec!["int x".into(), "const uint8_t (*c)[16]".into()]));
    assert_eq!(parsed[1], ("auxstore_b".into(), "void".into(), vec![]));
}

#[test]
fn every_symbol_resolves() {
    let addrs = sys::function_addresses();
    assert_eq!(addrs.len(), sys::DECLARED_FUNCTIONS.len());
    for (name, addr) in addrs {
        assert_ne!(addr, 0, "{name} did not resolve");
    }
}

#[test]
fn the_library_answers() {
    // SAFETY: plain calls following c.h's rules; every pointer is valid.
    unsafe {
        let name = |code| CStr::from_ptr(sys::auxstore_code_name(code)).to_str().unwrap().to_string();
        assert_eq!(name(sys::AUXSTORE_OK), "OK");
        assert_eq!(name(sys::AUXSTORE_NOT_FOUND), "NotFound");
        assert_eq!(name(sys::AUXSTORE_INTERNAL), "Internal");
        assert_eq!(name(99), "Unknown");

        let o = sys::auxstore_options_create();
        assert!(!o.is_null());
        let mut err: *mut sys::c_char = ptr::null_mut();
        assert_eq!(sys::auxstore_options_set_chunk_bytes(o, 0, &mut err), sys::AUXSTORE_INVALID_ARGUMENT);
        let msg = CStr::from_ptr(err).to_string_lossy().into_owned();
        assert!(msg.starts_with("auxstore_options_set_chunk_bytes: "), "{msg}");
        sys::auxstore_free(err as *mut sys::c_void);
        sys::auxstore_options_destroy(o);

        let tokens: Vec<u32> = (0..64).collect();
        let mut out = [[0u8; 16]; 4];
        let mut n = 0usize;
        let rc = sys::auxstore_prefix_hash(tokens.as_ptr(), 64, 16, 7, out.as_mut_ptr(), 4, &mut n, ptr::null_mut());
        assert_eq!((rc, n), (sys::AUXSTORE_OK, 4));
        assert_ne!(out[0], out[1]);

        let mut po = MaybeUninit::<sys::auxstore_pipeline_options_t>::zeroed().assume_init();
        sys::auxstore_pipeline_options_init(&mut po);
        assert_eq!(po.struct_size, size_of::<sys::auxstore_pipeline_options_t>());
        assert_eq!(po.staging_buffers, 4);
    }
}
