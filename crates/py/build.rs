//! Records the cargo profile this extension is built with, so `latlab bench`
//! can say which build it measured: `make test` builds the `release-tests`
//! profile (no LTO), about a third slower than `release` on the simulator.
//! Cargo names no custom profile to a build script, but OUT_DIR is
//! `<target>/<profile>/build/<package>-<hash>/out`.

fn main() {
    let out_dir = std::env::var("OUT_DIR").unwrap_or_default();
    let profile = std::path::Path::new(&out_dir)
        .ancestors()
        .nth(3)
        .and_then(|p| p.file_name())
        .and_then(|n| n.to_str())
        .unwrap_or("unknown")
        .to_string();
    println!("cargo:rustc-env=LATLAB_CARGO_PROFILE={profile}");
    println!("cargo:rerun-if-changed=build.rs");
}
