//! Assemble a [`Simulation`] from a parsed [`Scenario`], validating everything a
//! user can get wrong and naming the key path in each error.

use crate::budget::{self, MemoryLimit};
use crate::flow::{ClosedLoop, Flow, TcpFlow, TfrcFlow, TimerSlot, Transport, UdpFlow};
use crate::network::{AccessCounters, Link, LinkService, Node, SharedMedium};
use crate::packet::PacketRef;
use crate::pcap::PcapWriter;
use crate::rng::{stream, stream_seed, Stream};
use crate::routing::{RouteTable, Router};
use crate::scenario::FlowGroup;
use crate::scenario::{Scenario, ScenarioError};
use crate::sim::Simulation;
use crate::topology::{self, LinkPlan};
use crate::traffic::{FileSize, UserDraws};
use latlab_proto::cc::{CcSpec, CcSpecError};
use latlab_proto::tcp::{RwndSpec, TcpConfig, TcpReceiver, TcpSender};
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
    let mut net = build_network(&cx, sc)?;
    let series = budget::Series {
        sample_interval_ns,
        duration_ns,
        sampled_links: net.links.iter().filter(|l| l.sampled).count() as u64,
        sampled_flows: footprint.flows.min(u64::from(flows::max_sampled_flows(sc))),
    };
    budget::check_series(&series, footprint.bytes(), source, limit)?;
    open_pcaps(&cx, sc, outdir, &mut net)?;
    let built = build_flows(&cx, sc, &net.nodes, &net.links)?;
    Ok(Simulation::new(
        sc.name.clone(),
        sc.seed,
        duration_ns,
        sample_interval_ns,
        measure_from_ns,
        net.nodes,
        net.links,
        built.flows,
        built.routes,
        built.group_names,
        net.media,
    ))
}

/// The simulated network: nodes, links (by index and by name) and shared media.
struct Network {
    nodes: Vec<Node>,
    links: Vec<Link>,
    media: Vec<SharedMedium>,
    link_names: BTreeMap<String, u32>,
}

/// Expand the topology and build each link's service and each shared medium.
fn build_network(cx: &Ctx, sc: &Scenario) -> Result<Network, ScenarioError> {
    let plan = topology::expand(&sc.topology, sc.seed, cx.source)?;
    let nodes: Vec<Node> = plan.nodes.iter().map(|n| Node { name: n.clone() }).collect();
    let built = latlab_scenario::links::build::<PacketRef>(cx, &plan, sc.seed)?;
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
    Ok(Network {
        nodes,
        links,
        media,
        link_names,
    })
}

/// Create the pcap file of each link `outputs.pcap` names, in `outdir`.
fn open_pcaps(
    cx: &Ctx,
    sc: &Scenario,
    outdir: Option<&Path>,
    net: &mut Network,
) -> Result<(), ScenarioError> {
    for (i, pname) in sc.outputs.pcap.iter().enumerate() {
        let Some(&li) = net.link_names.get(pname) else {
            return Err(cx.err(
                format!("outputs.pcap[{i}]"),
                format!(
                    "unknown link {pname:?}; links are named \"from->to\" by node names, e.g. {:?}",
                    net.links
                        .first()
                        .map(|l: &Link| l.name.as_str())
                        .unwrap_or("a->b")
                ),
            ));
        };
        let dir = outdir.unwrap_or(Path::new("."));
        let file = dir.join(latlab_link::pcap::file_name(pname));
        let writer = PcapWriter::create(&file).map_err(|e| {
            cx.err(
                format!("outputs.pcap[{i}]"),
                format!("cannot create {}: {e}", file.display()),
            )
        })?;
        net.links[li as usize].pcap = Some(Box::new(writer));
    }
    Ok(())
}

/// Every flow of the scenario, with the routes they use.
struct BuiltFlows {
    flows: Vec<Flow>,
    routes: RouteTable,
    group_names: Vec<String>,
}

/// What each flow is built from: the scenario and the network's nodes.
struct FlowContext<'a> {
    cx: &'a Ctx<'a>,
    sc: &'a Scenario,
    nodes: &'a [Node],
    node_index: BTreeMap<&'a str, u32>,
    /// Flows with a smaller id keep their time series.
    max_sampled: u32,
}

/// Routes are computed only for the (source, destination) pairs flows use.
struct Routing {
    router: Router,
    routes: RouteTable,
}

