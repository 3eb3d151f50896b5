//! latlab's discrete-event packet simulator.
//!
//! The engine ([`engine`]) orders events by (time, insertion sequence) on an
//! integer-nanosecond clock; the network ([`network`]) moves packets over
//! links with queue disciplines from `latlab-qdisc`; flows ([`flow`]) drive
//! the sans-IO TCP machines of `latlab-proto`; [`measure`] samples and
//! summarises; [`build`] turns a [`scenario::Scenario`] into a ready
//! [`Simulation`].

pub mod budget;
pub mod build;
pub mod engine;
pub mod fgn;
pub mod flow;
pub mod measure;
pub mod network;
pub mod packet;
pub mod pcap;
mod prefetch;
pub mod rng;
pub mod routing;
pub mod scenario;
pub mod sim;
pub mod tables;
pub mod topology;
pub mod traffic;
pub mod wire;

pub use scenario::{parse, Scenario, ScenarioError};
pub use sim::{Conservation, Simulation};

/// Parse, validate and build a scenario from TOML text.
pub fn load(text: &str, source_name: &str) -> Result<Simulation, ScenarioError> {
    let scenario = scenario::parse(text, source_name)?;
    build::build(&scenario, source_name, None)
}
