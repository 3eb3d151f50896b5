//! Queue disciplines from their scenario tables.

use crate::ctx::Ctx;
use crate::scenario::{
    CoDelSpec, DropTailSpec, EdgePacerSpec, FqCoDelSpec, PieSpec, QueueSpec, RedSpec, ScenarioError,
};
use latlab_link::{LinkPacket, LinkQueue};
use latlab_qdisc::{
    CoDel, CoDelParams, DropTail, EdgePacer, EdgePacerParams, FqCoDel, FqCoDelParams, Limit, Pie, PieParams,
    Qdisc, QueuedPacket, Red, RedParams, FQ_CODEL_MAX_FLOWS,
};

pub fn limit(
    cx: &Ctx,
    path: &str,
    bytes: Option<u64>,
    packets: Option<u64>,
    default: Option<Limit>,
) -> Result<Limit, ScenarioError> {
    match (bytes, packets) {
        (Some(_), Some(_)) => Err(cx.err(path, "set either limit_bytes or limit_packets, not both")),
        (Some(0), None) => Err(cx.err(
            format!("{path}.limit_bytes"),
            "expected a positive buffer size in bytes",
        )),
        (None, Some(0)) => Err(cx.err(
            format!("{path}.limit_packets"),
            "expected a positive buffer size in packets",
        )),
        (Some(b), None) => Ok(Limit::Bytes(b)),
        (None, Some(p)) => Ok(Limit::Packets(p)),
        (None, None) => {
            default.ok_or_else(|| cx.err(path, "missing buffer size; expected limit_bytes or limit_packets"))
        }
    }
}

/// A link's queue: DropTail inline (the hot path's common case), any other
/// discipline boxed.
pub fn make_link_queue<P: LinkPacket>(
    cx: &Ctx,
    q: &QueueSpec,
    path: &str,
    link_rate_bps: u64,
    seed: u64,
) -> Result<LinkQueue<P>, ScenarioError> {
    Ok(match q {
        QueueSpec::Droptail(DropTailSpec {
            limit_bytes,
            limit_packets,
        }) => LinkQueue::DropTail(DropTail::new(limit(
            cx,
            path,
            *limit_bytes,
            *limit_packets,
            None,
        )?)),
        _ => make_qdisc(cx, q, path, link_rate_bps, seed)?.into(),
    })
}

/// A queue discipline for any packet handle (the simulator's `PacketRef`,
/// or a Wi-Fi AP's station-tagged one).
pub fn make_qdisc<P: QueuedPacket + Send + 'static>(
    cx: &Ctx,
    q: &QueueSpec,
    path: &str,
    link_rate_bps: u64,
    seed: u64,
) -> Result<Box<dyn Qdisc<P>>, ScenarioError> {
    Ok(match q {
        QueueSpec::Droptail(DropTailSpec {
            limit_bytes,
            limit_packets,
        }) => Box::new(DropTail::new(limit(
            cx,
            path,
            *limit_bytes,
            *limit_packets,
            None,
        )?)),
        QueueSpec::Red(spec) => Box::new(red(cx, spec, path, link_rate_bps, seed)?),
        QueueSpec::EdgePacer(spec) => Box::new(edge_pacer(cx, spec, path, link_rate_bps)?),
        QueueSpec::Codel(spec) => Box::new(codel(cx, spec, path)?),
        QueueSpec::FqCodel(spec) => Box::new(fq_codel(cx, spec, path, seed)?),
        QueueSpec::Pie(spec) => Box::new(pie(cx, spec, path, seed)?),
    })
}

fn red<P: QueuedPacket + Send>(
    cx: &Ctx,
    spec: &RedSpec,
    path: &str,
    link_rate_bps: u64,
    seed: u64,
) -> Result<Red<P>, ScenarioError> {
    let RedSpec {
        limit_bytes,
        limit_packets,
        min_th,
        max_th,
        max_p,
        w_q,
        gentle,
        byte_mode,
        mean_pkt_size_bytes,
        wait,
        ecn,
    } = spec;
    let params = RedParams {
        limit: limit(cx, path, *limit_bytes, *limit_packets, None)?,
        min_th: *min_th,
        max_th: *max_th,
        max_p: *max_p,
        w_q: *w_q,
        gentle: *gentle,
        byte_mode: *byte_mode,
        mean_pkt_size_bytes: *mean_pkt_size_bytes,
        link_rate_bps,
        wait: *wait,
        ecn: *ecn,
    };
    params.validate().map_err(|m| cx.err(path, m))?;
    Ok(Red::new(params, seed))
}

