//! `latlab-net flows`'s command line and its validated options.

use std::net::Ipv4Addr;
use std::path::PathBuf;

use clap::Args;

pub const FLOWS_EXAMPLE: &str = "Examples:\n  \
latlab-net flows scenario.toml --plan            # the flows and the path they need, as JSON\n  \
latlab-net flows scenario.toml --client-ns NS1 --server-ns NS2 --out run\n\n\
The namespaces are usually those of 'latlab-net emulate --stay' (its ready line names them);\n\
'latlab run SCENARIO --emulate' does all of it and writes the Parquet tables.";

#[derive(Debug, Args)]
pub struct FlowsArgs {
    /// A latlab scenario (TOML) whose flows are TCP.
    #[arg(value_name = "PATH.toml")]
    pub scenario: PathBuf,
    /// Print the plan (flows, start times, the path's two nodes) as JSON and
    /// exit; exit code 2 with the reason if the scenario cannot be emulated.
    #[arg(long)]
    pub plan: bool,
    /// The senders' network namespace (`ip netns` name).
    #[arg(long, value_name = "NS", required_unless_present = "plan")]
    pub client_ns: Option<String>,
    /// The sinks' network namespace.
    #[arg(long, value_name = "NS", required_unless_present = "plan")]
    pub server_ns: Option<String>,
    /// The sinks' address inside --server-ns [default: the emulator's, 10.77.1.1].
    #[arg(long, value_name = "IPV4")]
    pub server_addr: Option<Ipv4Addr>,
    /// Flow i's sink listens on this port + i.
    #[arg(long, default_value_t = 20_000, value_name = "PORT")]
    pub base_port: u16,
    /// Write flows.csv, flow_samples.csv and flows_summary.json here.
    #[arg(long, value_name = "DIR", required_unless_present = "plan")]
    pub out: Option<PathBuf>,
    /// Print nothing but errors.
    #[arg(long, short)]
    pub quiet: bool,
}

/// Validated options of a run (not --plan).
#[derive(Debug, Clone, PartialEq)]
pub struct FlowsOptions {
    pub scenario: PathBuf,
    pub client_ns: Option<String>,
    pub server_ns: Option<String>,
    pub server_addr: Ipv4Addr,
    pub base_port: u16,
    pub out: PathBuf,
    pub quiet: bool,
}

impl FlowsArgs {
    pub fn options(&self) -> Result<FlowsOptions, String> {
        if self.base_port == 0 {
            return Err("--base-port must be at least 1".into());
        }
        Ok(FlowsOptions {
            scenario: self.scenario.clone(),
            client_ns: self.client_ns.clone(),
            server_ns: self.server_ns.clone(),
            server_addr: self.server_addr.unwrap_or_else(super::default_server_addr),
            base_port: self.base_port,
            out: self.out.clone().ok_or("--out is required to run flows")?,
            quiet: self.quiet,
        })
    }
}
