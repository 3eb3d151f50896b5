//! Multipath TCP groups: the `mptcp` table checked once per group, and each
//! connection's subflow paths routed through their waypoints.

use super::*;
use crate::flow::{MptcpEnd, MptcpFlow, MptcpPath, ProxyEnd};
use crate::scenario::{MptcpScheduler, MptcpSpec, PathRef};
use latlab_proto::mptcp::{
    MptcpConfig, MptcpProxy, MptcpReceiver, MptcpSender, ProxyConfig, Scheduler, ThrottleConfig,
};

/// Most subflows a connection may have: packets carry the index in a byte.
pub const MAX_SUBFLOWS: usize = 255;

/// An MPTCP group's settings, checked (paths still by node name: `{i}` is
/// resolved per connection).
#[derive(Clone)]
pub(super) struct MptcpGroup {
    pub(super) cfg: MptcpConfig,
    pub(super) recv_buffer_bytes: u64,
    pub(super) paths: Vec<PathPlan>,
    pub(super) proxy: Option<ProxyPlan>,
}

/// A split connection's settings: the proxy's node (by name: `{i}` is
/// resolved per connection), its machine's config, the server's controller.
#[derive(Clone)]
pub(super) struct ProxyPlan {
    pub(super) node: String,
    pub(super) cfg: ProxyConfig,
    pub(super) upstream_cc: CcSpec,
}

/// Relay bound when a scenario does not set one: 4 MB, as much as a
/// bandwidth-delay product of 320 Mbit/s × 100 ms.
pub const DEFAULT_RELAY_BYTES: u64 = 4_000_000;
/// Throttle queue when unset: 50 ms at the throttled rate, at least three segments.
const DEFAULT_THROTTLE_QUEUE_S: f64 = 0.05;

#[derive(Clone)]
pub(super) struct PathPlan {
    pub(super) name: String,
    pub(super) via: Vec<String>,
    pub(super) join_after_ns: u64,
    pub(super) backup: bool,
}

/// Check a group's `mptcp` table (kind = "mptcp").
pub(super) fn mptcp_group(
    cx: &Ctx,
    grp: &FlowGroup,
    p: &str,
    tcp: &TcpConfig,
) -> Result<MptcpGroup, ScenarioError> {
    let mp = format!("{p}.mptcp");
    let spec: MptcpSpec = grp.mptcp.clone().ok_or_else(|| {
        cx.err(
            mp.clone(),
            "kind = \"mptcp\" needs an mptcp table with at least one path, e.g. \
             [[flows.mptcp.paths]] via = [\"ap\"]",
        )
    })?;
    if grp.udp.is_some() || grp.tfrc.is_some() || grp.closed_loop.is_some() {
        return Err(cx.err(
            p.to_string(),
            "an MPTCP group takes no udp, tfrc or closed_loop table",
        ));
    }
    if tcp.ecn {
        return Err(cx.err(
            format!("{p}.tcp.ecn"),
            "ECN is modelled for TCP flows only; an MPTCP group's subflows do not carry it (set ecn = false)",
        ));
    }
    let scheduler = match spec.scheduler.unwrap_or(MptcpScheduler::MinRtt) {
        MptcpScheduler::MinRtt => Scheduler::MinRtt,
        MptcpScheduler::RoundRobin => Scheduler::RoundRobin,
    };
    let recv_buffer_bytes = spec.recv_buffer_bytes.unwrap_or(tcp.rwnd_bytes);
    if recv_buffer_bytes < tcp.mss_bytes as u64 {
        return Err(cx.err(
            format!("{mp}.recv_buffer_bytes"),
            format!(
                "expected at least one segment ({} bytes), got {recv_buffer_bytes}",
                tcp.mss_bytes
            ),
        ));
    }
    let paths = path_plans(cx, &spec, &mp)?;
    let proxy = match &spec.proxy {
        None => None,
        Some(px) => Some(proxy_plan(cx, px, &paths, &format!("{mp}.proxy"), tcp)?),
    };
    Ok(MptcpGroup {
        proxy,
        cfg: MptcpConfig {
            scheduler,
            enforce_data_window: spec.enforce_data_window.unwrap_or(true),
            opportunistic_retransmit: spec.opportunistic_retransmit,
            penalise_slow_subflows: spec.penalise_slow_subflows,
        },
        recv_buffer_bytes,
        paths,
    })
}

