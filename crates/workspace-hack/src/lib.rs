//! No code: the crate only unifies dependency features across latlab's builds (see its Cargo.toml).
