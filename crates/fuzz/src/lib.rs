//! latlab's fuzzer: a stable-toolchain mutation fuzzer with a seeded RNG,
//! so a run is reproducible and can sit in CI (no nightly, no libFuzzer).
//!
//! The driving contract: a run is (target, seed, number of inputs). Input `i`
//! of a run with seed `s` is a pure function of `(s, i)` and the corpus
//! ([`mutate::input_rng`]), so a crash is replayed from its index alone, and a
//! supervisor can restart a worker after the crashing input. A target
//! ([`targets::exec`]) takes one input and returns what became of it
//! ([`targets::Outcome`]: rejected with an error value, built, run); a
//! broken invariant panics, and a panic, an abort or a hang is a finding,
//! saved and shrunk.
//!
//! - [`corpus`]: the shipped scenarios and the test suite's random ones.
//! - [`mutate`]: grammar-aware mutations of the TOML value tree, and raw
//!   byte mutations.
//! - [`targets`]: what one input is run against (the scenario core, the
//!   media wire parser) and the invariants checked on it.
//! - [`driver`]: the in-process loop (panics caught per input) and the
//!   supervisor that also catches aborts and hangs in a worker process.

pub mod corpus;
pub mod driver;
pub mod mutate;
pub mod targets;