/// Check the `paths` of the `mptcp` table at `mp`: one to [`MAX_SUBFLOWS`],
/// distinct names.
fn path_plans(cx: &Ctx, spec: &MptcpSpec, mp: &str) -> Result<Vec<PathPlan>, ScenarioError> {
    if spec.paths.is_empty() {
        return Err(cx.err(
            format!("{mp}.paths"),
            "expected at least one path, e.g. [[flows.mptcp.paths]] via = [\"ap\"]",
        ));
    }
    if spec.paths.len() > MAX_SUBFLOWS {
        return Err(cx.err(
            format!("{mp}.paths"),
            format!(
                "{} paths is too many; expected at most {MAX_SUBFLOWS}",
                spec.paths.len()
            ),
        ));
    }
    let mut paths: Vec<PathPlan> = Vec::with_capacity(spec.paths.len());
    for (k, ps) in spec.paths.iter().enumerate() {
        let name = ps.name.clone().unwrap_or_else(|| format!("path{k}"));
        if paths.iter().any(|q| q.name == name) {
            return Err(cx.err(
                format!("{mp}.paths[{k}].name"),
                format!("path name {name:?} is used twice; expected distinct names"),
            ));
        }
        paths.push(PathPlan {
            name,
            via: ps.via.clone(),
            join_after_ns: cx.s_to_ns(ps.join_s, &format!("{mp}.paths[{k}].join_s"))?,
            backup: ps.backup,
        });
    }
    Ok(paths)
}

/// Check the `proxy` table: every subflow opens at connect (the proxy's
/// MPTCP sender has its subflows before it starts), the throttled path
/// exists, the numbers are in range.
fn proxy_plan(
    cx: &Ctx,
    px: &crate::scenario::MptcpProxySpec,
    paths: &[PathPlan],
    pp: &str,
    tcp: &TcpConfig,
) -> Result<ProxyPlan, ScenarioError> {
    if let Some(k) = paths.iter().position(|p| p.join_after_ns > 0) {
        return Err(cx.err(
            format!("{}.paths[{k}].join_s", pp.trim_end_matches(".proxy")),
            "with a proxy every subflow opens when the connection does; expected join_s = 0",
        ));
    }
    let relay_bytes = px.relay_bytes.unwrap_or(DEFAULT_RELAY_BYTES);
    if relay_bytes == 0 {
        return Err(cx.err(format!("{pp}.relay_bytes"), "expected a positive number of bytes"));
    }
    let syn_delay_ns = cx.ms_to_ns(px.syn_delay_ms.unwrap_or(0.0), &format!("{pp}.syn_delay_ms"))?;
    let data_delay_ns = cx.ms_to_ns(px.data_delay_ms.unwrap_or(0.0), &format!("{pp}.data_delay_ms"))?;
    let name = px.upstream_cc.as_deref().unwrap_or("newreno");
    let upstream_cc = CcSpec::parse(name, &[]).map_err(|_| {
        cx.err(
            format!("{pp}.upstream_cc"),
            format!(
                "unknown congestion control {name:?}; expected one of {}",
                CcSpec::NAMES.join(", ")
            ),
        )
    })?;
    let throttle = match &px.throttle {
        None => None,
        Some(t) => Some(throttle_plan(cx, t, paths, &format!("{pp}.throttle"), tcp)?),
    };
    let cfg = ProxyConfig {
        relay_bytes,
        data_delay_ns,
        syn_delay_ns,
        throttle,
    };
    cfg.validate().map_err(|m| cx.err(pp, m))?;
    Ok(ProxyPlan {
        node: px.node.clone(),
        cfg,
        upstream_cc,
    })
}

