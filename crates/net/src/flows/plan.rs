//! Which real flows a scenario asks for, and whether one emulated path can
//! carry them. The scenario crate's parser and flow expansion
//! (`latlab_scenario::flows`, which the simulator's builder uses too) give
//! the flow ids, start times drawn from the scenario seed, sizes and nodes,
//! so that an emulated run starts the same flows at the same times as a
//! simulated one.
//!
//! What fits: TCP flows (bulk or `size_bytes`) whose congestion controller
//! the kernel has (newreno → Linux "reno", reno, cubic, bbr), and open-loop
//! UDP sources (`kind = "udp"`: cbr, poisson, lrd), sent on the
//! simulator's own schedule (the same `UdpSource`, seeded from the same
//! stream, so packet times and sizes are those of the simulated run), all from one
//! node to one other node (a two-node or chain topology), or in a dumbbell
//! from s{i} to d{i} when every access link is the same and not slower than
//! the core (then the N access links of each side are emulated as one; see
//! [`FlowPlan::notes`]). Everything else is refused with one message
//! naming every key that cannot be emulated.
//!
//! The `tcp` tables are checked first by the scenario crate's own rule
//! (`latlab_scenario::tcp`, the simulator's), so a value the simulator
//! refuses is refused here with the same message, before a kernel socket
//! sees it.
//!
//! ECN (`tcp.ecn`): Linux negotiates it per network namespace
//! (`net.ipv4.tcp_ecn`), not per socket, and every sender shares the client
//! namespace and every sink the server namespace; so the TCP groups must
//! agree, and the plan's [`FlowPlan::tcp_ecn`] is what the flow engine sets
//! in both ([`super::ecn`]).

use std::collections::BTreeSet;
use std::path::Path;

use latlab_link::PacketRef;
use latlab_scenario::ctx::Ctx;
use latlab_scenario::flows::{self, FlowEnds};
use latlab_scenario::scenario::{
    FlowGroup, FlowKind, Range, Scenario, TcpPreset, TcpSpec, Topology, UdpPatternKind,
};
use latlab_scenario::tcp::{rwnd_spec, tcp_config};
use latlab_scenario::timing::Timing;
use latlab_scenario::traffic::UdpSource;
use latlab_scenario::{links, topology};
use serde::Serialize;

/// Bytes of the stamp every UDP datagram starts with: its sequence number
/// and send time, u64 each (written and read in udp.rs). A flow's shorter
/// datagrams carry no stamp.
pub const STAMP_BYTES: usize = 16;

/// What a UDP flow sends: the simulator's source for this flow, before its
/// start, plus the settings shown in the plan.
#[derive(Clone, Debug, Serialize)]
pub struct UdpPlan {
    /// "cbr", "poisson" or "lrd".
    pub pattern: String,
    pub rate_bps: f64,
    /// The payload sizes it draws from (CBR: both the upper end).
    pub min_bytes: u32,
    pub max_bytes: u32,
    #[serde(skip)]
    pub source: UdpSource,
}

/// One flow, as the simulator numbers it.
#[derive(Clone, Debug, Serialize)]
pub struct FlowSpec {
    pub flow_id: u32,
    pub group: String,
    /// "tcp" or "udp" (the flows table's `kind`).
    pub kind: String,
    pub src: String,
    pub dst: String,
    /// The scenario's name for the controller ("newreno", "cubic", ...).
    pub cc: String,
    /// The kernel's name for it (TCP_CONGESTION).
    pub linux_cc: String,
    pub start_ns: u64,
    pub size_bytes: Option<u64>,
    /// TCP_MAXSEG when the scenario sets `mss_bytes`.
    pub mss_bytes: Option<u32>,
    /// The scenario turns ECN on for this TCP flow (`tcp.ecn`); false for UDP.
    pub ecn: bool,
    /// The simulator samples this flow's time series.
    pub sampled: bool,
    /// The source of a UDP flow; None for TCP.
    pub udp: Option<UdpPlan>,
}

impl FlowSpec {
    pub fn is_udp(&self) -> bool {
        self.udp.is_some()
    }
}

