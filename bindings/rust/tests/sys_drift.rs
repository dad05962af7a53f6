//! The hand-written `sheaf::sys` against `include/sheaf.h`, so that neither drifts from the other.
//!
//! What is checked, both ways (nothing in the header missing here, nothing here that the header
//! lacks):
//! * functions (`SHEAF_API` declarations): the same names, and for each the same return type
//!   and the same parameters in order (names and types; a C type is mapped to the Rust text it
//!   must be declared with by a small table: `const char *` is `*const c_char`, `char **` is
//!   `*mut *mut c_char`, `int64_t` is `i64`, an enum its own `c_int` alias, ...). Every function's
//!   address is taken, so the test binary links every symbol of the library too;
//! * callback typedefs (`typedef R (*name)(...)`): return and parameter types likewise;
//! * opaque handles (`typedef struct x x;`);
//! * enums: every constant and its value, read from the header's text and from a C program;
//! * structs (the `typedef struct`s and the Arrow C data interface's plain `struct ArrowSchema`
//!   and `struct ArrowArray`, function-pointer fields included): field names, order and types
//!   (by the table), and the layout: each field's offset
//!   and size, the struct's size and alignment, printed by a C program compiled with `cc`
//!   against the header (`offsetof`, `sizeof`, `_Alignof`) and compared with what Rust computes
//!   (`offset_of!`, `size_of`, `align_of`); the size of every C enum type is `c_int`'s;
//! * integer `#define`s (`SHEAF_*_VERSION`, the version numbers, `ARROW_FLAG_*`) and
//!   `SHEAF_VERSION_STRING`;
//! * the header installed through pkg-config (what the build linked against) is the source's,
//!   and the crate's version (Cargo.toml) is the header's.

use sheaf::sys;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

fn header_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../include/sheaf.h")
}

/// The experimental tier's header, beside sheaf.h: `sys` declares both tiers.
fn experimental_header_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../include/sheaf/experimental.h")
}

