//! `latlab-net emulate`'s command line and its validated options.

use std::path::PathBuf;

use clap::Args;

pub const EMULATE_EXAMPLE: &str = "Examples:\n  \
latlab-net emulate scenarios/emulate-20mbit-50ms.toml --out emu -- curl http://$SERVER/\n  \
latlab-net emulate scenarios/emulate-20mbit-50ms.toml --stay   # until Ctrl-C or SIGTERM\n\n\
The command runs in the client namespace with LATLAB_EMU_SERVER_ADDR (10.77.1.1),\n\
LATLAB_EMU_CLIENT_ADDR (10.77.0.1), LATLAB_EMU_CLIENT_NS and LATLAB_EMU_SERVER_NS set;\n\
run a server with 'ip netns exec $LATLAB_EMU_SERVER_NS ...'.\n\n\
Router mode: the link between two interfaces of an existing router namespace\n  \
latlab-net emulate path.toml --router-netns R --ingress to-client --egress to-server --stay\n\
forwards what arrives on --ingress through the uplink and what arrives on --egress\n\
through the downlink (IPv4; policy rules into two TUN devices, removed on exit).\n\
The namespace must forward (net.ipv4.ip_forward = 1).";

#[derive(Debug, Args)]
pub struct EmulateArgs {
    /// A latlab scenario (TOML): the path's links, queues, rates and loss
    /// are its links on the route between --client and --server.
    #[arg(value_name = "PATH.toml")]
    pub scenario: PathBuf,
    /// The client's node in the scenario [default: the first node].
    #[arg(long, value_name = "NODE")]
    pub client: Option<String>,
    /// The server's node [default: the last node].
    #[arg(long, value_name = "NODE")]
    pub server: Option<String>,
    /// Router mode: put the link between two interfaces of this existing
    /// namespace (a name from `ip netns list`; without it, the current
    /// namespace) instead of making a client and a server namespace.
    #[arg(long, value_name = "NS", requires_all = ["ingress", "egress"])]
    pub router_netns: Option<String>,
    /// Router mode: the interface on the client's side; what arrives on it
    /// takes the uplink (the scenario's route --client → --server).
    #[arg(long, value_name = "IFACE", requires = "egress")]
    pub ingress: Option<String>,
    /// Router mode: the interface on the server's side; what arrives on it
    /// takes the downlink.
    #[arg(long, value_name = "IFACE", requires = "ingress")]
    pub egress: Option<String>,
    /// Write link_samples.csv, links.csv, summary.json (and captures,
    /// packets.csv) here.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Capture every emulated link's packets to `<from>_to_<to>.pcap` in --out.
    #[arg(long, requires = "out")]
    pub pcap: bool,
    /// Write one row per packet to packets.csv in --out (costs CPU at high
    /// rates).
    #[arg(long, requires = "out")]
    pub packet_log: bool,
    /// Without COMMAND: stay up until SIGINT/SIGTERM (or --duration-s).
    #[arg(long)]
    pub stay: bool,
    /// Stop after this long, s (also ends COMMAND).
    #[arg(long, value_name = "S")]
    pub duration_s: Option<f64>,
    /// MTU of the two TUN devices.
    #[arg(long, default_value_t = 1500, value_name = "BYTES",
          value_parser = clap::value_parser!(u32).range(576..=65_535))]
    pub mtu: u32,
    /// Longest packet forwarded; longer ones are dropped and counted
    /// [default: the MTU].
    #[arg(long, value_name = "BYTES",
          value_parser = clap::value_parser!(u32).range(20..=65_535))]
    pub max_packet_bytes: Option<u32>,
    /// Most packets held at once (queued or propagating); the memory bound.
    #[arg(long, default_value_t = 65_536, value_name = "N",
          value_parser = clap::value_parser!(u32).range(16..=4_000_000))]
    pub max_buffered_packets: u32,
    /// Run the event loop at this SCHED_FIFO real-time priority (1-99), so
    /// that other busy processes on the machine do not delay packets. The
    /// kernel's RT throttling still leaves 5% of a core to others.
    #[arg(long, value_name = "PRIO", value_parser = clap::value_parser!(i32).range(1..=99))]
    pub realtime: Option<i32>,
    /// Stop sleeping this long before a packet is due and poll without
    /// sleeping instead (covers the timer's wake-up latency). 0 never
    /// spins: with --realtime the wake-up is prompt and spinning at high
    /// rates only burns the RT budget.
    #[arg(long, default_value_t = crate::clock::SPIN_NS as f64 / 1e3, value_name = "US")]
    pub spin_us: f64,
    /// Print nothing but errors (the summary still goes to --out).
    #[arg(long, short)]
    pub quiet: bool,
    /// The command to run in the client namespace, or in router mode where
    /// the emulator runs (after `--`, or as the
    /// first argument that is not an option: everything from there on is
    /// the command's).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// Router mode: where the emulated link goes.
