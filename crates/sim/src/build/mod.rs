//! Build a [`Simulation`] from a parsed [`Scenario`], validating everything a
//! user can get wrong and naming the key path in each error.

use crate::budget::{self, MemoryLimit};
use crate::fgn;
use crate::flow::{ClosedLoop, Flow, TcpFlow, TfrcFlow, TimerSlot, Transport, UdpFlow};
use crate::network::{Link, LinkQueue, LinkRate, LinkService, Node, Service};
use crate::pcap::PcapWriter;
use crate::rng::{stream, stream_seed, Stream};
use crate::routing::{RouteTable, Router};
use crate::scenario::FlowGroup;
use crate::scenario::{
    CoDelSpec, DropTailSpec, EdgePacerSpec, FqCoDelSpec, PieSpec, QueueSpec, RedSpec, Scenario,
    ScenarioError, StartDist, StartSpec, TcpSpec,
};
use crate::sim::Simulation;
use crate::topology::{self, LinkPlan};
use crate::traffic::{FileSize, UdpPattern, UdpSource, UserDraws};
use latlab_proto::cc::{CcSpec, CcSpecError};
use latlab_proto::tcp::{
    DelayedAck, Pacing, Recovery, RwndSpec, RwndSpecError, TcpConfig, TcpReceiver, TcpSender,
};
use latlab_proto::tfrc::{DflowParams, TfrcConfig, TfrcMode, TfrcReceiver, TfrcSender};
use latlab_qdisc::{
    CoDel, CoDelParams, DropTail, EdgePacer, EdgePacerParams, FqCoDel, FqCoDelParams, Limit, Pie, PieParams,
    Qdisc, QueuedPacket, Red, RedParams, FQ_CODEL_MAX_FLOWS,
};
use rand::Rng;
use rand_distr::{Distribution, Exp};
use std::collections::BTreeMap;
use std::path::Path;

/// Most flows a scenario may have, over all groups: a guard against typos
/// such as `count = 999999999`, which would otherwise exhaust memory while
/// start times and flows are made. Not a memory estimate.
pub const MAX_FLOWS: u64 = 1_000_000;

/// Flows whose time series are kept when the scenario does not say.
const DEFAULT_MAX_SAMPLED_FLOWS: u32 = 100;
/// Topologies with at most this many links sample them all by default;
/// larger ones sample only their key (core and edge) links.
const SAMPLE_ALL_LINKS_UP_TO: usize = 64;

struct Ctx<'a> {
    source: &'a str,
}

impl Ctx<'_> {
    fn err(&self, path: impl Into<String>, message: impl Into<String>) -> ScenarioError {
        ScenarioError {
            source_name: self.source.to_string(),
            path: path.into(),
            message: message.into(),
        }
    }

    /// Milliseconds (finite, ≥ 0) to integer nanoseconds.
    fn ms_to_ns(&self, ms: f64, path: &str) -> Result<u64, ScenarioError> {
        self.s_to_ns(ms / 1e3, path).map_err(|mut e| {
            e.message = e.message.replace("seconds", "milliseconds");
            e
        })
    }

    fn s_to_ns(&self, s: f64, path: &str) -> Result<u64, ScenarioError> {
        if !s.is_finite() || s < 0.0 {
            return Err(self.err(
                path,
                format!("expected a non-negative number of seconds, got {s}"),
            ));
        }
        if s > 1e9 {
            return Err(self.err(path, format!("{s} seconds is too long (at most 1e9)")));
        }
        Ok((s * 1e9).round() as u64)
    }
}

/// Build the simulation. `outdir` receives pcap files (the current directory
/// if None). A scenario too large for the memory this machine has available
/// is refused (see [`crate::budget`]).
pub fn build(sc: &Scenario, source: &str, outdir: Option<&Path>) -> Result<Simulation, ScenarioError> {
    build_with_limit(sc, source, outdir, MemoryLimit::Machine)
}