/// Build every group's flows, in group order and flow order within a group
/// (flow ids, and so each flow's random streams, follow that order).
fn build_flows(cx: &Ctx, sc: &Scenario, nodes: &[Node], links: &[Link]) -> Result<BuiltFlows, ScenarioError> {
    let graph_links: Vec<(u32, u32, u64)> = links.iter().map(|l| (l.src, l.dst, l.delay_ns)).collect();
    let mut routing = Routing {
        router: Router::new(nodes.len(), &graph_links),
        routes: RouteTable::default(),
    };
    let fc = FlowContext {
        cx,
        sc,
        nodes,
        node_index: nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.name.as_str(), i as u32))
            .collect(),
        max_sampled: flows::max_sampled_flows(sc),
    };
    flows::check_total_count(cx, sc)?;
    let mut flows = Vec::new();
    let mut group_names = Vec::new();
    for (g, grp) in sc.flows.iter().enumerate() {
        let gs = flow_group(cx, sc, g, grp)?;
        group_names.push(grp.name.clone());
        for i in 0..grp.count {
            let flow_id = flows.len() as u32;
            flows.push(make_flow(&fc, &mut routing, &gs, i, flow_id)?);
        }
    }
    Ok(BuiltFlows {
        flows,
        routes: routing.routes,
        group_names,
    })
}

/// One flow group, checked and configured once for all its flows.
struct GroupSetup<'a> {
    g: u32,
    /// Its key path, `flows[g]`.
    p: String,
    grp: &'a FlowGroup,
    cfg: TcpConfig,
    rwnd: RwndSpec,
    kind: GroupKind,
    /// Set for MPTCP groups.
    mptcp: Option<mptcp::MptcpGroup>,
    starts: Vec<u64>,
}

fn flow_group<'a>(
    cx: &Ctx,
    sc: &Scenario,
    g: usize,
    grp: &'a FlowGroup,
) -> Result<GroupSetup<'a>, ScenarioError> {
    let p = format!("flows[{g}]");
    flows::check_count(cx, grp, &p)?;
    let tcp_spec = sc.tcp.overlay(&grp.tcp);
    let cfg = tcp_config(cx, &tcp_spec, &format!("{p}.tcp"))?;
    let rwnd = rwnd_spec(cx, &tcp_spec, &format!("{p}.tcp"))?;
    let kind = group_kind(cx, grp, &p, sc.duration_s)?;
    let mptcp = match &kind {
        GroupKind::Mptcp { .. } => Some(mptcp::mptcp_group(cx, grp, &p, &cfg)?),
        _ => None,
    };
    flows::check_size(cx, grp, &p)?;
    let starts = flows::start_times(
        cx,
        &grp.start_s,
        grp.count,
        sc.seed,
        g as u64,
        &format!("{p}.start_s"),
    )?;
    Ok(GroupSetup {
        g: g as u32,
        p,
        grp,
        cfg,
        rwnd,
        kind,
        mptcp,
        starts,
    })
}

impl FlowContext<'_> {
    /// The node a group's `src` or `dst` pattern names for flow `index`.
    fn resolve(&self, p: &str, index: u64, pattern: &str, key: &str) -> Result<u32, ScenarioError> {
        flows::resolve_node(self.cx, &self.node_index, pattern, index, &format!("{p}.{key}"))
    }
}

impl Routing {
    /// The route from `a` to `b`, or an error at `p` naming both nodes.
    fn route(&mut self, fc: &FlowContext, p: &str, a: u32, b: u32) -> Result<Vec<u32>, ScenarioError> {
        self.router.route(a, b).ok_or_else(|| {
            fc.cx.err(
                p.to_string(),
                format!(
                    "no route from {:?} to {:?}; the topology does not connect them",
                    fc.nodes[a as usize].name, fc.nodes[b as usize].name
                ),
            )
        })
    }
}

