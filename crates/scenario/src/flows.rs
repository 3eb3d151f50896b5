//! Flow expansion: which flows a scenario's groups make, between which
//! nodes, under which ids, starting when, and the packet schedules of the
//! open-loop UDP sources. The simulator's builder and the real-flow planner
//! (`latlab-net flows`) both expand flows here, so an emulated run starts
//! the same flows at the same times, with the same UDP packets, as a
//! simulated one: every draw comes from the same stream in the same order.
//!
//! Flows are numbered in the order of their groups, then by index within a
//! group, from 0; a flow's id names its random streams.

use crate::ctx::Ctx;
use crate::fgn;
use crate::rng::{stream, Stream};
use crate::routing::Router;
use crate::scenario::{FlowGroup, FlowKind, Scenario, ScenarioError, StartDist, StartSpec, UdpPatternKind};
use crate::topology::NetPlan;
use crate::traffic::{UdpPattern, UdpSource};
use rand::Rng;
use rand_distr::{Distribution, Exp};
use std::collections::BTreeMap;

/// Most flows a scenario may have, over all groups: a guard against typos
/// such as `count = 999999999`, which would otherwise exhaust memory while
/// start times and flows are made. Not a memory estimate.
pub const MAX_FLOWS: u64 = 1_000_000;

/// Flows whose time series are kept when the scenario does not say.
pub const DEFAULT_MAX_SAMPLED_FLOWS: u32 = 100;

/// UDP header bytes on the wire when a scenario does not set them: IPv4 + UDP.
pub const UDP_DEFAULT_HEADER_BYTES: u32 = 28;

/// How many flows (the first, by id) have their time series kept.
pub fn max_sampled_flows(sc: &Scenario) -> u32 {
    sc.outputs.max_sampled_flows.unwrap_or(DEFAULT_MAX_SAMPLED_FLOWS)
}

/// The flow count over all groups is at most [`MAX_FLOWS`]; checked before
/// any group makes its flows.
pub fn check_total_count(cx: &Ctx, sc: &Scenario) -> Result<(), ScenarioError> {
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
    Ok(())
}

/// A group makes at least one flow (`p` is its key path, `flows[g]`).
pub fn check_count(cx: &Ctx, grp: &FlowGroup, p: &str) -> Result<(), ScenarioError> {
    if grp.count == 0 {
        return Err(cx.err(format!("{p}.count"), "expected at least 1 flow"));
    }
    Ok(())
}

/// A finite flow has a positive size.
pub fn check_size(cx: &Ctx, grp: &FlowGroup, p: &str) -> Result<(), ScenarioError> {
    if grp.size_bytes == Some(0) {
        return Err(cx.err(
            format!("{p}.size_bytes"),
            "expected a positive size in bytes (omit it for a long-lived flow)",
        ));
    }
    Ok(())
}

/// A kind's own table (`tfrc`, `mptcp`, `udp`) appears only with that kind.
pub fn check_tables(cx: &Ctx, grp: &FlowGroup, p: &str) -> Result<(), ScenarioError> {
    if grp.tfrc.is_some() && !matches!(grp.kind, FlowKind::Tfrc | FlowKind::Dflow) {
        return Err(cx.err(
            format!("{p}.tfrc"),
            "a tfrc table needs kind = \"tfrc\" or \"dflow\"",
        ));
    }
    if grp.mptcp.is_some() && grp.kind != FlowKind::Mptcp {
        return Err(cx.err(format!("{p}.mptcp"), "an mptcp table needs kind = \"mptcp\""));
    }
    // An MPTCP group names every table it refuses in one message (its builder).
    if grp.udp.is_some() && !matches!(grp.kind, FlowKind::Udp | FlowKind::Mptcp) {
        return Err(cx.err(format!("{p}.udp"), "a udp table needs kind = \"udp\""));
    }
    Ok(())
}

