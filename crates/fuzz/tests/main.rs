//! latlab-fuzz's integration tests, one test binary:
//! `cargo test --release -p latlab-fuzz --test integration`.

mod smoke;
