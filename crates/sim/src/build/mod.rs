//! Build a [`Simulation`] from a parsed [`Scenario`], validating everything a
//! user can get wrong and naming the key path in each error.

use crate::budget::{self, MemoryLimit};
use crate::flow::{ClosedLoop, Flow, TcpFlow, TfrcFlow, TimerSlot, Transport, UdpFlow};
use crate::network::{AccessCounters, Link, LinkService, Node, SharedMedium};
use crate::packet::PacketRef;
use crate::pcap::PcapWriter;
use crate::rng::{stream, stream_seed, Stream};
use crate::routing::{RouteTable, Router};
use crate::scenario::FlowGroup;
use crate::scenario::{FlowKind, Scenario, ScenarioError, TcpSpec};
use crate::sim::Simulation;
use crate::topology::{self, LinkPlan};
use crate::traffic::{FileSize, UserDraws};
use latlab_proto::cc::{CcSpec, CcSpecError};
use latlab_proto::tcp::{
    DelayedAck, Pacing, Recovery, RwndSpec, RwndSpecError, TcpConfig, TcpReceiver, TcpSender,
};
use latlab_proto::tfrc::{DflowParams, TfrcConfig, TfrcMode, TfrcReceiver, TfrcSender};
use latlab_scenario::ctx::Ctx;
use latlab_scenario::flows;
use std::collections::BTreeMap;
use std::path::Path;

pub use latlab_scenario::flows::MAX_FLOWS;
/// Topologies with at most this many links sample them all by default;
/// larger ones sample only their key (core and edge) links.
const SAMPLE_ALL_LINKS_UP_TO: usize = 64;

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
    let latlab_scenario::timing::Timing {
        duration_ns,
        sample_interval_ns,
        measure_from_ns,
    } = latlab_scenario::timing::Timing::of(&cx, sc)?;

    // Network.
    let plan = topology::expand(&sc.topology, sc.seed, source)?;
    let nodes: Vec<Node> = plan.nodes.iter().map(|n| Node { name: n.clone() }).collect();
    let node_index: BTreeMap<&str, u32> = plan
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.as_str(), i as u32))
        .collect();
    let built = latlab_scenario::links::build::<PacketRef>(&cx, &plan, sc.seed)?;
    let names = latlab_scenario::links::link_names(&plan);
    let link_names: BTreeMap<String, u32> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (n.clone(), i as u32))
        .collect();
    let sample_all = plan.links.len() <= SAMPLE_ALL_LINKS_UP_TO;
    let mut links: Vec<Link> = Vec::with_capacity(plan.links.len());
    for ((svc, name), lp) in built.services.into_iter().zip(names).zip(&plan.links) {
        links.push(make_link(svc, lp, name, sample_all));
    }
    let media: Vec<SharedMedium> = built
        .media
        .into_iter()
        .zip(&plan.media)
        .map(|(medium, mp)| SharedMedium {
            medium,
            links: latlab_scenario::links::member_links(mp),
        })
        .collect();
    let series = budget::Series {
        sample_interval_ns,
        duration_ns,
        sampled_links: links.iter().filter(|l| l.sampled).count() as u64,
        sampled_flows: footprint.flows.min(u64::from(flows::max_sampled_flows(sc))),
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
    let max_sampled = flows::max_sampled_flows(sc);
    let mut group_names = Vec::new();
    flows::check_total_count(&cx, sc)?;
    let mut flows = Vec::new();
    for (g, grp) in sc.flows.iter().enumerate() {
        let p = format!("flows[{g}]");
        flows::check_count(&cx, grp, &p)?;
        let tcp_spec = sc.tcp.overlay(&grp.tcp);
        let cfg = tcp_config(&cx, &tcp_spec, &format!("{p}.tcp"))?;
        let rwnd = rwnd_spec(&cx, &tcp_spec, &format!("{p}.tcp"))?;
        let kind = group_kind(&cx, grp, &p, sc.duration_s)?;
        let mptcp_group = match &kind {
            GroupKind::Mptcp { .. } => Some(mptcp::mptcp_group(&cx, grp, &p, &cfg)?),
            _ => None,
        };
        flows::check_size(&cx, grp, &p)?;
        let starts = flows::start_times(
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
            let resolve = |pattern: &str, key: &str| {
                flows::resolve_node(&cx, &node_index, pattern, index, &format!("{p}.{key}"))
            };
            let (src, dst) = flows::flow_ends(&cx, &node_index, grp, &p, index)?;
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
                    cc_name: flows::cc_name(grp),
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
                GroupKind::Udp(udp_group) => {
                    let udp = UdpFlow {
                        source: udp_group.source(&cx, &p, sc.seed, flow_id)?,
                        timer: TimerSlot::default(),
                        received_pkts: 0,
                        received_bytes: 0,
                        owd_sum_ns: 0,
                        owd_max_ns: 0,
                    };
                    (Transport::Udp(udp), udp_group.header_bytes, Vec::new())
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
                cc_name: flows::cc_name(grp),
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

/// A simulated link around its service. A medium member's time series are
/// always kept (they are the member's).
fn make_link(svc: LinkService, lp: &LinkPlan, name: String, sample_all: bool) -> Link {
    Link {
        svc,
        name,
        src: lp.src,
        dst: lp.dst,
        access: AccessCounters::default(),
        window_start_departures_bytes: 0,
        pcap: None,
        trace: None,
        sampled: lp.medium.is_some() || sample_all || lp.key_link,
    }
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
pub mod mptcp;
mod tcp;

use groups::{group_kind, GroupKind};
use tcp::{rwnd_spec, tcp_config};