/// The start time of each of a group's `count` flows, drawn from the
/// group's own stream (scenario seed, [`Stream::FlowStart`], group index).
pub fn start_times(
    cx: &Ctx,
    spec: &StartSpec,
    count: u32,
    seed: u64,
    group: u64,
    path: &str,
) -> Result<Vec<u64>, ScenarioError> {
    let mut rng = stream(seed, Stream::FlowStart, group);
    let n = count as usize;
    match spec {
        StartSpec::At(t) => Ok(vec![cx.s_to_ns(*t, path)?; n]),
        StartSpec::Dist(StartDist::Uniform([a, b])) => {
            let (lo, hi) = (cx.s_to_ns(*a, path)?, cx.s_to_ns(*b, path)?);
            if lo > hi {
                return Err(cx.err(
                    format!("{path}.uniform"),
                    format!("range [{a}, {b}] has min > max"),
                ));
            }
            Ok((0..n)
                .map(|_| if lo == hi { lo } else { rng.random_range(lo..=hi) })
                .collect())
        }
        StartSpec::Dist(StartDist::ExponentialMean(mean)) => {
            if !mean.is_finite() || *mean <= 0.0 {
                return Err(cx.err(
                    format!("{path}.exponential_mean"),
                    format!("expected a positive mean in seconds, got {mean}"),
                ));
            }
            let exp = Exp::new(1.0 / mean)
                .map_err(|e| cx.err(format!("{path}.exponential_mean"), e.to_string()))?;
            let mut t = 0.0;
            (0..n)
                .map(|_| {
                    t += exp.sample(&mut rng);
                    cx.s_to_ns(t, path)
                })
                .collect()
        }
        StartSpec::Dist(StartDist::At(times)) => {
            if times.len() != n {
                return Err(cx.err(
                    format!("{path}.at"),
                    format!("expected {n} start times (one per flow), got {}", times.len()),
                ));
            }
            times
                .iter()
                .enumerate()
                .map(|(i, t)| cx.s_to_ns(*t, &format!("{path}.at[{i}]")))
                .collect()
        }
    }
}

/// The node a group's `pattern` names for the flow of `index` (`{i}`
/// replaced by it); `path` is the key's path for the error.
pub fn resolve_node(
    cx: &Ctx,
    node_index: &BTreeMap<&str, u32>,
    pattern: &str,
    index: u64,
    path: &str,
) -> Result<u32, ScenarioError> {
    let name = pattern.replace("{i}", &index.to_string());
    node_index.get(name.as_str()).copied().ok_or_else(|| {
        let how = if pattern.contains("{i}") {
            format!(" (from {pattern:?} with i = {index})")
        } else {
            String::new()
        };
        cx.err(
            path,
            format!("unknown node {name:?}{how}; expected a node of the topology"),
        )
    })
}

/// A flow's (source, destination) nodes: two distinct nodes of the topology.
pub fn flow_ends(
    cx: &Ctx,
    node_index: &BTreeMap<&str, u32>,
    grp: &FlowGroup,
    p: &str,
    index: u64,
) -> Result<(u32, u32), ScenarioError> {
    let src = resolve_node(cx, node_index, &grp.src, index, &format!("{p}.src"))?;
    let dst = resolve_node(cx, node_index, &grp.dst, index, &format!("{p}.dst"))?;
    if src == dst {
        return Err(cx.err(format!("{p}.dst"), "source and destination are the same node"));
    }
    Ok((src, dst))
}

/// The flow's sender as the flows table names it: the congestion
/// controller of a TCP or MPTCP flow, "udp", or the TFRC rate law.
pub fn cc_name(grp: &FlowGroup) -> String {
    match grp.kind {
        FlowKind::Tcp | FlowKind::Mptcp => grp.cc.clone(),
        FlowKind::Udp | FlowKind::Tfrc | FlowKind::Dflow => grp.kind.name().to_string(),
    }
}

/// Norros-model parameters of an LRD source (docs/models/workloads.md).
#[derive(Clone, Copy, Debug)]
pub struct LrdParams {
    pub rate_bps: f64,
    pub hurst: f64,
    /// a in Var(A_k) = a·m·Δ^2H, bytes·s^(1−2H).
    pub variance_coef: f64,
    pub n_slots: usize,
}

/// A `kind = "udp"` group's source settings, checked once; each flow's
/// source is made by [`UdpGroup::source`].
#[derive(Clone, Debug)]
pub struct UdpGroup {
    pub pattern: UdpPattern,
    /// For long-range-dependent sources: the fGn draw, per flow.
    pub lrd: Option<LrdParams>,
    pub header_bytes: u32,
}

/// A positive, finite number at `{p}.{key}`.
fn positive(cx: &Ctx, p: &str, key: &str, v: f64) -> Result<f64, ScenarioError> {
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        Err(cx.err(
            format!("{p}.{key}"),
            format!("expected a positive number, got {v}"),
        ))
    }
}