#[derive(Debug, Clone, PartialEq)]
pub struct RouterOptions {
    /// None: the emulator's own namespace.
    pub netns: Option<String>,
    pub ingress: String,
    pub egress: String,
}

/// Validated options.
#[derive(Debug, Clone, PartialEq)]
pub struct EmulateOptions {
    /// Some: router mode.
    pub router: Option<RouterOptions>,
    pub scenario: PathBuf,
    pub client: Option<String>,
    pub server: Option<String>,
    pub out: Option<PathBuf>,
    pub pcap: bool,
    pub packet_log: bool,
    pub duration_ns: Option<u64>,
    pub mtu: u32,
    pub max_packet_bytes: u32,
    pub max_buffered_packets: u32,
    pub realtime: Option<i32>,
    pub spin_ns: u64,
    pub quiet: bool,
    /// Empty with --stay.
    pub command: Vec<String>,
}

impl EmulateArgs {
    pub fn options(&self) -> Result<EmulateOptions, String> {
        match (self.stay, self.command.is_empty()) {
            (true, false) => return Err("--stay and a COMMAND exclude each other".into()),
            (false, true) if self.duration_s.is_none() => {
                return Err("give a COMMAND after '--', or --stay (or --duration-s)".into())
            }
            _ => {}
        }
        let duration_ns = match self.duration_s {
            None => None,
            Some(s) if s.is_finite() && s > 0.0 && s <= 1e9 => Some((s * 1e9).round() as u64),
            Some(s) => {
                return Err(format!(
                    "--duration-s must be a positive number of seconds, got {s}"
                ))
            }
        };
        let max_packet_bytes = self.max_packet_bytes.unwrap_or(self.mtu);
        if !(self.spin_us.is_finite() && (0.0..=1e6).contains(&self.spin_us)) {
            return Err(format!(
                "--spin-us must be between 0 and 1e6, got {}",
                self.spin_us
            ));
        }
        let router = match (&self.ingress, &self.egress) {
            (Some(ingress), Some(egress)) => {
                for (flag, dev) in [("--ingress", ingress), ("--egress", egress)] {
                    if dev.is_empty() || dev.len() > super::tun::MAX_NAME_LEN || dev.contains(['/', ' ']) {
                        return Err(format!("{flag} {dev:?} is not an interface name"));
                    }
                }
                if ingress == egress {
                    return Err(format!(
                        "--ingress and --egress are the same interface ({ingress:?}); the link needs two sides"
                    ));
                }
                Some(RouterOptions {
                    netns: self.router_netns.clone(),
                    ingress: ingress.clone(),
                    egress: egress.clone(),
                })
            }
            _ => None,
        };
        Ok(EmulateOptions {
            router,
            scenario: self.scenario.clone(),
            client: self.client.clone(),
            server: self.server.clone(),
            out: self.out.clone(),
            pcap: self.pcap,
            packet_log: self.packet_log,
            duration_ns,
            mtu: self.mtu,
            max_packet_bytes,
            max_buffered_packets: self.max_buffered_packets,
            realtime: self.realtime,
            spin_ns: (self.spin_us * 1e3).round() as u64,
            quiet: self.quiet,
            command: self.command.clone(),
        })
    }
}
