//! latlab-fuzz's integration tests, one test binary:
//! `cargo test --release -p latlab-fuzz --test integration`. The fuzz crate
//! is the one that depends on both the simulator and the emulator
//! (latlab-net does not depend on latlab-sim), so the test that drives the
//! two on the same link lives here.

mod flow_plan;
mod link_differential;
mod smoke;