/// Check a `kind = "udp"` group's `udp` table (`duration_s` bounds an LRD
/// source's slots).
pub fn udp_group(cx: &Ctx, grp: &FlowGroup, p: &str, duration_s: f64) -> Result<UdpGroup, ScenarioError> {
    let Some(u) = &grp.udp else {
        return Err(cx.err(format!("{p}.udp"), "kind = \"udp\" needs a udp table, e.g. udp = { pattern = \"poisson\", rate_bps = 5e6, size_bytes = [100, 300] }"));
    };
    if grp.closed_loop.is_some() || grp.size_bytes.is_some() {
        return Err(cx.err(
            p.to_string(),
            "UDP sources are open-loop: remove closed_loop and size_bytes",
        ));
    }
    let rate_bps = positive(cx, p, "udp.rate_bps", u.rate_bps)?;
    let (lo, hi) = (u.size_bytes.min(), u.size_bytes.max());
    if !(lo.is_finite() && hi.is_finite() && lo >= 1.0 && lo <= hi && hi <= 65_000.0) {
        return Err(cx.err(
            format!("{p}.udp.size_bytes"),
            "expected a size (or [min, max]) between 1 and 65000 bytes",
        ));
    }
    let (min_bytes, max_bytes) = (lo.round() as u32, hi.round() as u32);
    let (pattern, lrd) = match u.pattern {
        UdpPatternKind::Cbr => (
            UdpPattern::Cbr {
                rate_bps,
                size_bytes: max_bytes,
            },
            None,
        ),
        UdpPatternKind::Poisson => (
            UdpPattern::Poisson {
                rate_bps,
                min_bytes,
                max_bytes,
            },
            None,
        ),
        UdpPatternKind::Lrd => lrd_pattern(cx, grp, p, duration_s, rate_bps, (min_bytes, max_bytes))?,
    };
    Ok(UdpGroup {
        pattern,
        lrd,
        header_bytes: u.header_bytes.unwrap_or(UDP_DEFAULT_HEADER_BYTES),
    })
}

/// An LRD source's slot pattern (its bytes per slot drawn per flow) and
/// Norros parameters.
fn lrd_pattern(
    cx: &Ctx,
    grp: &FlowGroup,
    p: &str,
    duration_s: f64,
    rate_bps: f64,
    (min_bytes, max_bytes): (u32, u32),
) -> Result<(UdpPattern, Option<LrdParams>), ScenarioError> {
    let Some(u) = &grp.udp else {
        unreachable!("udp_group checked the udp table")
    };
    let hurst = u.hurst.ok_or_else(|| {
        cx.err(
            format!("{p}.udp.hurst"),
            "pattern = \"lrd\" needs hurst, e.g. 0.85",
        )
    })?;
    if !(hurst > 0.0 && hurst < 1.0) {
        return Err(cx.err(
            format!("{p}.udp.hurst"),
            format!("expected a Hurst parameter in (0, 1), got {hurst}"),
        ));
    }
    let slot_s = positive(cx, p, "udp.slot_ms", u.slot_ms.unwrap_or(10.0))? / 1e3;
    // Default a: the variance a Poisson stream of these packets
    // has at the slot scale (Var = m·Δ·s̄ = a·m·Δ^2H).
    let mean_size = (min_bytes as f64 + max_bytes as f64) / 2.0;
    let variance_coef = match u.variance_coef {
        Some(a) => positive(cx, p, "udp.variance_coef", a)?,
        None => mean_size * slot_s.powf(1.0 - 2.0 * hurst),
    };
    let slot_ns = (slot_s * 1e9).round() as u64;
    let n_slots = (duration_s / slot_s).ceil() as usize + 1;
    if n_slots > 50_000_000 {
        return Err(cx.err(
            format!("{p}.udp.slot_ms"),
            "too many slots for this duration; use a longer slot_ms",
        ));
    }
    // The slots themselves are drawn per flow, on the flow's own stream.
    let lrd = LrdParams {
        rate_bps,
        hurst,
        variance_coef,
        n_slots,
    };
    let pattern = UdpPattern::PerSlot {
        bytes_per_slot: Vec::new(),
        slot_ns,
        min_bytes,
        max_bytes,
    };
    Ok((pattern, Some(lrd)))
}