/// Everything the traffic engine and its orchestrator need.
#[derive(Clone, Debug, Serialize)]
pub struct FlowPlan {
    pub scenario_name: String,
    pub seed: u64,
    pub duration_ns: u64,
    pub measure_from_ns: u64,
    pub sample_interval_ns: u64,
    /// The emulated path: `latlab-net emulate --client CLIENT --server SERVER`.
    pub client_node: String,
    pub server_node: String,
    pub flows: Vec<FlowSpec>,
    /// ECN on for the TCP flows: `net.ipv4.tcp_ecn` = 1 in both namespaces
    /// (the ends request and accept it), else 0 (neither end uses it), so
    /// that the kernel's flows do what the simulated ones do.
    pub tcp_ecn: bool,
    /// How the emulation departs from the scenario where it is allowed to
    /// (e.g. a dumbbell's access links merged), for run_info.
    pub notes: Vec<String>,
}

/// The emulated path's MTU: `latlab-net emulate`'s default `--mtu`, which
/// `latlab run --emulate` uses.
pub const PATH_MTU_BYTES: u32 = 1500;

/// IPv4 + UDP headers, bytes: what every real datagram carries.
pub const UDP_HEADER_BYTES: u32 = 28;

/// The longest UDP payload that crosses the path unfragmented.
pub const MAX_UDP_PAYLOAD_BYTES: u32 = PATH_MTU_BYTES - UDP_HEADER_BYTES;

/// What TCP_MAXSEG accepts (net/ipv4/tcp.c: TCP_MIN_MSS to MAX_TCP_WINDOW);
/// a value inside the simulator's wider range but outside this one would
/// fail at setsockopt.
pub const KERNEL_MSS_BYTES: std::ops::RangeInclusive<u32> = 88..=32_767;

/// The kernel's congestion controllers (all namespaces share the list).
pub fn available_ccs() -> BTreeSet<String> {
    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
        .map(|s| s.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default()
}

/// The kernel's name for a scenario controller, if Linux has one.
pub fn linux_cc_name(cc: &str) -> Option<&'static str> {
    match cc {
        "newreno" | "reno" => Some("reno"),
        "cubic" => Some("cubic"),
        "bbr" => Some("bbr"),
        _ => None,
    }
}

/// Load `path` and plan its flows.
pub fn load(path: &Path) -> Result<FlowPlan, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    from_text(&text, &path.display().to_string(), &available_ccs())
}

/// `tcp` keys the kernel's TCP cannot be told to follow, as `prefix.key`.
fn unsupported_tcp_keys(t: &TcpSpec, prefix: &str, out: &mut Vec<String>) {
    let mut bad = |key: &str, why: &str| out.push(format!("{prefix}.{key} ({why})"));
    // Linux's own settings: SACK, timestamps and delayed ACKs on.
    if t.sack == Some(false) {
        bad("sack = false", "Linux TCP here always negotiates SACK");
    }
    if t.timestamps == Some(false) {
        bad("timestamps = false", "Linux TCP here always uses timestamps");
    }
    if t.delayed_ack == Some(false) {
        bad(
            "delayed_ack = false",
            "Linux has no per-socket switch for delayed ACKs",
        );
    }
    if let Some(mss) = t.mss_bytes.filter(|m| !KERNEL_MSS_BYTES.contains(m)) {
        bad(
            &format!("mss_bytes = {mss}"),
            &format!(
                "the kernel's TCP_MAXSEG takes {} to {} bytes",
                KERNEL_MSS_BYTES.start(),
                KERNEL_MSS_BYTES.end()
            ),
        );
    }
    let fixed: [(&str, bool); 17] = [
        ("header_bytes", t.header_bytes.is_some()),
        ("initial_window_segments", t.initial_window_segments.is_some()),
        ("recovery", t.recovery.is_some()),
        ("min_rto_ms", t.min_rto_ms.is_some()),
        ("initial_rto_ms", t.initial_rto_ms.is_some()),
        ("delayed_ack_segments", t.delayed_ack_segments.is_some()),
        ("delayed_ack_timeout_ms", t.delayed_ack_timeout_ms.is_some()),
        ("rwnd_bytes", t.rwnd_bytes.is_some()),
        ("pacing", t.pacing.is_some()),
        ("pacing_ss_factor", t.pacing_ss_factor.is_some()),
        ("pacing_ca_factor", t.pacing_ca_factor.is_some()),
        ("idle_restart", t.idle_restart.is_some()),
        ("rescue_retransmission", t.rescue_retransmission.is_some()),
        (
            "rto_restart_on_fast_retransmit",
            t.rto_restart_on_fast_retransmit.is_some(),
        ),
        ("ssthresh_from_pipe", t.ssthresh_from_pipe.is_some()),
        ("rto_backoff_reset_on_ack", t.rto_backoff_reset_on_ack.is_some()),
        ("window_from_pipe", t.window_from_pipe.is_some()),
    ];
    for (key, set) in fixed {
        if set {
            bad(key, "the kernel's TCP has no per-socket knob for it");
        }
    }
}