/// [`build`] with an explicit memory limit.
pub fn build_with_limit(
    sc: &Scenario,
    source: &str,
    outdir: Option<&Path>,
    limit: MemoryLimit,
) -> Result<Simulation, ScenarioError> {
    let footprint = budget::check(sc, source, limit)?;
    let cx = Ctx { source };
    let duration_ns = cx.s_to_ns(sc.duration_s, "duration_s")?;
    if duration_ns == 0 {
        return Err(cx.err("duration_s", "expected a positive duration in seconds"));
    }
    let sample_interval_ns = cx.ms_to_ns(sc.sample_interval_ms, "sample_interval_ms")?;
    let measure_from_ns = cx.s_to_ns(sc.measure_from_s, "measure_from_s")?;
    if measure_from_ns >= duration_ns {
        return Err(cx.err(
            "measure_from_s",
            format!("must be less than duration_s ({})", sc.duration_s),
        ));
    }

    // Network.
    let plan = topology::expand(&sc.topology, sc.seed, source)?;
    let nodes: Vec<Node> = plan.nodes.iter().map(|n| Node { name: n.clone() }).collect();
    let node_index: BTreeMap<&str, u32> = plan
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.as_str(), i as u32))
        .collect();
    let mut links = Vec::with_capacity(plan.links.len());
    let mut rates = links::Rates::new(source, sc.seed);
    let mut link_names = BTreeMap::new();
    let sample_all = plan.links.len() <= SAMPLE_ALL_LINKS_UP_TO;
    for (i, lp) in plan.links.iter().enumerate() {
        let mut name = format!("{}->{}", plan.nodes[lp.src as usize], plan.nodes[lp.dst as usize]);
        if link_names.contains_key(&name) {
            let mut k = 2;
            while link_names.contains_key(&format!("{name}#{k}")) {
                k += 1;
            }
            name = format!("{name}#{k}");
        }
        link_names.insert(name.clone(), i as u32);
        links.push(make_link(
            &cx, lp, name, sc.seed, i as u64, sample_all, &mut rates,
        )?);
    }
    let media = links::make_media(&cx, &plan, &mut links, &mut rates, sc.seed)?;
    let series = budget::Series {
        sample_interval_ns,
        duration_ns,
        sampled_links: links.iter().filter(|l| l.sampled).count() as u64,
        sampled_flows: footprint.flows.min(u64::from(
            sc.outputs.max_sampled_flows.unwrap_or(DEFAULT_MAX_SAMPLED_FLOWS),
        )),
    };
    budget::check_series(&series, footprint.bytes(), source, limit)?;
    for (i, pname) in sc.outputs.pcap.iter().enumerate() {
        let Some(&li) = link_names.get(pname) else {
            return Err(cx.err(
                format!("outputs.pcap[{i}]"),
                format!(
                    "unknown link {pname:?}; links are named \"from->to\" by node names, e.g. {:?}",
                    links.first().map(|l: &Link| l.name.as_str()).unwrap_or("a->b")
                ),
            ));
        };
        let dir = outdir.unwrap_or(Path::new("."));
        let file = dir.join(format!("{}.pcap", pname.replace("->", "_to_").replace('#', "_")));
        let writer = PcapWriter::create(&file).map_err(|e| {
            cx.err(
                format!("outputs.pcap[{i}]"),
                format!("cannot create {}: {e}", file.display()),
            )
        })?;
        links[li as usize].pcap = Some(Box::new(writer));
    }

    // Routing, only for the (source, destination) pairs flows use.
    let graph_links: Vec<(u32, u32, u64)> = links.iter().map(|l| (l.src, l.dst, l.delay_ns)).collect();
    let mut router = Router::new(nodes.len(), &graph_links);
    let mut route = |src: u32, dst: u32| router.route(src, dst);
    let mut routes = RouteTable::default();

    // Flows.
    let max_sampled = sc.outputs.max_sampled_flows.unwrap_or(DEFAULT_MAX_SAMPLED_FLOWS);
    let mut flows = Vec::new();
    let mut group_names = Vec::new();
    // Checked over all groups before any group makes its flows.
    let mut total_flows: u64 = 0;
    for (g, grp) in sc.flows.iter().enumerate() {
        total_flows += grp.count as u64;
        if total_flows > MAX_FLOWS {
            return Err(cx.err(
                format!("flows[{g}].count"),
                format!(
                    "{total_flows} flows is too many; expected at most {MAX_FLOWS} flows over all groups"
                ),
            ));
        }
    }
    for (g, grp) in sc.flows.iter().enumerate() {
        let p = format!("flows[{g}]");
        if grp.count == 0 {
            return Err(cx.err(format!("{p}.count"), "expected at least 1 flow"));
        }
        let tcp_spec = sc.tcp.overlay(&grp.tcp);
        let cfg = tcp_config(&cx, &tcp_spec, &format!("{p}.tcp"))?;
        let rwnd = rwnd_spec(&cx, &tcp_spec, &format!("{p}.tcp"))?;
        let kind = group_kind(&cx, grp, &p, sc.duration_s)?;
        let mptcp_group = match &kind {
            GroupKind::Mptcp { .. } => Some(mptcp::mptcp_group(&cx, grp, &p, &cfg)?),
            _ => None,
        };
        if grp.size_bytes == Some(0) {
            return Err(cx.err(
                format!("{p}.size_bytes"),
                "expected a positive size in bytes (omit it for a long-lived flow)",
            ));
        }
        let starts = start_times(
            &cx,
            &grp.start_s,
            grp.count,
            sc.seed,
            g as u64,
            &format!("{p}.start_s"),
        )?;
        group_names.push(grp.name.clone());
        for i in 0..grp.count {
            let index = grp.first_index as u64 + i as u64;
            let resolve = |pattern: &str, key: &str| -> Result<u32, ScenarioError> {
                let name = pattern.replace("{i}", &index.to_string());
                node_index.get(name.as_str()).copied().ok_or_else(|| {
                    let how = if pattern.contains("{i}") {
                        format!(" (from {pattern:?} with i = {index})")
                    } else {
                        String::new()
                    };
                    cx.err(
                        format!("{p}.{key}"),
                        format!("unknown node {name:?}{how}; expected a node of the topology"),
                    )
                })
            };
            let (src, dst) = (resolve(&grp.src, "src")?, resolve(&grp.dst, "dst")?);
            if src == dst {
                return Err(cx.err(format!("{p}.dst"), "source and destination are the same node"));
            }
            let unroutable = |a: u32, b: u32| {
                cx.err(
                    p.clone(),
                    format!(
                        "no route from {:?} to {:?}; the topology does not connect them",
                        nodes[a as usize].name, nodes[b as usize].name
                    ),
                )
            };
            let flow_id = flows.len() as u32;
            if let (GroupKind::Mptcp { cc }, Some(mg)) = (&kind, &mptcp_group) {
                let m = mptcp::mptcp_flow(
                    &cx,
                    mg,
                    &p,
                    &cfg,
                    cc,
                    &rwnd,
                    grp.size_bytes,
                    (src, dst),
                    &resolve,
                    &nodes,
                    &mut route,
                    &mut routes,
                )?;
                // The flow's own routes are its first path's (subflow
                // packets carry their path's routes).
                let (fwd_route, rev_route) = (m.paths[0].fwd_route, m.paths[0].rev_route);
                flows.push(Flow {
                    group: g as u32,
                    src,
                    dst,
                    cc_name: grp.cc.clone(),
                    start_ns: starts[i as usize],
                    size_bytes: grp.size_bytes,
                    transport: Transport::Mptcp(m),
                    fwd_route,
                    rev_route,
                    header_bytes: cfg.header_bytes,
                    conn: 0,
                    started: false,
                    window_start_delivered: 0,
                    window_start_sent: 0,
                    sampled: flow_id < max_sampled,
                });
                continue;
            }
            let fwd = route(src, dst).ok_or_else(|| unroutable(src, dst))?;
            let (transport, header_bytes, rev_path) = match &kind {
                GroupKind::Tcp {
                    cc: spec,
                    closed_loop,
                } => {
                    let mut cc = spec.build(cfg.mss_bytes as u64);
                    cc.set_seed(stream_seed(sc.seed, Stream::Controller, flow_id as u64));
                    let closed_loop = closed_loop.as_ref().map(|(size, think_mean_s)| ClosedLoop {
                        draws: UserDraws {
                            size: *size,
                            think_mean_s: *think_mean_s,
                            rng: stream(sc.seed, Stream::Users, flow_id as u64),
                        },
                        cfg: cfg.clone(),
                        cc: spec.clone(),
                        rwnd: rwnd.clone(),
                        transfers: Vec::new(),
                        current_start_ns: 0,
                        current_size_bytes: 0,
                        past_bytes_delivered: 0,
                        past_sender: Default::default(),
                    });
                    // A closed-loop user's first file is drawn at its start.
                    let app_bytes = match &closed_loop {
                        Some(_) => Some(1),
                        None => grp.size_bytes,
                    };
                    let tcp = TcpFlow {
                        sender: TcpSender::new(cfg.clone(), cc, app_bytes),
                        receiver: TcpReceiver::new(cfg.clone(), rwnd.build(&cfg)),
                        sender_timer: TimerSlot::default(),
                        receiver_timer: TimerSlot::default(),
                        closed_loop,
                    };
                    let rev = route(dst, src).ok_or_else(|| unroutable(dst, src))?;
                    (Transport::Tcp(tcp), cfg.header_bytes, rev)
                }
                GroupKind::Udp {
                    pattern,
                    lrd,
                    header_bytes,
                } => {
                    let mut pattern = pattern.clone();
                    if let (
                        Some(l),
                        UdpPattern::PerSlot {
                            bytes_per_slot,
                            slot_ns,
                            ..
                        },
                    ) = (lrd, &mut pattern)
                    {
                        // Its own stream, so the slot draw never shifts the packet-size draws.
                        let mut rng = stream(sc.seed, Stream::UdpSource, (1 << 32) | flow_id as u64);
                        *bytes_per_slot = fgn::norros_bytes_per_slot(
                            l.rate_bps,
                            *slot_ns,
                            l.hurst,
                            l.variance_coef,
                            l.n_slots,
                            &mut rng,
                        )
                        .map_err(|e| cx.err(format!("{p}.udp"), e.to_string()))?;
                    }
                    let source =
                        UdpSource::new(pattern, stream(sc.seed, Stream::UdpSource, flow_id as u64), 0);
                    let udp = UdpFlow {
                        source,
                        timer: TimerSlot::default(),
                        received_pkts: 0,
                        received_bytes: 0,
                        owd_sum_ns: 0,
                        owd_max_ns: 0,
                    };
                    (Transport::Udp(udp), *header_bytes, Vec::new())
                }
                GroupKind::Tfrc {
                    cfg,
                    header_bytes,
                    receiver_clock_offset_ns,
                } => {
                    let tfrc = TfrcFlow {
                        // Replaced at the flow's start (FlowStart), so the
                        // sender's clock starts there.
                        sender: TfrcSender::new(*cfg, 0),
                        receiver: TfrcReceiver::new(*cfg),
                        sender_timer: TimerSlot::default(),
                        receiver_timer: TimerSlot::default(),
                        receiver_clock_offset_ns: *receiver_clock_offset_ns,
                    };
                    let rev = route(dst, src).ok_or_else(|| unroutable(dst, src))?;
                    (Transport::Tfrc(tfrc), *header_bytes, rev)
                }
                GroupKind::Mptcp { .. } => unreachable!("MPTCP groups are built above"),
            };
            flows.push(Flow {
                group: g as u32,
                src,
                dst,
                cc_name: match kind {
                    GroupKind::Udp { .. } => "udp".to_string(),
                    // "tfrc" or "dflow": the rate law is the kind.
                    GroupKind::Tfrc { .. } => grp.kind.clone(),
                    GroupKind::Tcp { .. } | GroupKind::Mptcp { .. } => grp.cc.clone(),
                },
                start_ns: starts[i as usize],
                size_bytes: grp.size_bytes,
                transport,
                fwd_route: routes.push(&fwd),
                rev_route: routes.push(&rev_path),
                header_bytes,
                conn: 0,
                started: false,
                window_start_delivered: 0,
                window_start_sent: 0,
                sampled: flow_id < max_sampled,
            });
        }
    }
    Ok(Simulation::new(
        sc.name.clone(),
        sc.seed,
        duration_ns,
        sample_interval_ns,
        measure_from_ns,
        nodes,
        links,
        flows,
        routes,
        group_names,
        media,
    ))
}

