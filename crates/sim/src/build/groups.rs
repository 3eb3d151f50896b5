//! Flow groups: what kind each is (TCP, closed-loop, UDP, TFRC/DFlow), checked,
//! and when its flows start.

use super::*;

pub(super) fn start_times(
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

/// What a flow group is, resolved and validated.
pub(super) enum GroupKind {
    Tcp {
        /// The controller and its constants, parsed and checked once.
        cc: CcSpec,
        /// (file sizes, mean think time in seconds) of closed-loop users.
        closed_loop: Option<(FileSize, f64)>,
    },
    Udp {
        pattern: UdpPattern,
        /// For long-range-dependent sources: the fGn draw, per flow.
        lrd: Option<LrdParams>,
        header_bytes: u32,
    },
    /// Multipath TCP: every subflow's controller (the `mptcp` table is
    /// checked by [`super::mptcp::mptcp_group`]).
    Mptcp { cc: CcSpec },
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

/// Norros-model parameters of an LRD source (docs/models/workloads.md).
#[derive(Clone, Copy)]
pub(super) struct LrdParams {
    pub(super) rate_bps: f64,
    pub(super) hurst: f64,
    /// a in Var(A_k) = a·m·Δ^2H, bytes·s^(1−2H).
    pub(super) variance_coef: f64,
    pub(super) n_slots: usize,
}

pub(super) fn group_kind(
    cx: &Ctx,
    grp: &FlowGroup,
    p: &str,
    duration_s: f64,
) -> Result<GroupKind, ScenarioError> {
    let positive = |v: f64, key: &str| -> Result<f64, ScenarioError> {
        if v.is_finite() && v > 0.0 {
            Ok(v)
        } else {
            Err(cx.err(
                format!("{p}.{key}"),
                format!("expected a positive number, got {v}"),
            ))
        }
    };
    if grp.tfrc.is_some() && !matches!(grp.kind.as_str(), "tfrc" | "dflow") {
        return Err(cx.err(
            format!("{p}.tfrc"),
            "a tfrc table needs kind = \"tfrc\" or \"dflow\"",
        ));
    }
    if grp.mptcp.is_some() && grp.kind != "mptcp" {
        return Err(cx.err(format!("{p}.mptcp"), "an mptcp table needs kind = \"mptcp\""));
    }
    match grp.kind.as_str() {
        "tfrc" | "dflow" => tfrc_kind(cx, grp, p),
        "mptcp" => Ok(GroupKind::Mptcp {
            cc: cc_spec(cx, grp, p)?,
        }),
        "tcp" => {
            if grp.udp.is_some() {
                return Err(cx.err(format!("{p}.udp"), "a udp table needs kind = \"udp\""));
            }
            let closed_loop = match &grp.closed_loop {
                None => None,
                Some(c) => {
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
                            return Err(
                                cx.err(format!("{p}.closed_loop.file_bytes"), "expected a positive size")
                            )
                        }
                        (Some(b), None) => FileSize::Fixed(b),
                        (None, Some(mean)) => {
                            let mean_bytes = positive(mean, "closed_loop.pareto_mean_bytes")?;
                            let shape = c.pareto_shape.unwrap_or(1.2);
                            if !(shape.is_finite() && shape > 1.0) {
                                return Err(cx.err(
                                    format!("{p}.closed_loop.pareto_shape"),
                                    format!("expected a shape > 1 (a finite mean), got {shape}"),
                                ));
                            }
                            FileSize::Pareto { mean_bytes, shape }
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
                    Some((size, c.think_mean_s))
                }
            };
            let cc = cc_spec(cx, grp, p)?;
            Ok(GroupKind::Tcp { cc, closed_loop })
        }
        "udp" => {
            let Some(u) = &grp.udp else {
                return Err(cx.err(format!("{p}.udp"), "kind = \"udp\" needs a udp table, e.g. udp = { pattern = \"poisson\", rate_bps = 5e6, size_bytes = [100, 300] }"));
            };
            if grp.closed_loop.is_some() || grp.size_bytes.is_some() {
                return Err(cx.err(
                    p.to_string(),
                    "UDP sources are open-loop: remove closed_loop and size_bytes",
                ));
            }
            let rate_bps = positive(u.rate_bps, "udp.rate_bps")?;
            let (lo, hi) = (u.size_bytes.min(), u.size_bytes.max());
            if !(lo.is_finite() && hi.is_finite() && lo >= 1.0 && lo <= hi && hi <= 65_000.0) {
                return Err(cx.err(
                    format!("{p}.udp.size_bytes"),
                    "expected a size (or [min, max]) between 1 and 65000 bytes",
                ));
            }
            let (min_bytes, max_bytes) = (lo.round() as u32, hi.round() as u32);
            let mut lrd = None;
            let pattern = match u.pattern.as_str() {
                "cbr" => UdpPattern::Cbr {
                    rate_bps,
                    size_bytes: max_bytes,
                },
                "poisson" => UdpPattern::Poisson {
                    rate_bps,
                    min_bytes,
                    max_bytes,
                },
                "lrd" => {
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
                    let slot_s = positive(u.slot_ms.unwrap_or(10.0), "udp.slot_ms")? / 1e3;
                    // Default a: the variance a Poisson stream of these packets
                    // has at the slot scale (Var = m·Δ·s̄ = a·m·Δ^2H).
                    let mean_size = (min_bytes as f64 + max_bytes as f64) / 2.0;
                    let variance_coef = match u.variance_coef {
                        Some(a) => positive(a, "udp.variance_coef")?,
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
                    lrd = Some(LrdParams {
                        rate_bps,
                        hurst,
                        variance_coef,
                        n_slots,
                    });
                    UdpPattern::PerSlot {
                        bytes_per_slot: Vec::new(),
                        slot_ns,
                        min_bytes,
                        max_bytes,
                    }
                }
                other => {
                    return Err(cx.err(
                        format!("{p}.udp.pattern"),
                        format!("unknown pattern {other:?}; expected \"cbr\", \"poisson\" or \"lrd\""),
                    ))
                }
            };
            Ok(GroupKind::Udp {
                pattern,
                lrd,
                header_bytes: u.header_bytes.unwrap_or(28),
            })
        }
        other => Err(cx.err(
            format!("{p}.kind"),
            format!(
                "unknown flow kind {other:?}; expected \"tcp\", \"udp\", \"tfrc\", \"dflow\" or \"mptcp\""
            ),
        )),
    }
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

/// A TFRC or DFlow group: its config from the optional `tfrc` table over
/// the proto defaults, checked by `TfrcConfig::validate` (one source of
/// truth for the ranges) with the error placed on the key it concerns.
fn tfrc_kind(cx: &Ctx, grp: &FlowGroup, p: &str) -> Result<GroupKind, ScenarioError> {
    let kind = grp.kind.as_str();
    if grp.udp.is_some() {
        return Err(cx.err(format!("{p}.udp"), "a udp table needs kind = \"udp\""));
    }
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
    let dflow = kind == "dflow";
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
        .map_or(tp.clone(), |(_, key)| format!("{tp}.{key}"));
        cx.err(key, m)
    })?;
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