/// `udp` keys a real datagram on the emulated path cannot follow.
fn unsupported_udp_keys(grp: &FlowGroup, prefix: &str, out: &mut Vec<String>) {
    let Some(u) = &grp.udp else { return };
    if let Some(h) = u.header_bytes.filter(|&h| h != UDP_HEADER_BYTES) {
        out.push(format!(
            "{prefix}.udp.header_bytes = {h} (a real datagram carries {UDP_HEADER_BYTES} bytes of IPv4 + UDP headers)"
        ));
    }
    if u.size_bytes.max() > f64::from(MAX_UDP_PAYLOAD_BYTES) {
        out.push(format!(
            "{prefix}.udp.size_bytes up to {} (the emulated path's {PATH_MTU_BYTES}-byte MTU carries at most \
             {MAX_UDP_PAYLOAD_BYTES} bytes of UDP payload; the kernel would fragment larger datagrams)",
            u.size_bytes.max()
        ));
    }
}

/// As [`load`], from the file's text; `available` is the kernel's list of
/// congestion controllers.
pub fn from_text(text: &str, source: &str, available: &BTreeSet<String>) -> Result<FlowPlan, String> {
    let sc: Scenario = latlab_scenario::parse(text, source).map_err(|e| e.to_string())?;
    if sc.flows.is_empty() {
        return Err(format!("{source}: flows: the scenario has no flows to run"));
    }
    let cx = Ctx { source };
    check_tcp_tables(&cx, &sc)?;
    let unsupported = unsupported_keys(&sc, available);
    if !unsupported.is_empty() {
        return Err(format!("{source}: cannot emulate: {}", unsupported.join("; ")));
    }
    let timing = Timing::of(&cx, &sc).map_err(|e| e.to_string())?;
    let net = topology::expand(&sc.topology, sc.seed, source).map_err(|e| e.to_string())?;
    // The links are built by the emulator; built here too, so that a bad
    // link is reported before anything starts.
    links::build::<PacketRef>(&cx, &net, sc.seed).map_err(|e| e.to_string())?;
    let planned = flows::expand(&cx, &sc, &net).map_err(|e| e.to_string())?;
    let flows: Vec<FlowSpec> = planned
        .into_iter()
        .map(|f| flow_spec(&sc, &net.nodes, f))
        .collect();
    let tcp_ecn = ecn_setting(&sc, source, &flows)?;
    let mut notes = kernel_notes(&sc, &flows);
    let first = &flows[0];
    let pairs: BTreeSet<(&str, &str)> = flows.iter().map(|f| (f.src.as_str(), f.dst.as_str())).collect();
    if pairs.len() > 1 {
        dumbbell_fits(&sc, source, &flows, &pairs)?;
        notes.push(format!(
            "dumbbell: every flow crosses {} -> {}; the {} access links of each side are emulated as one \
             shared link of the same rate, delay and queue",
            first.src,
            first.dst,
            pairs.len()
        ));
    }
    Ok(FlowPlan {
        scenario_name: sc.name.clone(),
        seed: sc.seed,
        duration_ns: timing.duration_ns,
        measure_from_ns: timing.measure_from_ns,
        sample_interval_ns: timing.sample_interval_ns,
        client_node: first.src.clone(),
        server_node: first.dst.clone(),
        tcp_ecn,
        notes,
        flows,
    })
}