fn make_link(
    cx: &Ctx,
    lp: &LinkPlan,
    name: String,
    seed: u64,
    index: u64,
    sample_all: bool,
    rates: &mut links::Rates,
) -> Result<Link, ScenarioError> {
    let delay_ns = cx.ms_to_ns(lp.delay_ms, &lp.key_path.replace("queue", "delay_ms"))?;
    // A member of a shared medium: the medium builds its queue and rate
    // (links::make_media); the link's own queue stays empty.
    let (service, rate_bps) = if lp.medium.is_some() {
        (Service::Fixed, 1)
    } else {
        links::link_service(cx, lp, rates, index)?
    };
    // A medium member's own queue is a placeholder that never holds a
    // packet; its time series are always kept (they are the member's).
    let (qdisc, sampled) = if lp.medium.is_some() {
        (LinkQueue::DropTail(DropTail::new(Limit::Packets(1))), true)
    } else {
        let q = make_link_queue(
            cx,
            &lp.queue,
            &lp.key_path,
            rate_bps,
            stream_seed(seed, Stream::Qdisc, index),
        )?;
        (q, sample_all || lp.key_link)
    };
    Ok(Link {
        svc: LinkService::new(
            LinkRate::Fixed { rate_bps },
            service,
            delay_ns,
            qdisc,
            lp.loss,
            stream(seed, Stream::LinkLoss, index),
        ),
        name,
        src: lp.src,
        dst: lp.dst,
        access: links::access_counters(),
        window_start_departures_bytes: 0,
        pcap: None,
        trace: None,
        sampled,
    })
}

/// Validate a scenario completely (everything `build` checks) without
/// creating output files.
pub fn validate(sc: &Scenario, source: &str) -> Result<(), ScenarioError> {
    let mut quiet = sc.clone();
    quiet.outputs.pcap.clear();
    // pcap files are not created here; their link names are checked against
    // the built topology instead.
    let sim = build(&quiet, source, None)?;
    for (i, name) in sc.outputs.pcap.iter().enumerate() {
        if !sim.links.iter().any(|l| &l.name == name) {
            return Err(ScenarioError {
                source_name: source.to_string(),
                path: format!("outputs.pcap[{i}]"),
                message: format!("unknown link {name:?}; links are named \"from->to\" by node names"),
            });
        }
    }
    Ok(())
}

mod groups;
mod links;
pub mod mptcp;
mod queues;
mod tcp;

use groups::{group_kind, start_times, GroupKind};
use queues::{make_link_queue, make_qdisc};
use tcp::{rwnd_spec, tcp_config};