/// Check the proxy's `throttle` table at `tp`: a path of the connection, a
/// positive rate, a queue of at least one segment.
fn throttle_plan(
    cx: &Ctx,
    t: &crate::scenario::MptcpThrottleSpec,
    paths: &[PathPlan],
    tp: &str,
    tcp: &TcpConfig,
) -> Result<ThrottleConfig, ScenarioError> {
    let subflow = match &t.path {
        PathRef::Index(i) if (*i as usize) < paths.len() => *i as usize,
        PathRef::Name(n) if paths.iter().any(|p| &p.name == n) => {
            paths.iter().position(|p| &p.name == n).unwrap_or(0)
        }
        other => {
            let names: Vec<&str> = paths.iter().map(|p| p.name.as_str()).collect();
            return Err(cx.err(
                format!("{tp}.path"),
                format!(
                    "unknown path {other:?}; expected an index below {} or one of {names:?}",
                    paths.len()
                ),
            ));
        }
    };
    if !(t.rate_bps.is_finite() && t.rate_bps >= 1.0) {
        return Err(cx.err(
            format!("{tp}.rate_bps"),
            format!("expected a positive rate in bits/s, got {}", t.rate_bps),
        ));
    }
    let rate_bps = t.rate_bps.round() as u64;
    let segment = (tcp.mss_bytes + tcp.header_bytes) as u64;
    let queue_bytes = t
        .queue_bytes
        .unwrap_or(((rate_bps as f64 * DEFAULT_THROTTLE_QUEUE_S / 8.0) as u64).max(3 * segment));
    if queue_bytes < segment {
        return Err(cx.err(
            format!("{tp}.queue_bytes"),
            format!("expected at least one segment on the wire ({segment} bytes), got {queue_bytes}"),
        ));
    }
    Ok(ThrottleConfig {
        subflow,
        rate_bps,
        after_ns: cx.s_to_ns(t.after_s.unwrap_or(0.0), &format!("{tp}.after_s"))?,
        queue_bytes,
        header_bytes: tcp.header_bytes,
    })
}

/// A route from `src` through `via` to `dst`: the shortest route between
/// each pair of consecutive points, joined.
fn route_via(route: &mut impl FnMut(u32, u32) -> Option<Vec<u32>>, points: &[u32]) -> Option<Vec<u32>> {
    let mut out = Vec::new();
    for w in points.windows(2) {
        out.extend(route(w[0], w[1])?);
    }
    Some(out)
}

/// Routes one connection's paths into the route table; errors name the key
/// path (`p` is the group's) and the nodes.
struct PathRouter<'a, 'c, R: FnMut(u32, u32) -> Option<Vec<u32>>> {
    cx: &'a Ctx<'c>,
    p: &'a str,
    resolve: &'a dyn Fn(&str, &str) -> Result<u32, ScenarioError>,
    nodes: &'a [Node],
    route: &'a mut R,
    routes: &'a mut RouteTable,
}

impl<R: FnMut(u32, u32) -> Option<Vec<u32>>> PathRouter<'_, '_, R> {
    fn name(&self, n: u32) -> &str {
        self.nodes[n as usize].name.as_str()
    }

    /// The plain TCP connection from the source to the proxy's node `pn`:
    /// its forward and reverse routes.
    fn upstream(&mut self, pn: u32, (src, dst): (u32, u32)) -> Result<(u32, u32), ScenarioError> {
        let key = format!("{}.mptcp.proxy.node", self.p);
        if pn == src || pn == dst {
            return Err(self.cx.err(
                key,
                "the proxy must be a node between the source and the destination",
            ));
        }
        let (cx, nodes) = (self.cx, self.nodes);
        let name = |n: u32| nodes[n as usize].name.as_str();
        let no_route = |a: u32, b: u32| {
            cx.err(
                key.clone(),
                format!("no route from {:?} to {:?}", name(a), name(b)),
            )
        };
        let fwd = (self.route)(src, pn).ok_or_else(|| no_route(src, pn))?;
        let rev = (self.route)(pn, src).ok_or_else(|| no_route(pn, src))?;
        Ok((self.routes.push(&fwd), self.routes.push(&rev)))
    }

    /// Path `k` of the connection from `src` through the plan's waypoints
    /// to `dst`, and back the same way.
    fn path(
        &mut self,
        k: usize,
        plan: &PathPlan,
        (src, dst): (u32, u32),
    ) -> Result<MptcpPath, ScenarioError> {
        let mut points = vec![src];
        for (j, w) in plan.via.iter().enumerate() {
            points.push((self.resolve)(w, &format!("mptcp.paths[{k}].via[{j}]"))?);
        }
        points.push(dst);
        let through = plan
            .via
            .is_empty()
            .then(String::new)
            .unwrap_or_else(|| format!(" through {:?}", plan.via));
        let key = format!("{}.mptcp.paths[{k}].via", self.p);
        let fwd = route_via(self.route, &points).ok_or_else(|| {
            self.cx.err(
                key.clone(),
                format!(
                    "no route from {:?} to {:?}{through}; the topology does not connect them",
                    self.name(src),
                    self.name(dst)
                ),
            )
        })?;
        points.reverse();
        let rev = route_via(self.route, &points).ok_or_else(|| {
            self.cx.err(
                key,
                format!(
                    "no route back from {:?} to {:?}{through}; the topology does not connect them",
                    self.name(dst),
                    self.name(src)
                ),
            )
        })?;
        Ok(MptcpPath {
            name: plan.name.clone(),
            backup: plan.backup,
            join_after_ns: plan.join_after_ns,
            fwd_route: self.routes.push(&fwd),
            rev_route: self.routes.push(&rev),
            subflow: None,
            window_start_acked: 0,
        })
    }
}

