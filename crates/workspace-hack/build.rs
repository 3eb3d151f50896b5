// Empty: it exists so that Cargo resolves the crate's build-dependencies (see Cargo.toml).
fn main() {}