/// The headers (sheaf.h, then sheaf/experimental.h) without their comments.
fn header_text() -> String {
    let text = std::fs::read_to_string(header_path()).expect("read include/sheaf.h")
        + &std::fs::read_to_string(experimental_header_path()).expect("read include/sheaf/experimental.h");
    let mut out = String::new();
    let mut rest = text.as_str();
    while let Some(start) = rest.find("/*") {
        out.push_str(&rest[..start]);
        let end = rest[start + 2..].find("*/").expect("an unterminated comment") + start + 4;
        out.push(' ');
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

fn squash(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The Rust text a C type is declared with here (whitespace removed).
fn rust_type(c: &str) -> String {
    // A function pointer ("void (*)(struct ArrowSchema *)", a struct field's type as c_field
    // gives it) is a nullable `Option<unsafe extern "C" fn(..)>`. Its parameters are bare types,
    // as the Arrow interface writes them (a named one stops at the table below).
    if let Some(open) = c.find("(*)") {
        let ret = rust_type(&c[..open]);
        let params = c[open + 3..].trim().trim_start_matches('(').trim_end_matches(')');
        let params: Vec<String> =
            params.split(',').map(str::trim).filter(|p| !p.is_empty() && *p != "void").map(rust_type).collect();
        let ret = if ret == "c_void" { String::new() } else { format!("->{ret}") };
        return format!("Option<unsafeextern\"C\"fn({}){ret}>", params.join(","));
    }
    let stars = c.matches('*').count();
    let mut base = c.replace('*', " ");
    let constant = base.split_whitespace().next() == Some("const");
    base = squash(&base.replace("const ", " "));
    let mapped = match base.as_str() {
        "char" => "c_char".to_string(),
        "int" => "c_int".to_string(),
        "unsigned int" => "c_uint".to_string(),
        "int64_t" => "i64".to_string(),
        "size_t" => "usize".to_string(),
        "void" => "c_void".to_string(),
        // The Arrow C data interface's structs have no typedef: `ArrowSchema` here.
        "struct ArrowSchema" => "ArrowSchema".to_string(),
        "struct ArrowArray" => "ArrowArray".to_string(),
        // A handle, struct, callback or enum keeps its name (an enum is `pub type sheaf_x = c_int`,
        // whose size the layout test checks).
        other if other.starts_with("sheaf_") => other.to_string(),
        other => panic!("no Rust type known for the C type {other:?}: add it to the table"),
    };
    if stars == 0 {
        return mapped;
    }
    let mut out = format!("{}{}", if constant { "*const" } else { "*mut" }, mapped);
    for _ in 1..stars {
        out = format!("*mut{out}");
    }
    out
}

fn normal(rust: &str) -> String {
    rust.split_whitespace().collect::<String>()
}

/// "int64_t first" -> ("first", "int64_t"); "void" -> None.
fn c_param(param: &str) -> Option<(String, String)> {
    let param = param.trim();
    if param == "void" || param.is_empty() {
        return None;
    }
    let split = param.rfind(|c: char| !(c.is_alphanumeric() || c == '_')).expect("a named parameter") + 1;
    Some((param[split..].to_string(), param[..split].trim().to_string()))
}

/// A struct field: "int64_t flags" -> ("flags", "int64_t"); a function pointer
/// "void (*release)(struct ArrowSchema *)" -> ("release", "void (*)(struct ArrowSchema *)").
fn c_field(field: &str) -> Option<(String, String)> {
    if let Some(open) = field.find("(*") {
        let close = field[open..].find(')').unwrap() + open;
        let name = field[open + 2..close].trim().to_string();
        return Some((name, format!("{}(*){}", &field[..open], &field[close + 1..])));
    }
    c_param(field)
}

#[derive(Debug, PartialEq)]
struct Signature {
    ret: String,
    params: Vec<(String, String)>,
}

fn c_signature(ret: &str, params: &str) -> Signature {
    let ret = rust_type(ret);
    Signature {
        ret: if ret == "c_void" { String::new() } else { ret },
        params: params.split(',').filter_map(c_param).map(|(n, t)| (n, rust_type(&t))).collect(),
    }
}

fn rust_signature(ret: &str, params: &[(&str, &str)]) -> Signature {
    Signature {
        ret: normal(ret),
        params: params.iter().map(|(n, t)| (n.trim_start_matches("r#").to_string(), normal(t))).collect(),
    }
}

/// A struct with a body: how C spells its type ("sheaf_error", "struct ArrowSchema") and its
/// fields (name, C type) in order.
struct CStruct {
    spelled: String,
    fields: Vec<(String, String)>,
}

struct Header {
    functions: BTreeMap<String, (String, String)>,
    callbacks: BTreeMap<String, (String, String)>,
    enums: BTreeMap<String, Vec<(String, i64)>>,
    structs: BTreeMap<String, CStruct>,
    opaque: BTreeSet<String>,
    defines: Vec<String>,
}

fn between<'a>(text: &'a str, open: &str, close: &str) -> (&'a str, &'a str) {
    let start = text.find(open).unwrap() + open.len();
    let end = text[start..].find(close).unwrap() + start;
    (&text[start..end], &text[end + close.len()..])
}

fn parse_header() -> Header {
    let text = header_text();
    let mut header = Header {
        functions: BTreeMap::new(),
        callbacks: BTreeMap::new(),
        enums: BTreeMap::new(),
        structs: BTreeMap::new(),
        opaque: BTreeSet::new(),
        defines: Vec::new(),
    };
    for line in text.lines() {
        let line = line.trim();
        // Every object-like #define with a value but a string or an attribute: SHEAF_* and
        // ARROW_FLAG_* (the include guards have none).
        if let Some(rest) = line.strip_prefix("#define ") {
            let name = rest.split(|c: char| c.is_whitespace() || c == '(').next().unwrap().to_string();
            let after = &rest[name.len()..];
            let function_like = after.starts_with('(');
            let value = after.trim();
            if !function_like && !value.is_empty() && !value.starts_with('"') && !value.starts_with("__attribute__") {
                header.defines.push(name);
            }
        }
    }
    // Declarations end with ';' (the preprocessor lines hold none outside comments).
    let code: String = text.lines().filter(|l| !l.trim_start().starts_with('#')).collect::<Vec<_>>().join("\n");
    let mut rest = code.as_str();
    while let Some(at) = rest.find("typedef enum ") {
        let (body, after) = between(&rest[at..], "{", "}");
        let name = after[..after.find(';').unwrap()].trim().to_string();
        let constants = body
            .split(',')
            .filter(|c| !c.trim().is_empty())
            .map(|c| {
                let (n, v) = c.split_once('=').expect("every enum constant has an explicit value");
                (n.trim().to_string(), v.trim().parse::<i64>().expect("an integer value"))
            })
            .collect();
        header.enums.insert(name, constants);
        rest = after;
    }
    for statement in code.split(';') {
        let s = squash(statement);
        if let Some(decl) = s.strip_prefix("typedef struct ") {
            // Only the opaque handles here (a struct with a body is split by its ';'s: read below).
            if !decl.contains('{') {
                let mut words = decl.split_whitespace();
                let (tag, name) = (words.next().unwrap(), words.next().unwrap());
                assert_eq!(tag, name);
                header.opaque.insert(name.to_string());
            }
        } else if let Some(decl) = s.strip_prefix("typedef ") {
            if let Some(open) = decl.find("(*") {
                let close = decl[open..].find(')').unwrap() + open;
                let name = decl[open + 2..close].trim().to_string();
                let params = decl[close + 1..].trim().trim_start_matches('(').trim_end_matches(')').to_string();
                header.callbacks.insert(name, (decl[..open].trim().to_string(), params));
            }
        } else if let Some(at) = s.find("SHEAF_API ") {
            let decl = &s[at + "SHEAF_API ".len()..];
            let open = decl.find('(').unwrap();
            let head = &decl[..open];
            let split = head.rfind(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap() + 1;
            let params = decl[open + 1..decl.rfind(')').unwrap()].to_string();
            header.functions.insert(head[split..].to_string(), (head[..split].trim().to_string(), params));
        }
    }
    // Struct fields, in order: `typedef struct x { ... } x;` (named by its typedef) and a plain
    // `struct X { ... };` (the Arrow interface's: `struct X` in C, `X` in sys.rs). A `struct X`
    // not followed by a body (a handle's typedef, a parameter or field type) is passed over.
    let word = |c: char| c.is_alphanumeric() || c == '_';
    let mut rest = code.as_str();
    while let Some(at) = rest.find("struct ") {
        let after_kw = &rest[at + "struct ".len()..];
        let tag_end = after_kw.find(|c: char| !word(c)).unwrap();
        let tag = after_kw[..tag_end].to_string();
        if rest[..at].ends_with(word) || !after_kw[tag_end..].trim_start().starts_with('{') {
            rest = &after_kw[tag_end..];
            continue;
        }
        let typedef = rest[..at].trim_end().ends_with("typedef");
        let (body, after) = between(after_kw, "{", "}");
        let fields = body.split(';').filter_map(c_field).collect();
        let end = after.find(';').unwrap();
        let (name, spelled) = if typedef {
            let name = after[..end].trim().to_string();
            (name.clone(), name)
        } else {
            assert!(after[..end].trim().is_empty(), "struct {tag}: a declarator after its body");
            (tag.clone(), format!("struct {tag}"))
        };
        header.structs.insert(name, CStruct { spelled, fields });
        rest = &after[end..];
    }
    header
}

fn names<T>(map: &BTreeMap<String, T>) -> BTreeSet<String> {
    map.keys().cloned().collect()
}

fn assert_same_names(what: &str, header: BTreeSet<String>, rust: BTreeSet<String>) {
    let missing: Vec<_> = header.difference(&rust).collect();
    let extra: Vec<_> = rust.difference(&header).collect();
    assert!(missing.is_empty() && extra.is_empty(), "{what}: missing in sys.rs {missing:?}; not in sheaf.h {extra:?}");
}

#[test]
fn functions_match_the_header() {
    let header = parse_header();
    let rust = sys::functions();
    assert_eq!(header.functions.len(), 113, "sheaf.h and sheaf/experimental.h declare 113 functions (1.0.0's 89, the partitions' three, the groups' fifteen, sheaf_list_url, sheaf_list_delta_has_long_digits, sheaf_arrow_from_json, sheaf_client_set_cache, sheaf_list_set_body, sheaf_list_poll)");
    assert_same_names("functions", names(&header.functions), rust.iter().map(|f| f.name.to_string()).collect());
    for function in &rust {
        let (ret, params) = &header.functions[function.name];
        assert_eq!(
            rust_signature(function.ret, function.params),
            c_signature(ret, params),
            "{}: sys.rs (left) differs from sheaf.h (right)",
            function.name
        );
        assert_ne!(function.address, 0, "{} did not link", function.name);
    }
}

#[test]
fn callbacks_and_handles_match_the_header() {
    let header = parse_header();
    let rust = sys::callbacks();
    assert_same_names("callbacks", names(&header.callbacks), rust.iter().map(|c| c.name.to_string()).collect());
    for callback in &rust {
        let (ret, params) = &header.callbacks[callback.name];
        assert_eq!(
            rust_signature(callback.ret, callback.params),
            c_signature(ret, params),
            "{}: sys.rs (left) differs from sheaf.h (right)",
            callback.name
        );
    }
    assert_same_names("opaque handles", header.opaque.clone(), sys::OPAQUE.iter().map(|s| s.to_string()).collect());
}

#[test]
fn enum_constants_and_struct_fields_match_the_header_text() {
    let header = parse_header();
    let enums: BTreeSet<String> = names(&header.enums);
    assert_same_names("enums", enums.clone(), sys::ENUMS.iter().map(|(n, _)| n.to_string()).collect());
    for (name, constants) in sys::ENUMS {
        let rust: Vec<(String, i64)> = constants.iter().map(|(n, v)| (n.to_string(), *v)).collect();
        assert_eq!(rust, header.enums[*name], "enum {name}: sys.rs (left) differs from sheaf.h (right)");
    }
    let rust = sys::structs();
    assert_same_names("structs", names(&header.structs), rust.iter().map(|s| s.name.to_string()).collect());
    for decl in &rust {
        let fields: Vec<(String, String)> = decl.fields.iter().map(|f| (f.name.to_string(), normal(f.ty))).collect();
        let expected: Vec<(String, String)> =
            header.structs[decl.name].fields.iter().map(|(n, t)| (n.clone(), rust_type(t))).collect();
        assert_eq!(fields, expected, "struct {}: sys.rs (left) differs from sheaf.h (right)", decl.name);
    }
    let defines: BTreeSet<String> = header.defines.iter().cloned().collect();
    assert_same_names("integer #defines", defines, sys::DEFINES.iter().map(|(n, _)| n.to_string()).collect());
}

/// Compiles and runs a C program printing the layout and constant values the C compiler sees.
fn c_facts(header: &Header) -> BTreeMap<String, String> {
    let include = header_path().parent().unwrap().to_path_buf();
    let mut program = String::from(
        "#include <stddef.h>\n#include <stdio.h>\n#include <sheaf.h>\n#include <sheaf/experimental.h>\nint main(void) {\n",
    );
    for (name, CStruct { spelled: c, fields }) in &header.structs {
        program += &format!("printf(\"struct {name} %zu %zu\\n\", sizeof({c}), (size_t)_Alignof({c}));\n");
        for (field, _) in fields {
            program += &format!(
                "printf(\"field {name}.{field} %zu %zu\\n\", offsetof({c}, {field}), sizeof((({c} *)0)->{field}));\n"
            );
        }
    }
    for (name, constants) in &header.enums {
        program += &format!("printf(\"enum {name} %zu\\n\", sizeof({name}));\n");
        for (constant, _) in constants {
            program += &format!("printf(\"const {constant} %lld\\n\", (long long){constant});\n");
        }
    }
    for define in &header.defines {
        program += &format!("printf(\"const {define} %lld\\n\", (long long)({define}));\n");
    }
    program += "printf(\"string SHEAF_VERSION_STRING %s\\n\", SHEAF_VERSION_STRING);\nreturn 0;\n}\n";
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("sys_drift");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("layout.c"), program).unwrap();
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let status = Command::new(&cc)
        .args(["-std=c11", "-Wall", "-Werror", "-I"])
        .arg(&include)
        .arg(dir.join("layout.c"))
        .arg("-o")
        .arg(dir.join("layout"))
        .status()
        .unwrap_or_else(|error| panic!("cannot run the C compiler {cc}: {error}"));
    assert!(status.success(), "the layout program did not compile");
    let output = Command::new(dir.join("layout")).output().unwrap();
    assert!(output.status.success());
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|line| {
            let mut parts = line.splitn(3, ' ');
            let key = format!("{} {}", parts.next().unwrap(), parts.next().unwrap());
            (key, parts.next().unwrap().to_string())
        })
        .collect()
}

#[test]
fn layouts_and_values_match_what_the_c_compiler_sees() {
    let header = parse_header();
    let facts = c_facts(&header);
    let mut checked = 0;
    for decl in sys::structs() {
        assert_eq!(
            facts[&format!("struct {}", decl.name)],
            format!("{} {}", decl.size, decl.align),
            "struct {} size, align",
            decl.name
        );
        for field in &decl.fields {
            assert_eq!(
                facts[&format!("field {}.{}", decl.name, field.name)],
                format!("{} {}", field.offset, field.size),
                "{}.{}: offset and size in C (left) and Rust (right)",
                decl.name,
                field.name
            );
            checked += 1;
        }
    }
    for (name, constants) in sys::ENUMS {
        assert_eq!(facts[&format!("enum {name}")], std::mem::size_of::<sys::c_int>().to_string(), "sizeof({name})");
        for (constant, value) in *constants {
            assert_eq!(facts[&format!("const {constant}")], value.to_string(), "{constant}");
            checked += 1;
        }
    }
    for (define, value) in sys::DEFINES {
        assert_eq!(facts[&format!("const {define}")], value.to_string(), "{define}");
    }
    assert_eq!(facts["string SHEAF_VERSION_STRING"], sys::SHEAF_VERSION_STRING);
    assert!(checked > 100, "only {checked} facts checked");
}

#[test]
fn the_installed_header_and_library_are_this_version() {
    let installed = Path::new(env!("SHEAF_INSTALLED_INCLUDEDIR")).join("sheaf.h");
    assert_eq!(
        std::fs::read(&installed).expect("the installed sheaf.h"),
        std::fs::read(header_path()).unwrap(),
        "{} is not include/sheaf.h",
        installed.display()
    );
    let installed = Path::new(env!("SHEAF_INSTALLED_INCLUDEDIR")).join("sheaf/experimental.h");
    assert_eq!(
        std::fs::read(&installed).expect("the installed sheaf/experimental.h"),
        std::fs::read(experimental_header_path()).unwrap(),
        "{} is not include/sheaf/experimental.h",
        installed.display()
    );
    // The crate's version is the header's (Cargo.toml mirrors CMakeLists.txt's project version).
    assert_eq!(env!("CARGO_PKG_VERSION"), sys::SHEAF_VERSION_STRING, "bindings/rust/Cargo.toml's version");
    // Same major, at least this minor: what the ABI promises.
    let loaded = unsafe { sys::sheaf_version_number() };
    assert_eq!(loaded / 10000, sys::SHEAF_VERSION_MAJOR);
    assert!(loaded >= sys::SHEAF_VERSION_NUMBER);
}