impl UdpGroup {
    /// Flow `flow_id`'s source, before its start: its packet times and
    /// sizes come from stream ([`Stream::UdpSource`], flow id), an LRD
    /// source's slots from its own stream, so the slot draw never shifts
    /// the packet-size draws.
    pub fn source(&self, cx: &Ctx, p: &str, seed: u64, flow_id: u32) -> Result<UdpSource, ScenarioError> {
        let mut pattern = self.pattern.clone();
        if let (
            Some(l),
            UdpPattern::PerSlot {
                bytes_per_slot,
                slot_ns,
                ..
            },
        ) = (&self.lrd, &mut pattern)
        {
            let mut rng = stream(seed, Stream::UdpSource, (1 << 32) | flow_id as u64);
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
        Ok(UdpSource::new(
            pattern,
            stream(seed, Stream::UdpSource, flow_id as u64),
            0,
        ))
    }
}

/// One flow of the scenario, as the simulator numbers and schedules it.
#[derive(Clone, Debug)]
pub struct FlowEnds {
    /// Its index in the scenario's flows (0, 1, ... over all groups).
    pub flow_id: u32,
    /// Its group's index in `flows`.
    pub group: u32,
    /// Source and destination, indices into the plan's nodes.
    pub src: u32,
    pub dst: u32,
    pub start_ns: u64,
    /// The simulator keeps this flow's time series.
    pub sampled: bool,
    /// A UDP flow's source, before its start; None for other kinds.
    pub udp: Option<UdpSource>,
}

/// Every flow of `sc` over the expanded topology `plan`: the checks the
/// simulator's builder makes of flow counts, start times, nodes, routes
/// and UDP sources, and the same ids, start times and sources. The
/// transports' own settings (TCP, TFRC, MPTCP) are left to their builders.
pub fn expand(cx: &Ctx, sc: &Scenario, plan: &NetPlan) -> Result<Vec<FlowEnds>, ScenarioError> {
    let node_index: BTreeMap<&str, u32> = plan
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.as_str(), i as u32))
        .collect();
    let graph_links: Vec<(u32, u32, u64)> = plan
        .links
        .iter()
        .map(|l| (l.src, l.dst, (l.delay_ms * 1e6).round() as u64))
        .collect();
    let mut router = Router::new(plan.nodes.len(), &graph_links);
    let max_sampled = max_sampled_flows(sc);
    check_total_count(cx, sc)?;
    let mut flows = Vec::new();
    for (g, grp) in sc.flows.iter().enumerate() {
        let p = format!("flows[{g}]");
        check_count(cx, grp, &p)?;
        check_tables(cx, grp, &p)?;
        let udp = match grp.kind {
            FlowKind::Udp => Some(udp_group(cx, grp, &p, sc.duration_s)?),
            _ => None,
        };
        check_size(cx, grp, &p)?;
        let starts = start_times(
            cx,
            &grp.start_s,
            grp.count,
            sc.seed,
            g as u64,
            &format!("{p}.start_s"),
        )?;
        for (i, start_ns) in starts.into_iter().enumerate() {
            let index = grp.first_index as u64 + i as u64;
            let (src, dst) = flow_ends(cx, &node_index, grp, &p, index)?;
            // A UDP source needs only the forward path, the others an ACK
            // path too; an MPTCP connection's paths are routed through their
            // waypoints by its builder.
            let pairs = match grp.kind {
                FlowKind::Mptcp => vec![],
                FlowKind::Udp => vec![(src, dst)],
                FlowKind::Tcp | FlowKind::Tfrc | FlowKind::Dflow => vec![(src, dst), (dst, src)],
            };
            for (a, b) in pairs {
                if router.route(a, b).is_none() {
                    return Err(cx.err(
                        p.clone(),
                        format!(
                            "no route from {:?} to {:?}; the topology does not connect them",
                            plan.nodes[a as usize], plan.nodes[b as usize]
                        ),
                    ));
                }
            }
            let flow_id = flows.len() as u32;
            let udp = match &udp {
                Some(u) => Some(u.source(cx, &p, sc.seed, flow_id)?),
                None => None,
            };
            flows.push(FlowEnds {
                flow_id,
                group: g as u32,
                src,
                dst,
                start_ns,
                sampled: flow_id < max_sampled,
                udp,
            });
        }
    }
    Ok(flows)
}
