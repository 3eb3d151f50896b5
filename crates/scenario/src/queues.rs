//! Queue disciplines from their scenario tables.

use crate::ctx::Ctx;
use crate::scenario::{CoDelSpec, DropTailSpec, EdgePacerSpec, QueueSpec, RedSpec, ScenarioError};
use latlab_link::{LinkPacket, LinkQueue};
use latlab_qdisc::{
    CoDel, CoDelParams, DropTail, EdgePacer, EdgePacerParams, Limit, Qdisc, QueuedPacket, Red, RedParams,
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
        QueueSpec::Red(RedSpec {
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
        }) => {
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
            };
            params.validate().map_err(|m| cx.err(path, m))?;
            Box::new(Red::new(params, seed))
        }
        QueueSpec::EdgePacer(EdgePacerSpec {
            limit_bytes,
            limit_packets,
            delay_ms,
        }) => {
            let params = EdgePacerParams {
                delay_bound_ns: cx.ms_to_ns(*delay_ms, &format!("{path}.delay_ms"))?,
                link_rate_bps,
                limit: limit(cx, path, *limit_bytes, *limit_packets, None)?,
            };
            params.validate().map_err(|m| cx.err(path, m))?;
            Box::new(EdgePacer::new(params))
        }
        QueueSpec::Codel(CoDelSpec {
            limit_bytes,
            limit_packets,
            target_ms,
            interval_ms,
            mtu_bytes,
        }) => {
            let params = CoDelParams {
                target_ns: cx.ms_to_ns(*target_ms, &format!("{path}.target_ms"))?,
                interval_ns: cx.ms_to_ns(*interval_ms, &format!("{path}.interval_ms"))?,
                mtu_bytes: *mtu_bytes,
                limit: limit(cx, path, *limit_bytes, *limit_packets, Some(Limit::Packets(1000)))?,
            };
            params.validate().map_err(|m| cx.err(path, m))?;
            Box::new(CoDel::new(params))
        }
    })
}
