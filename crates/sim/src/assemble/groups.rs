//! Flow groups: what kind each is (TCP, closed-loop, UDP, TFRC/DFlow),
//! checked. When their flows start, and UDP sources, come from
//! `latlab_scenario::flows`, which the real-flow planner shares.

use super::*;
use crate::scenario::{ClosedLoopSpec, FlowKind, TfrcSpec};
use latlab_scenario::flows::UdpGroup;

/// What a flow group is, resolved and validated.
pub(super) enum GroupKind {
    Tcp {
        /// The controller and its constants, parsed and checked once.
        cc: CcSpec,
        /// (file sizes, mean think time in seconds) of closed-loop users.
        closed_loop: Option<(FileSize, f64)>,
    },
    Udp(UdpGroup),
    /// Multipath TCP: every subflow's controller (the `mptcp` table is
    /// checked by [`super::mptcp::mptcp_group`]).
    Mptcp {
        cc: CcSpec,
    },
    /// TFRC or DFlow (the mode in `cfg`).
    Tfrc {
        cfg: TfrcConfig,
        header_bytes: u32,
        receiver_clock_offset_ns: u64,
    },
}

/// Wire header of a TFRC/DFlow packet when the scenario does not set one:
/// IPv4 (20) + UDP (8) + a 16-byte TFRC header (sequence number, timestamp,
/// RTT estimate as in RFC 5348 §3.2.1, in DCCP-like field widths). A
/// feedback packet's four fields (§3.2.2) fit in the same 16 bytes.
const TFRC_DEFAULT_HEADER_BYTES: u32 = 28 + 16;
/// Largest header a scenario may set (anything larger is surely a typo).
const TFRC_MAX_HEADER_BYTES: u32 = 1500;

pub(super) fn group_kind(
    cx: &Ctx,
    grp: &FlowGroup,
    p: &str,
    duration_s: f64,
) -> Result<GroupKind, ScenarioError> {
    flows::check_tables(cx, grp, p)?;
    match grp.kind {
        FlowKind::Tfrc | FlowKind::Dflow => tfrc_kind(cx, grp, p),
        FlowKind::Mptcp => Ok(GroupKind::Mptcp {
            cc: cc_spec(cx, grp, p)?,
        }),
        FlowKind::Tcp => {
            let closed_loop = match &grp.closed_loop {
                None => None,
                Some(c) => Some(closed_loop(cx, grp, c, p)?),
            };
            let cc = cc_spec(cx, grp, p)?;
            Ok(GroupKind::Tcp { cc, closed_loop })
        }
        FlowKind::Udp => Ok(GroupKind::Udp(flows::udp_group(cx, grp, p, duration_s)?)),
    }
}

/// Closed-loop users' file sizes and mean think time, seconds.
fn closed_loop(
    cx: &Ctx,
    grp: &FlowGroup,
    c: &ClosedLoopSpec,
    p: &str,
) -> Result<(FileSize, f64), ScenarioError> {
    if grp.size_bytes.is_some() {
        return Err(cx.err(
            format!("{p}.size_bytes"),
            "closed-loop users draw their file sizes; remove size_bytes",
        ));
    }
    let size = match (c.file_bytes, c.pareto_mean_bytes) {
        (Some(_), Some(_)) => {
            return Err(cx.err(
                format!("{p}.closed_loop"),
                "set either file_bytes or pareto_mean_bytes, not both",
            ))
        }
        (Some(0), None) => {
            return Err(cx.err(format!("{p}.closed_loop.file_bytes"), "expected a positive size"))
        }
        (Some(b), None) => FileSize::Fixed(b),
        (None, Some(mean)) => {
            if !(mean.is_finite() && mean > 0.0) {
                return Err(cx.err(
                    format!("{p}.closed_loop.pareto_mean_bytes"),
                    format!("expected a positive number, got {mean}"),
                ));
            }
            let shape = c.pareto_shape.unwrap_or(1.2);
            if !(shape.is_finite() && shape > 1.0) {
                return Err(cx.err(
                    format!("{p}.closed_loop.pareto_shape"),
                    format!("expected a shape > 1 (a finite mean), got {shape}"),
                ));
            }
            FileSize::Pareto {
                mean_bytes: mean,
                shape,
            }
        }
        (None, None) => {
            return Err(cx.err(
                format!("{p}.closed_loop"),
                "missing file size; expected file_bytes or pareto_mean_bytes",
            ))
        }
    };
    if !(c.think_mean_s.is_finite() && c.think_mean_s >= 0.0) {
        return Err(cx.err(
            format!("{p}.closed_loop.think_mean_s"),
            "expected a non-negative number of seconds",
        ));
    }
    Ok((size, c.think_mean_s))
}

