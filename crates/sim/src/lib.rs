//! latlab's discrete-event packet simulator.
//!
//! The engine ([`engine`]) orders events by (time, insertion sequence) on an
//! integer-nanosecond clock; the network ([`network`]) moves packets over
//! links with queue disciplines from `latlab-qdisc`; flows ([`flow`]) drive
//! the sans-IO TCP machines of `latlab-proto`; [`measure`] samples and
//! summarises; [`assemble`] turns a [`scenario::Scenario`] into a ready
//! [`Simulation`].
//!
//! The driving contract: parse a scenario (TOML text) and build it into a
//! [`Simulation`]; call `run_until(t_ns)` as often as wanted (virtual time
//! only moves forward, up to the scenario's duration), then read the result
//! tables and the packet-conservation check. Same scenario and seed, same
//! bytes.

pub mod assemble;
pub mod budget;
pub mod engine;
pub mod flow;
pub mod measure;
pub mod network;
pub mod packet;
pub mod pcap;
mod prefetch;
pub mod sim;
pub mod tables;
pub mod wire;

// The scenario crate's modules, under their old paths.
pub use latlab_scenario::{fgn, rng, routing, scenario, topology, traffic};

pub use scenario::{parse, Scenario, ScenarioError};
pub use sim::{Conservation, Simulation};

/// Parse, validate and build a scenario from TOML text.
pub fn load(text: &str, source_name: &str) -> Result<Simulation, ScenarioError> {
    let scenario = scenario::parse(text, source_name)?;
    assemble::build(&scenario, source_name, None)
}