fn edge_pacer<P: QueuedPacket + Send>(
    cx: &Ctx,
    spec: &EdgePacerSpec,
    path: &str,
    link_rate_bps: u64,
) -> Result<EdgePacer<P>, ScenarioError> {
    let params = EdgePacerParams {
        delay_bound_ns: cx.ms_to_ns(spec.delay_ms, &format!("{path}.delay_ms"))?,
        link_rate_bps,
        limit: limit(cx, path, spec.limit_bytes, spec.limit_packets, None)?,
    };
    params.validate().map_err(|m| cx.err(path, m))?;
    Ok(EdgePacer::new(params))
}

fn codel<P: QueuedPacket + Send>(cx: &Ctx, spec: &CoDelSpec, path: &str) -> Result<CoDel<P>, ScenarioError> {
    let params = CoDelParams {
        target_ns: cx.ms_to_ns(spec.target_ms, &format!("{path}.target_ms"))?,
        interval_ns: cx.ms_to_ns(spec.interval_ms, &format!("{path}.interval_ms"))?,
        mtu_bytes: spec.mtu_bytes,
        limit: limit(
            cx,
            path,
            spec.limit_bytes,
            spec.limit_packets,
            Some(Limit::Packets(1000)),
        )?,
        ecn: spec.ecn,
    };
    params.validate().map_err(|m| cx.err(path, m))?;
    Ok(CoDel::new(params))
}

fn fq_codel<P: QueuedPacket + Send>(
    cx: &Ctx,
    spec: &FqCoDelSpec,
    path: &str,
    seed: u64,
) -> Result<FqCoDel<P>, ScenarioError> {
    if spec.flows == 0 || spec.flows > FQ_CODEL_MAX_FLOWS {
        return Err(cx.err(
            format!("{path}.flows"),
            format!("expected a number of flow queues from 1 to {FQ_CODEL_MAX_FLOWS}"),
        ));
    }
    if spec.quantum_bytes == 0 {
        return Err(cx.err(
            format!("{path}.quantum_bytes"),
            "expected a positive DRR quantum in bytes (Linux: 1514)",
        ));
    }
    let params = FqCoDelParams {
        flows: spec.flows,
        quantum_bytes: spec.quantum_bytes,
        limit: limit(
            cx,
            path,
            spec.limit_bytes,
            spec.limit_packets,
            Some(Limit::Packets(10_240)),
        )?,
        target_ns: cx.ms_to_ns(spec.target_ms, &format!("{path}.target_ms"))?,
        interval_ns: cx.ms_to_ns(spec.interval_ms, &format!("{path}.interval_ms"))?,
        mtu_bytes: spec.mtu_bytes,
        ecn: spec.ecn,
    };
    params.validate().map_err(|m| cx.err(path, m))?;
    Ok(FqCoDel::new(params, seed))
}

fn pie<P: QueuedPacket + Send>(
    cx: &Ctx,
    spec: &PieSpec,
    path: &str,
    seed: u64,
) -> Result<Pie<P>, ScenarioError> {
    for (key, v) in [("alpha", spec.alpha), ("beta", spec.beta)] {
        if !(v.is_finite() && v >= 0.0) {
            return Err(cx.err(
                format!("{path}.{key}"),
                format!("expected a finite gain ≥ 0 in Hz (RFC 8033: alpha 0.125, beta 1.25), got {v}"),
            ));
        }
    }
    for (key, v) in [("target_ms", spec.target_ms), ("t_update_ms", spec.t_update_ms)] {
        if v.is_finite() && v <= 0.0 {
            return Err(cx.err(
                format!("{path}.{key}"),
                format!("expected a positive number of milliseconds (RFC 8033: 15), got {v}"),
            ));
        }
    }
    let params = PieParams {
        target_ns: cx.ms_to_ns(spec.target_ms, &format!("{path}.target_ms"))?,
        t_update_ns: cx.ms_to_ns(spec.t_update_ms, &format!("{path}.t_update_ms"))?,
        alpha: spec.alpha,
        beta: spec.beta,
        max_burst_ns: cx.ms_to_ns(spec.max_burst_ms, &format!("{path}.max_burst_ms"))?,
        mean_pkt_size_bytes: spec.mean_pkt_size_bytes,
        limit: limit(
            cx,
            path,
            spec.limit_bytes,
            spec.limit_packets,
            Some(Limit::Packets(1000)),
        )?,
        ecn: spec.ecn,
    };
    params.validate().map_err(|m| cx.err(path, m))?;
    Ok(Pie::new(params, seed))
}
