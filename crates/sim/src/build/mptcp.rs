//! Multipath TCP groups: the `mptcp` table checked once per group, and each
//! connection's subflow paths routed through their waypoints.

use super::*;
use crate::flow::{MptcpFlow, MptcpPath};
use crate::scenario::MptcpSpec;
use latlab_proto::mptcp::{MptcpConfig, MptcpReceiver, MptcpSender, Scheduler};

/// Most subflows a connection may have: packets carry the index in a byte.
pub const MAX_SUBFLOWS: usize = 255;

/// An MPTCP group's settings, checked (paths still by node name: `{i}` is
/// resolved per connection).
#[derive(Clone)]
pub(super) struct MptcpGroup {
    pub(super) cfg: MptcpConfig,
    pub(super) recv_buffer_bytes: u64,
    pub(super) paths: Vec<PathPlan>,
}

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
    if spec.proxy.is_some() {
        return Err(cx.err(
            format!("{mp}.proxy"),
            "the MPTCP proxy is not yet supported by the simulator; remove the proxy table",
        ));
    }
    let scheduler = Scheduler::parse(spec.scheduler.as_deref().unwrap_or("minrtt"))
        .map_err(|m| cx.err(format!("{mp}.scheduler"), m))?;
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
    Ok(MptcpGroup {
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

/// A route from `src` through `via` to `dst`: the shortest route between
/// each pair of consecutive points, joined.
fn route_via(route: &mut impl FnMut(u32, u32) -> Option<Vec<u32>>, points: &[u32]) -> Option<Vec<u32>> {
    let mut out = Vec::new();
    for w in points.windows(2) {
        out.extend(route(w[0], w[1])?);
    }
    Some(out)
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
    size_bytes: Option<u64>,
    (src, dst): (u32, u32),
    resolve: &dyn Fn(&str, &str) -> Result<u32, ScenarioError>,
    nodes: &[Node],
    route: &mut impl FnMut(u32, u32) -> Option<Vec<u32>>,
    routes: &mut RouteTable,
) -> Result<MptcpFlow, ScenarioError> {
    let mut paths = Vec::with_capacity(g.paths.len());
    for (k, plan) in g.paths.iter().enumerate() {
        let mut points = vec![src];
        for (j, w) in plan.via.iter().enumerate() {
            points.push(resolve(w, &format!("mptcp.paths[{k}].via[{j}]"))?);
        }
        points.push(dst);
        let name = |n: u32| nodes[n as usize].name.as_str();
        let through = plan
            .via
            .is_empty()
            .then(String::new)
            .unwrap_or_else(|| format!(" through {:?}", plan.via));
        let fwd = route_via(route, &points).ok_or_else(|| {
            cx.err(
                format!("{p}.mptcp.paths[{k}].via"),
                format!(
                    "no route from {:?} to {:?}{through}; the topology does not connect them",
                    name(src),
                    name(dst)
                ),
            )
        })?;
        points.reverse();
        let rev = route_via(route, &points).ok_or_else(|| {
            cx.err(
                format!("{p}.mptcp.paths[{k}].via"),
                format!(
                    "no route back from {:?} to {:?}{through}; the topology does not connect them",
                    name(dst),
                    name(src)
                ),
            )
        })?;
        paths.push(MptcpPath {
            name: plan.name.clone(),
            backup: plan.backup,
            join_after_ns: plan.join_after_ns,
            fwd_route: routes.push(&fwd),
            rev_route: routes.push(&rev),
            subflow: None,
            window_start_acked: 0,
        });
    }
    Ok(MptcpFlow {
        sender: MptcpSender::new(g.cfg, size_bytes),
        receiver: MptcpReceiver::new(g.recv_buffer_bytes),
        sender_timer: TimerSlot::default(),
        receiver_timer: TimerSlot::default(),
        cfg: cfg.clone(),
        cc: cc.clone(),
        paths,
        path_of: Vec::new(),
        window_start_occupancy_byte_ns: 0,
    })
}
