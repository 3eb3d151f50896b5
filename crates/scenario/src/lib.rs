//! latlab's scenario, parsed and expanded once.
//!
//! [`scenario`] is the TOML schema and its strict parser (every error names
//! the key path); [`topology`] expands a `[topology]` into a
//! [`topology::NetPlan`] of nodes, links and shared media; [`routing`]
//! computes shortest paths over it; [`links`] builds the plan's link
//! services and shared media (crates/link) for a driver; [`flows`] expands
//! the flow groups into numbered flows with their start times and UDP
//! sources ([`traffic`], [`fgn`]); [`tcp`] turns a `tcp` table into the
//! proto crate's checked TCP configuration; [`choice`] holds the keys with
//! a fixed set of values; [`rng`] derives each component's random
//! stream from the scenario seed. No engine and no I/O: the simulator
//! (`latlab-sim`) and the emulator (`latlab-net`) both build from this.

pub mod choice;
pub mod ctx;
pub mod fgn;
pub mod flows;
pub mod links;
mod queues;
pub mod rng;
pub mod routing;
pub mod scenario;
pub mod tcp;
pub mod timing;
pub mod topology;
pub mod traffic;

pub use scenario::{parse, Scenario, ScenarioError};