/// The group's congestion controller and its constants, checked once.
fn cc_spec(cx: &Ctx, grp: &FlowGroup, p: &str) -> Result<CcSpec, ScenarioError> {
    let params: Vec<(String, f64)> = grp.cc_params.iter().map(|(k, v)| (k.clone(), *v)).collect();
    CcSpec::parse(&grp.cc, &params).map_err(|e| match e {
        CcSpecError::UnknownController(name) => cx.err(
            format!("{p}.cc"),
            format!(
                "unknown congestion control {name:?}; expected one of {}",
                CcSpec::NAMES.join(", ")
            ),
        ),
        CcSpecError::Param(msg) => cx.err(format!("{p}.cc_params"), msg),
    })
}

/// A TFRC or DFlow group: always backlogged and without `cc_params`; its
/// config ([`tfrc_config`]), header bytes and receiver clock offset.
fn tfrc_kind(cx: &Ctx, grp: &FlowGroup, p: &str) -> Result<GroupKind, ScenarioError> {
    let kind = grp.kind.name();
    if grp.closed_loop.is_some() || grp.size_bytes.is_some() {
        return Err(cx.err(
            p.to_string(),
            format!("{kind} sources always have data to send: remove closed_loop and size_bytes"),
        ));
    }
    if !grp.cc_params.is_empty() {
        return Err(cx.err(
            format!("{p}.cc_params"),
            format!("{kind} has no congestion-controller parameters; use the tfrc table"),
        ));
    }
    let spec = grp.tfrc.clone().unwrap_or_default();
    let tp = format!("{p}.tfrc");
    let cfg = tfrc_config(cx, &spec, &tp, grp.kind == FlowKind::Dflow)?;
    let header_bytes = spec.header_bytes.unwrap_or(TFRC_DEFAULT_HEADER_BYTES);
    if header_bytes == 0 || header_bytes > TFRC_MAX_HEADER_BYTES {
        return Err(cx.err(
            format!("{tp}.header_bytes"),
            format!("expected 1..={TFRC_MAX_HEADER_BYTES} header bytes, got {header_bytes}"),
        ));
    }
    let receiver_clock_offset_ns = match spec.receiver_clock_offset_ms {
        Some(ms) => cx.ms_to_ns(ms, &format!("{tp}.receiver_clock_offset_ms"))?,
        None => 0,
    };
    Ok(GroupKind::Tfrc {
        cfg,
        header_bytes,
        receiver_clock_offset_ns,
    })
}

/// The `tfrc` table at `tp` over the proto's TFRC (or DFlow) defaults,
/// checked by `TfrcConfig::validate` (one source of truth for the ranges)
/// with the error placed on the key it concerns.
fn tfrc_config(cx: &Ctx, spec: &TfrcSpec, tp: &str, dflow: bool) -> Result<TfrcConfig, ScenarioError> {
    let mut cfg = if dflow {
        TfrcConfig::dflow()
    } else {
        TfrcConfig::default()
    };
    if !dflow {
        let dflow_only = [
            ("cd_thresh_ms", spec.cd_thresh_ms.is_some()),
            ("base_period_rtts", spec.base_period_rtts.is_some()),
            ("current_period_ms", spec.current_period_ms.is_some()),
            ("gradient_test", spec.gradient_test.is_some()),
        ];
        if let Some((key, _)) = dflow_only.iter().find(|(_, set)| *set) {
            return Err(cx.err(
                format!("{tp}.{key}"),
                "only DFlow detects delay congestion; set kind = \"dflow\" or remove it",
            ));
        }
    }
    if let Some(s) = spec.segment_bytes {
        cfg.segment_bytes = s;
    }
    if let Some(o) = spec.oscillation_reduction {
        cfg.oscillation_reduction = o;
    }
    if let TfrcMode::DFlow(d) = &mut cfg.mode {
        let DflowParams {
            base_period_rtts,
            current_period_ns,
            cd_thresh_ns,
            gradient_test,
        } = d;
        if let Some(ms) = spec.cd_thresh_ms {
            *cd_thresh_ns = cx.ms_to_ns(ms, &format!("{tp}.cd_thresh_ms"))?;
        }
        if let Some(ms) = spec.current_period_ms {
            *current_period_ns = cx.ms_to_ns(ms, &format!("{tp}.current_period_ms"))?;
        }
        if let Some(r) = spec.base_period_rtts {
            *base_period_rtts = r;
        }
        if let Some(g) = spec.gradient_test {
            *gradient_test = g;
        }
    }
    cfg.validate().map_err(|m| {
        // The proto's messages name the config field; point at the key.
        let key = [
            ("segment_bytes", "segment_bytes"),
            ("oscillation", "oscillation_reduction"),
            ("cd_thresh", "cd_thresh_ms"),
            ("current_period", "current_period_ms"),
            ("base_period_rtts", "base_period_rtts"),
        ]
        .iter()
        .find(|(needle, _)| m.contains(needle))
        .map_or(tp.to_string(), |(_, key)| format!("{tp}.{key}"));
        cx.err(key, m)
    })?;
    Ok(cfg)
}