/// Every group's `tcp` table (the scenario's, overlaid by the group's) by
/// the simulator's rule, in its order: ranges and combinations the
/// simulator refuses are refused here with the same key path and message.
fn check_tcp_tables(cx: &Ctx, sc: &Scenario) -> Result<(), String> {
    for g in 0..sc.flows.len() {
        let spec = sc.tcp.overlay(&sc.flows[g].tcp);
        let path = format!("flows[{g}].tcp");
        tcp_config(cx, &spec, &path).map_err(|e| e.to_string())?;
        rwnd_spec(cx, &spec, &path).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Whether the TCP flows use ECN. The kernel's switch is per namespace and
/// all senders share one, all sinks the other, so TCP groups that disagree
/// cannot be emulated together: the error names a group of each side.
fn ecn_setting(sc: &Scenario, source: &str, flows: &[FlowSpec]) -> Result<bool, String> {
    let group_of = |on: bool| {
        sc.flows
            .iter()
            .enumerate()
            .find(|(_, grp)| grp.kind == FlowKind::Tcp && sc.tcp.overlay(&grp.tcp).ecn.unwrap_or(false) == on)
    };
    match (group_of(true), group_of(false)) {
        (Some((on, on_grp)), Some((off, off_grp))) => Err(format!(
            "{source}: cannot emulate: flows[{on}] ({:?}) has tcp.ecn = true but flows[{off}] ({:?}) has ECN off; \
             Linux turns ECN on per network namespace (net.ipv4.tcp_ecn), and every emulated sender shares \
             the client namespace (every sink the server namespace), so all TCP groups need the same tcp.ecn",
            on_grp.name, off_grp.name
        )),
        _ => Ok(flows.iter().any(|f| f.ecn)),
    }
}

/// Every key of `sc` an emulated run cannot follow, as `path (why)`.
fn unsupported_keys(sc: &Scenario, available: &BTreeSet<String>) -> Vec<String> {
    let mut unsupported = Vec::new();
    unsupported_tcp_keys(&sc.tcp, "tcp", &mut unsupported);
    for (g, grp) in sc.flows.iter().enumerate() {
        let p = format!("flows[{g}]");
        match grp.kind {
            FlowKind::Tcp => unsupported_tcp_group_keys(grp, &p, available, &mut unsupported),
            // The source's settings are checked by the flow expansion; here
            // only what a real datagram cannot follow.
            FlowKind::Udp => unsupported_udp_keys(grp, &p, &mut unsupported),
            FlowKind::Tfrc | FlowKind::Dflow => unsupported.push(format!(
                "{p}.kind = {:?} (TFRC and DFlow run over real UDP with `latlab media send|recv`, \
                 not in an emulated scenario run)",
                grp.kind.name()
            )),
            FlowKind::Mptcp => unsupported.push(format!(
                "{p}.kind = {:?} (emulated runs carry tcp and udp flows)",
                grp.kind.name()
            )),
        }
    }
    unsupported
}

/// A TCP group's keys the kernel cannot follow: closed-loop users,
/// controller parameters, a controller the kernel lacks, `tcp` knobs.
fn unsupported_tcp_group_keys(grp: &FlowGroup, p: &str, available: &BTreeSet<String>, out: &mut Vec<String>) {
    if grp.closed_loop.is_some() {
        out.push(format!("{p}.closed_loop (closed-loop users)"));
    }
    if !grp.cc_params.is_empty() {
        let keys: Vec<&str> = grp.cc_params.keys().map(String::as_str).collect();
        out.push(format!(
            "{p}.cc_params ({}: the kernel's controllers take no per-socket parameters)",
            keys.join(", ")
        ));
    }
    match linux_cc_name(&grp.cc) {
        Some(name) if available.contains(name) => {}
        Some(name) => out.push(format!(
            "{p}.cc = {:?} (the kernel has no {name:?}; it has {})",
            grp.cc,
            available.iter().cloned().collect::<Vec<_>>().join(", ")
        )),
        None => out.push(format!(
            "{p}.cc = {:?} (not a Linux congestion control; emulated runs support newreno, reno, cubic, bbr)",
            grp.cc
        )),
    }
    unsupported_tcp_keys(&grp.tcp, &format!("{p}.tcp"), out);
}

/// One expanded flow, with its group's settings and the nodes' names.
fn flow_spec(sc: &Scenario, nodes: &[String], f: FlowEnds) -> FlowSpec {
    let grp = &sc.flows[f.group as usize];
    let tcp = sc.tcp.overlay(&grp.tcp);
    let udp = match (f.udp, &grp.udp) {
        (Some(source), Some(spec)) => {
            // As the flow expansion rounds them (CBR sends the upper end).
            let max_bytes = spec.size_bytes.max().round() as u32;
            let min_bytes = if spec.pattern == UdpPatternKind::Cbr {
                max_bytes
            } else {
                spec.size_bytes.min().round() as u32
            };
            Some(UdpPlan {
                pattern: spec.pattern.name().to_string(),
                rate_bps: spec.rate_bps,
                min_bytes,
                max_bytes,
                source,
            })
        }
        _ => None,
    };
    FlowSpec {
        flow_id: f.flow_id,
        group: grp.name.clone(),
        kind: grp.kind.name().to_string(),
        src: nodes[f.src as usize].clone(),
        dst: nodes[f.dst as usize].clone(),
        cc: flows::cc_name(grp),
        linux_cc: if udp.is_some() {
            String::new()
        } else {
            linux_cc_name(&grp.cc).unwrap_or("reno").to_string()
        },
        start_ns: f.start_ns,
        size_bytes: grp.size_bytes,
        mss_bytes: tcp.mss_bytes,
        ecn: udp.is_none() && tcp.ecn.unwrap_or(false),
        sampled: f.sampled,
        udp,
    }
}

/// Where the kernel's flows differ from the simulator's: its own TCP, and
/// UDP datagrams too short for the stamp.
fn kernel_notes(sc: &Scenario, flows: &[FlowSpec]) -> Vec<String> {
    let mut notes = Vec::new();
    let preset = sc.tcp.preset.unwrap_or(TcpPreset::Ns2);
    if preset != TcpPreset::Linux {
        notes.push(format!(
            "tcp.preset = {:?} describes the simulator's TCP; emulated flows use the kernel's TCP",
            preset.name()
        ));
    }
    let unstamped: Vec<String> = flows
        .iter()
        .filter(|f| {
            f.udp
                .as_ref()
                .is_some_and(|u| (u.min_bytes as usize) < STAMP_BYTES)
        })
        .map(|f| f.flow_id.to_string())
        .collect();
    if !unstamped.is_empty() {
        notes.push(format!(
            "UDP flow(s) {}: datagrams shorter than {STAMP_BYTES} bytes cannot carry the sequence number and \
             send time, so owd_mean_ns, owd_max_ns and lost_pkts are left empty for them",
            unstamped.join(", ")
        ));
    }
    notes
}

/// Flows between several node pairs fit one path only in a dumbbell whose
/// access links are all alike and no slower than the core: then the core
/// is the only place flows meet, and merging the access links changes no
/// flow's path delay or bottleneck.
fn dumbbell_fits(
    sc: &Scenario,
    source: &str,
    flows: &[FlowSpec],
    pairs: &BTreeSet<(&str, &str)>,
) -> Result<(), String> {
    let listed = || {
        pairs
            .iter()
            .take(4)
            .map(|(a, b)| format!("{a}->{b}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let Topology::Dumbbell(d) = &sc.topology else {
        return Err(format!(
            "{source}: cannot emulate: flows run between {} node pairs ({}...); the emulator carries one path, \
             so all flows need the same src and dst (or a dumbbell from s{{i}} to d{{i}})",
            pairs.len(),
            listed()
        ));
    };
    let is_host = |name: &str, prefix: char| {
        name.strip_prefix(prefix)
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    };
    if let Some(f) = flows
        .iter()
        .find(|f| !is_host(&f.src, 's') || !is_host(&f.dst, 'd'))
    {
        return Err(format!(
            "{source}: cannot emulate: flow {} runs {} -> {}; in an emulated dumbbell every flow goes from \
             a sender s{{i}} to a receiver d{{j}} across the core",
            f.flow_id, f.src, f.dst
        ));
    }
    let (Range::Fixed(rate), Range::Fixed(_)) = (&d.access_rate_bps, &d.access_delay_ms) else {
        return Err(format!(
            "{source}: cannot emulate: topology.access_rate_bps / access_delay_ms are drawn per flow; \
             per-flow access links are not emulated (the emulator carries one path): give both a single value"
        ));
    };
    if *rate < d.core_rate_bps {
        return Err(format!(
            "{source}: cannot emulate: topology.access_rate_bps = {rate} is below core_rate_bps = {}; \
             per-flow access bottlenecks are not emulated (the access links would be merged into one)",
            d.core_rate_bps
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ccs() -> BTreeSet<String> {
        ["reno", "cubic", "bbr"].iter().map(|s| s.to_string()).collect()
    }

    const PATH: &str = r#"
        name = "p"
        duration_s = 10
        measure_from_s = 2
        [topology]
        kind = "custom"
        nodes = [{ name = "a" }, { name = "r" }, { name = "b" }]
        links = [{ from = "a", to = "r", rate_bps = 1e8, delay_ms = 1 },
                 { from = "r", to = "b", rate_bps = 2e7, delay_ms = 24 }]
        [[flows]]
        name = "bulk"
        src = "a"
        dst = "b"
        count = 3
        cc = "newreno"
        start_s = { at = [0, 1, 2.5] }
        [[flows]]
        name = "short"
        src = "a"
        dst = "b"
        cc = "cubic"
        size_bytes = 100000
    "#;

    #[test]
    fn a_chain_plans_every_flow_as_the_simulator_numbers_them() {
        let p = from_text(PATH, "p.toml", &ccs()).unwrap();
        assert_eq!((p.client_node.as_str(), p.server_node.as_str()), ("a", "b"));
        assert_eq!(
            (p.duration_ns, p.measure_from_ns),
            (10_000_000_000, 2_000_000_000)
        );
        let starts: Vec<u64> = p.flows.iter().map(|f| f.start_ns).collect();
        assert_eq!(starts, [0, 1_000_000_000, 2_500_000_000, 0]);
        assert_eq!(p.flows[0].linux_cc, "reno");
        assert_eq!(p.flows[3].linux_cc, "cubic");
        assert_eq!(p.flows[3].size_bytes, Some(100_000));
        assert_eq!(p.flows[3].flow_id, 3);
        assert!(p.notes.iter().any(|n| n.contains("preset")), "{:?}", p.notes);
    }

    #[test]
    fn unsupported_features_are_named_in_one_error() {
        // A table the simulator accepts (window_from_pipe needs a SACK
        // recovery): its own rule is checked first.
        let text = PATH.replace(
            "cc = \"cubic\"",
            "cc = \"vegas\"\nkind = \"tcp\"\ntcp = { pacing = true, window_from_pipe = true, recovery = \"sack\", sack = true }",
        ) + "\n[[flows]]\nsrc = \"a\"\ndst = \"b\"\nkind = \"tfrc\"\n";
        let e = from_text(&text, "p.toml", &ccs()).unwrap_err();
        for key in [
            "flows[1].cc = \"vegas\"",
            "flows[1].tcp.pacing",
            "flows[1].tcp.window_from_pipe",
            "flows[2].kind = \"tfrc\" (TFRC and DFlow run over real UDP with `latlab media",
        ] {
            assert!(e.contains(key), "{key}: {e}");
        }
        let no_bbr: BTreeSet<String> = ["reno".to_string()].into();
        let e = from_text(&PATH.replace("\"newreno\"", "\"bbr\""), "p.toml", &no_bbr).unwrap_err();
        assert!(e.contains("no \"bbr\""), "{e}");
    }

    /// The controller knobs that emulate ns-3 (CUBIC's TcpCubic departures,
    /// NewReno's per-ACK increase) have no kernel counterpart per socket.
    #[test]
    fn ns3_controller_knobs_are_refused() {
        let text = PATH
            .replace(
                "cc = \"cubic\"",
                "cc = \"cubic\"\ncc_params = { alpha_switch = 0, whole_segments = 1 }",
            )
            .replace(
                "cc = \"newreno\"",
                "cc = \"newreno\"\ncc_params = { per_ack_increase = 1 }",
            );
        let e = from_text(&text, "p.toml", &ccs()).unwrap_err();
        for key in [
            "flows[0].cc_params (per_ack_increase",
            "flows[1].cc_params (alpha_switch, whole_segments",
        ] {
            assert!(e.contains(key), "{key}: {e}");
        }
    }

    /// The simulator's rule for a `tcp` table, its key path and message;
    /// then the kernel's narrower range for TCP_MAXSEG.
    #[test]
    fn a_bad_tcp_table_is_refused_by_the_simulators_rule() {
        let with_tcp = |table: &str| format!("{PATH}\n[tcp]\n{table}\n");
        let e = from_text(&with_tcp("mss_bytes = 0"), "p.toml", &ccs()).unwrap_err();
        assert!(
            e.contains("p.toml: flows[0].tcp: mss_bytes must be between 1 and 1048576, got 0"),
            "{e}"
        );
        let e = from_text(&with_tcp("recovery = \"sack\"\nsack = false"), "p.toml", &ccs()).unwrap_err();
        assert!(e.contains("flows[0].tcp"), "{e}");
        let group = PATH.replace(
            "cc = \"cubic\"",
            "cc = \"cubic\"\ntcp = { initial_window_segments = 0 }",
        );
        let e = from_text(&group, "p.toml", &ccs()).unwrap_err();
        assert!(
            e.contains("flows[1].tcp: initial_window_segments must be between 1"),
            "{e}"
        );
        let e = from_text(&with_tcp("mss_bytes = 40000"), "p.toml", &ccs()).unwrap_err();
        assert!(
            e.contains("tcp.mss_bytes = 40000 (the kernel's TCP_MAXSEG takes 88 to 32767 bytes)"),
            "{e}"
        );
        let ok = from_text(&with_tcp("mss_bytes = 1200"), "p.toml", &ccs()).unwrap();
        assert!(ok.flows.iter().all(|f| f.mss_bytes == Some(1200)));
    }

    #[test]
    fn ecn_is_planned_for_both_namespaces_when_every_tcp_group_agrees() {
        let off = from_text(PATH, "p.toml", &ccs()).unwrap();
        assert!(!off.tcp_ecn && off.flows.iter().all(|f| !f.ecn));
        let on = from_text(&format!("{PATH}\n[tcp]\necn = true\n"), "p.toml", &ccs()).unwrap();
        assert!(on.tcp_ecn && on.flows.iter().all(|f| f.ecn));
        // Per group: both groups on is the same plan.
        let per_group = PATH.replace("cc = \"newreno\"", "cc = \"newreno\"\ntcp = { ecn = true }");
        let both = per_group.replace("cc = \"cubic\"", "cc = \"cubic\"\ntcp = { ecn = true }");
        assert!(from_text(&both, "p.toml", &ccs()).unwrap().tcp_ecn);
        // A UDP group has no say.
        let udp = format!(
            "{PATH}\n[[flows]]\nsrc = \"a\"\ndst = \"b\"\nkind = \"udp\"\n\
             udp = {{ pattern = \"cbr\", rate_bps = 1e6, size_bytes = 1000 }}\n[tcp]\necn = true\n"
        );
        let p = from_text(&udp, "p.toml", &ccs()).unwrap();
        assert!(p.tcp_ecn && !p.flows[4].ecn);
        let e = from_text(&per_group, "p.toml", &ccs()).unwrap_err();
        assert!(
            e.contains("flows[0] (\"bulk\") has tcp.ecn = true but flows[1] (\"short\") has ECN off"),
            "{e}"
        );
        assert!(e.contains("net.ipv4.tcp_ecn"), "{e}");
    }

    #[test]
    fn a_udp_source_is_planned_with_the_simulators_schedule() {
        let text = PATH.to_string()
            + "\n[[flows]]\nname = \"media\"\nsrc = \"a\"\ndst = \"b\"\nkind = \"udp\"\nstart_s = 1\n\
               udp = { pattern = \"poisson\", rate_bps = 1e6, size_bytes = [100, 300] }\n";
        let p = from_text(&text, "p.toml", &ccs()).unwrap();
        let f = &p.flows[4];
        assert_eq!(
            (f.kind.as_str(), f.cc.as_str(), f.linux_cc.as_str()),
            ("udp", "udp", "")
        );
        assert!(p.flows[..4].iter().all(|f| f.kind == "tcp" && f.udp.is_none()));
        let plan = f.udp.as_ref().unwrap();
        assert_eq!((plan.pattern.as_str(), plan.rate_bps), ("poisson", 1e6));
        assert_eq!((plan.min_bytes, plan.max_bytes), (100, 300));
        assert!(
            p.notes.iter().all(|n| !n.contains("shorter than")),
            "{:?}",
            p.notes
        );
        // The same draws as the simulator's source for this flow: a second
        // plan of the same scenario gives the same packet times and sizes,
        // and another seed does not.
        let schedule = |p: &FlowPlan| {
            let mut s = p.flows[4].udp.as_ref().unwrap().source.clone();
            s.start(1_000_000_000);
            let mut out = Vec::new();
            while out.len() < 50 {
                let t = s.next_ns().unwrap();
                while let Some(size) = s.poll(t) {
                    out.push((t, size));
                }
            }
            out
        };
        let again = from_text(&text, "p.toml", &ccs()).unwrap();
        assert_eq!(schedule(&p), schedule(&again));
        let other = from_text(&format!("seed = 9\n{text}"), "p.toml", &ccs()).unwrap();
        assert_ne!(schedule(&p), schedule(&other));
        assert!(schedule(&p)
            .iter()
            .all(|&(t, size)| t >= 1_000_000_000 && (100..=300).contains(&size)));
    }

    #[test]
    fn udp_datagrams_must_fit_the_path_unfragmented_with_real_headers() {
        let udp = |table: &str| {
            PATH.to_string()
                + &format!("\n[[flows]]\nsrc = \"a\"\ndst = \"b\"\nkind = \"udp\"\nudp = {{ {table} }}\n")
        };
        let ok = from_text(
            &udp("pattern = \"cbr\", rate_bps = 1e6, size_bytes = [8, 1472], header_bytes = 28"),
            "p.toml",
            &ccs(),
        )
        .unwrap();
        let f = &ok.flows[4];
        assert_eq!(
            (
                f.udp.as_ref().unwrap().min_bytes,
                f.udp.as_ref().unwrap().max_bytes
            ),
            (1472, 1472),
            "CBR sends the upper end"
        );
        let small = from_text(
            &udp("pattern = \"poisson\", rate_bps = 1e6, size_bytes = [8, 100]"),
            "p.toml",
            &ccs(),
        )
        .unwrap();
        assert!(
            small
                .notes
                .iter()
                .any(|n| n.contains("flow(s) 4: datagrams shorter than 16 bytes")),
            "{:?}",
            small.notes
        );
        let e = from_text(
            &udp("pattern = \"poisson\", rate_bps = 1e6, size_bytes = [100, 1473], header_bytes = 8"),
            "p.toml",
            &ccs(),
        )
        .unwrap_err();
        for key in [
            "flows[2].udp.header_bytes = 8 (a real datagram carries 28 bytes",
            "flows[2].udp.size_bytes up to 1473 (",
        ] {
            assert!(e.contains(key), "{key}: {e}");
        }
    }

    #[test]
    fn flows_between_several_pairs_need_a_uniform_dumbbell() {
        let two_pairs = PATH.replace(
            "src = \"a\"\n        dst = \"b\"\n        cc = \"cubic\"",
            "src = \"b\"\n        dst = \"a\"\n        cc = \"cubic\"",
        );
        let e = from_text(&two_pairs, "p.toml", &ccs()).unwrap_err();
        assert!(e.contains("one path"), "{e}");
        let dumbbell = |access: &str| {
            format!(
                r#"
                duration_s = 5
                [topology]
                kind = "dumbbell"
                pairs = 3
                access_rate_bps = {access}
                access_delay_ms = 2
                core_rate_bps = 2e7
                core_delay_ms = 20
                [[flows]]
                count = 3
                src = "s{{i}}"
                dst = "d{{i}}"
                cc = "cubic"
            "#
            )
        };
        let p = from_text(&dumbbell("1e8"), "d.toml", &ccs()).unwrap();
        assert_eq!((p.client_node.as_str(), p.server_node.as_str()), ("s0", "d0"));
        assert!(p.notes.iter().any(|n| n.contains("access links")));
        let e = from_text(&dumbbell("[1e8, 2e8]"), "d.toml", &ccs()).unwrap_err();
        assert!(e.contains("access_rate_bps"), "{e}");
        let e = from_text(&dumbbell("1e7"), "d.toml", &ccs()).unwrap_err();
        assert!(e.contains("below core_rate_bps"), "{e}");
    }
}