/// Flow `i` of group `gs`, whose id is `flow_id`.
fn make_flow(
    fc: &FlowContext,
    routing: &mut Routing,
    gs: &GroupSetup,
    i: u32,
    flow_id: u32,
) -> Result<Flow, ScenarioError> {
    let index = gs.grp.first_index as u64 + i as u64;
    let resolve = |pattern: &str, key: &str| fc.resolve(&gs.p, index, pattern, key);
    let (src, dst) = flows::flow_ends(fc.cx, &fc.node_index, gs.grp, &gs.p, index)?;
    let (transport, header_bytes, fwd_route, rev_route) = match (&gs.kind, &gs.mptcp) {
        (GroupKind::Mptcp { cc }, Some(mg)) => {
            let m = mptcp::mptcp_flow(
                fc.cx,
                mg,
                &gs.p,
                &gs.cfg,
                cc,
                &gs.rwnd,
                gs.grp.size_bytes,
                (src, dst),
                &resolve,
                fc.nodes,
                &mut |a, b| routing.router.route(a, b),
                &mut routing.routes,
            )?;
            // The flow's own routes are its first path's (subflow
            // packets carry their path's routes).
            let (fwd_route, rev_route) = (m.paths[0].fwd_route, m.paths[0].rev_route);
            (Transport::Mptcp(m), gs.cfg.header_bytes, fwd_route, rev_route)
        }
        _ => {
            let fwd = routing.route(fc, &gs.p, src, dst)?;
            let (transport, header_bytes, rev) = single_path_transport(fc, routing, gs, flow_id, (src, dst))?;
            let fwd_route = routing.routes.push(&fwd);
            (transport, header_bytes, fwd_route, routing.routes.push(&rev))
        }
    };
    Ok(Flow {
        group: gs.g,
        src,
        dst,
        cc_name: flows::cc_name(gs.grp),
        start_ns: gs.starts[i as usize],
        size_bytes: gs.grp.size_bytes,
        transport,
        fwd_route,
        rev_route,
        header_bytes,
        conn: 0,
        started: false,
        window_start_delivered: 0,
        window_start_sent: 0,
        sampled: flow_id < fc.max_sampled,
    })
}

/// A single-path flow's transport, its header bytes and its reverse route
/// (none for UDP, which has no feedback).
fn single_path_transport(
    fc: &FlowContext,
    routing: &mut Routing,
    gs: &GroupSetup,
    flow_id: u32,
    (src, dst): (u32, u32),
) -> Result<(Transport, u32, Vec<u32>), ScenarioError> {
    match &gs.kind {
        GroupKind::Tcp { cc, closed_loop } => {
            let tcp = tcp_flow(fc.sc.seed, gs, cc, closed_loop, flow_id);
            let rev = routing.route(fc, &gs.p, dst, src)?;
            Ok((Transport::Tcp(tcp), gs.cfg.header_bytes, rev))
        }
        GroupKind::Udp(udp_group) => {
            let udp = UdpFlow {
                source: udp_group.source(fc.cx, &gs.p, fc.sc.seed, flow_id)?,
                timer: TimerSlot::default(),
                received_pkts: 0,
                received_bytes: 0,
                owd_sum_ns: 0,
                owd_max_ns: 0,
            };
            Ok((Transport::Udp(udp), udp_group.header_bytes, Vec::new()))
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
            let rev = routing.route(fc, &gs.p, dst, src)?;
            Ok((Transport::Tfrc(tfrc), *header_bytes, rev))
        }
        GroupKind::Mptcp { .. } => unreachable!("MPTCP flows are built by mptcp::mptcp_flow"),
    }
}

/// A TCP flow (a closed-loop user's when `closed_loop` is set): its
/// controller's and its user's random streams are the flow's own.
fn tcp_flow(
    seed: u64,
    gs: &GroupSetup,
    spec: &CcSpec,
    closed_loop: &Option<(FileSize, f64)>,
    flow_id: u32,
) -> TcpFlow {
    let cfg = &gs.cfg;
    let mut cc = spec.build(cfg.mss_bytes as u64);
    cc.set_seed(stream_seed(seed, Stream::Controller, flow_id as u64));
    let closed_loop = closed_loop.as_ref().map(|(size, think_mean_s)| ClosedLoop {
        draws: UserDraws {
            size: *size,
            think_mean_s: *think_mean_s,
            rng: stream(seed, Stream::Users, flow_id as u64),
        },
        cfg: cfg.clone(),
        cc: spec.clone(),
        rwnd: gs.rwnd.clone(),
        transfers: Vec::new(),
        current_start_ns: 0,
        current_size_bytes: 0,
        past_bytes_delivered: 0,
        past_sender: Default::default(),
    });
    // A closed-loop user's first file is drawn at its start.
    let app_bytes = match &closed_loop {
        Some(_) => Some(1),
        None => gs.grp.size_bytes,
    };
    TcpFlow {
        sender: TcpSender::new(cfg.clone(), cc, app_bytes),
        receiver: TcpReceiver::new(cfg.clone(), gs.rwnd.build(cfg)),
        sender_timer: TimerSlot::default(),
        receiver_timer: TimerSlot::default(),
        closed_loop,
    }
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

use groups::{group_kind, GroupKind};
use latlab_scenario::tcp::{rwnd_spec, tcp_config};
