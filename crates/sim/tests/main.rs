//! latlab-sim's integration tests, one test binary (one link step instead of
//! one per file): `cargo test --release -p latlab-sim --test integration
//! [MODULE::][NAME]`. Each file is a module; `common` holds shared helpers.

mod common;

mod aqm;
mod bbr;
mod controllers;
mod ecn;
mod errors;
mod fuzz_regressions;
mod golden;
mod mptcp;
mod pacing;
mod pcap;
mod properties;
mod receiver_window;
mod tfrc;
mod traffic;
mod validation;
mod wireless;