/// Build one connection of an MPTCP group: route every path (forward
/// src→via…→dst, reverse dst→…via→src) into `routes`.
#[allow(clippy::too_many_arguments)]
pub(super) fn mptcp_flow(
    cx: &Ctx,
    g: &MptcpGroup,
    p: &str,
    cfg: &TcpConfig,
    cc: &CcSpec,
    rwnd: &RwndSpec,
    size_bytes: Option<u64>,
    (src, dst): (u32, u32),
    resolve: &dyn Fn(&str, &str) -> Result<u32, ScenarioError>,
    nodes: &[Node],
    route: &mut impl FnMut(u32, u32) -> Option<Vec<u32>>,
    routes: &mut RouteTable,
) -> Result<MptcpFlow, ScenarioError> {
    let mut router = PathRouter {
        cx,
        p,
        resolve,
        nodes,
        route,
        routes,
    };
    // With a proxy the subflows run from the proxy's node to the client,
    // and a plain TCP connection from the source to the proxy.
    let upstream = match &g.proxy {
        Some(px) => {
            let node = resolve(&px.node, "mptcp.proxy.node")?;
            Some((px, node, router.upstream(node, (src, dst))?))
        }
        None => None,
    };
    let origin = upstream.map_or(src, |(_, node, _)| node);
    let mut paths = Vec::with_capacity(g.paths.len());
    for (k, plan) in g.paths.iter().enumerate() {
        paths.push(router.path(k, plan, (origin, dst))?);
    }
    let mut receiver = MptcpReceiver::new(g.recv_buffer_bytes);
    let mut path_of = Vec::new();
    let mut subflow_routes = Vec::new();
    let end = match upstream {
        Some((px, node, (up_fwd_route, up_rev_route))) => {
            // Every subflow exists before the proxy starts; the proxy's
            // sender gets its bytes from the relay.
            let mut sender = MptcpSender::new(g.cfg, Some(0));
            (path_of, subflow_routes) = open_subflows(&mut sender, &mut receiver, &mut paths, cfg, cc);
            let upstream_rcv = TcpReceiver::new(cfg.clone(), rwnd.build(cfg));
            let proxy = MptcpProxy::new(px.cfg, upstream_rcv, sender)
                .map_err(|m| cx.err(format!("{p}.mptcp.proxy"), m))?;
            MptcpEnd::Proxy(Box::new(ProxyEnd {
                proxy,
                server: TcpSender::new(
                    cfg.clone(),
                    px.upstream_cc.build(cfg.mss_bytes as u64),
                    size_bytes,
                ),
                server_timer: TimerSlot::default(),
                server_connected: false,
                node,
                up_fwd_route,
                up_rev_route,
            }))
        }
        None => MptcpEnd::Direct(MptcpSender::new(g.cfg, size_bytes)),
    };
    Ok(MptcpFlow {
        end,
        receiver,
        sender_timer: TimerSlot::default(),
        receiver_timer: TimerSlot::default(),
        cfg: cfg.clone(),
        cc: cc.clone(),
        paths,
        path_of,
        subflow_routes,
        window_start_occupancy_byte_ns: 0,
        completed_at_ns: None,
    })
}

/// Open one subflow per path, numbered in path order, on `sender` and
/// `receiver`; returns each subflow's path and its (forward, reverse)
/// routes.
fn open_subflows(
    sender: &mut MptcpSender,
    receiver: &mut MptcpReceiver,
    paths: &mut [MptcpPath],
    cfg: &TcpConfig,
    cc: &CcSpec,
) -> (Vec<u8>, Vec<(u32, u32)>) {
    let mut path_of = Vec::new();
    let mut subflow_routes = Vec::new();
    for (k, path) in paths.iter_mut().enumerate() {
        let i = sender.add_subflow(0, cfg.clone(), cc.build(cfg.mss_bytes as u64), path.backup);
        receiver.add_subflow(cfg.clone());
        path.subflow = Some(i as u8);
        path_of.push(k as u8);
        subflow_routes.push((path.fwd_route, path.rev_route));
    }
    (path_of, subflow_routes)
}
