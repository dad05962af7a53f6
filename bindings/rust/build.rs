//! Finds libsheaf through `pkg-config sheaf` (std only: the `pkg-config` command is run) and
//! tells Cargo where to link it from. The library is installed with
//! `cmake --install BUILD --prefix DIR`; point pkg-config at it with
//! `PKG_CONFIG_PATH=DIR/lib/pkgconfig` (run_tests.sh does). The tests and examples of this
//! package get an rpath to that directory, so they run without LD_LIBRARY_PATH.

use std::env;
use std::process::Command;

fn pkg_config(args: &[&str]) -> Result<String, String> {
    let program = env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".to_string());
    let output =
        Command::new(&program).args(args).output().map_err(|error| format!("cannot run {program}: {error}"))?;
    if !output.status.success() {
        return Err(format!("{program} {}: {}", args.join(" "), String::from_utf8_lossy(&output.stderr).trim()));
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
}

fn main() {
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG");
    println!("cargo:rerun-if-changed=build.rs");
    let found = pkg_config(&["--atleast-version=1.0", "sheaf"])
        .and_then(|_| pkg_config(&["--variable=libdir", "sheaf"]))
        .and_then(|libdir| Ok((libdir, pkg_config(&["--variable=includedir", "sheaf"])?)));
    let (libdir, includedir) = match found {
        Ok(found) => found,
        Err(error) => panic!(
            "libsheaf 1.x not found through pkg-config ({error}).\n\
             Install it with `cmake --install BUILD --prefix DIR` and set \
             PKG_CONFIG_PATH=DIR/lib/pkgconfig (bindings/rust/run_tests.sh BUILD does both)."
        ),
    };
    let libdir = std::fs::canonicalize(&libdir).map(|p| p.display().to_string()).unwrap_or(libdir);
    let includedir = std::fs::canonicalize(&includedir).map(|p| p.display().to_string()).unwrap_or(includedir);
    println!("cargo:rustc-link-search=native={libdir}");
    println!("cargo:rustc-link-lib=dylib=sheaf");
    // Tests, examples and binaries of this package find the library where it was linked from.
    println!("cargo:rustc-link-arg=-Wl,-rpath,{libdir}");
    // For the drift test: the header this build was linked against.
    println!("cargo:rustc-env=SHEAF_INSTALLED_INCLUDEDIR={includedir}");
    println!("cargo:libdir={libdir}");
    println!("cargo:include={includedir}");
}
