//! A `tcp` table checked once, for every driver: the preset, then the keys
//! a scenario sets, as the proto crate's [`TcpConfig`] (whose `validate`
//! holds the ranges), and the receiver's window controller. The simulator
//! builds its senders from these; the real-flow planner (latlab-net)
//! calls the same two functions so that a bad key is refused the same way
//! before a kernel socket sees it.

use crate::ctx::Ctx;
use crate::scenario::{LossRecovery, RwndController, ScenarioError, TcpPreset, TcpSpec};
use latlab_proto::tcp::{DelayedAck, Pacing, Recovery, RwndSpec, RwndSpecError, TcpConfig};

/// TCP configuration: preset, then the fields the scenario sets.
pub fn tcp_config(cx: &Ctx, s: &TcpSpec, path: &str) -> Result<TcpConfig, ScenarioError> {
    let mut c = match s.preset.unwrap_or(TcpPreset::Ns2) {
        TcpPreset::Ns2 => TcpConfig::ns2(),
        TcpPreset::Linux => TcpConfig::linux(),
    };
    set_segments_and_recovery(&mut c, s);
    if let Some(v) = s.min_rto_ms {
        c.min_rto_ns = cx.ms_to_ns(v, &format!("{path}.min_rto_ms"))?;
    }
    if let Some(v) = s.initial_rto_ms {
        c.initial_rto_ns = cx.ms_to_ns(v, &format!("{path}.initial_rto_ms"))?;
    }
    c.delayed_ack = delayed_ack(cx, s, path, c.delayed_ack.take())?;
    if let Some(v) = s.rwnd_bytes {
        c.rwnd_bytes = v;
    }
    c.pacing = pacing(s, c.pacing.take());
    set_switches(&mut c, s);
    c.validate().map_err(|m| cx.err(path, m))?;
    if c.recovery.uses_sack() && !c.sack {
        let msg = format!("recovery = \"{}\" needs sack = true", c.recovery.name());
        return Err(cx.err(format!("{path}.sack"), msg));
    }
    Ok(c)
}

/// Segment and header sizes, the initial window, loss recovery (SACK-based
/// recovery turns SACK on unless `sack` says otherwise) and timestamps.
fn set_segments_and_recovery(c: &mut TcpConfig, s: &TcpSpec) {
    if let Some(v) = s.mss_bytes {
        c.mss_bytes = v;
    }
    if let Some(v) = s.header_bytes {
        c.header_bytes = v;
    }
    if let Some(v) = s.initial_window_segments {
        c.initial_window_segments = v;
    }
    if let Some(r) = s.recovery {
        c.recovery = match r {
            LossRecovery::NewReno => Recovery::NewReno,
            LossRecovery::Sack => {
                c.sack = true;
                Recovery::Sack
            }
            LossRecovery::Fack => {
                c.sack = true;
                Recovery::Fack
            }
        };
    }
    if let Some(v) = s.sack {
        c.sack = v;
    }
    if let Some(v) = s.timestamps {
        c.timestamps = v;
    }
}

/// Delayed ACKs: the preset's, switched on (every 2nd segment,
/// 200 ms, unless the preset has its own) or off, then its keys.
fn delayed_ack(
    cx: &Ctx,
    s: &TcpSpec,
    path: &str,
    dack: Option<DelayedAck>,
) -> Result<Option<DelayedAck>, ScenarioError> {
    let default = DelayedAck {
        segments: 2,
        timeout_ns: 200_000_000,
    };
    let mut dack = switched(s.delayed_ack, dack, default);
    if let Some(d) = dack.as_mut() {
        if let Some(n) = s.delayed_ack_segments {
            d.segments = n;
        }
        if let Some(ms) = s.delayed_ack_timeout_ms {
            d.timeout_ns = cx.ms_to_ns(ms, &format!("{path}.delayed_ack_timeout_ms"))?;
        }
    }
    Ok(dack)
}

/// Pacing: the preset's, switched on (factors 1, unless the preset has its
/// own) or off, then its factors.
fn pacing(s: &TcpSpec, pacing: Option<Pacing>) -> Option<Pacing> {
    let default = Pacing {
        ss_factor: 1.0,
        ca_factor: 1.0,
    };
    let mut pacing = switched(s.pacing, pacing, default);
    if let Some(p) = pacing.as_mut() {
        if let Some(f) = s.pacing_ss_factor {
            p.ss_factor = f;
        }
        if let Some(f) = s.pacing_ca_factor {
            p.ca_factor = f;
        }
    }
    pacing
}

/// A feature a key switches on (keeping the preset's settings, else
/// `default`) or off; unchanged when the key is unset.
fn switched<T>(on: Option<bool>, current: Option<T>, default: T) -> Option<T> {
    match on {
        Some(true) => Some(current.unwrap_or(default)),
        Some(false) => None,
        None => current,
    }
}

/// The sender's on/off behaviours (idle restart, RFC 6675's rescue
/// retransmission, RTO and ssthresh variants) and ECN.
fn set_switches(c: &mut TcpConfig, s: &TcpSpec) {
    if let Some(v) = s.idle_restart {
        c.idle_restart = v;
    }
    if let Some(v) = s.rescue_retransmission {
        c.rescue_retransmission = v;
    }
    if let Some(v) = s.rto_restart_on_fast_retransmit {
        c.rto_restart_on_fast_retransmit = v;
    }
    if let Some(v) = s.ssthresh_from_pipe {
        c.ssthresh_from_pipe = v;
    }
    if let Some(v) = s.rto_backoff_reset_on_ack {
        c.rto_backoff_reset_on_ack = v;
    }
    if let Some(v) = s.window_from_pipe {
        c.window_from_pipe = v;
    }
    if let Some(v) = s.ecn {
        c.ecn = v;
    }
}

/// The receiver-window controller a TCP table chooses (`rwnd_controller`,
/// `rwnd_params`), checked once; "fixed" (the `rwnd_bytes` window) when unset.
pub fn rwnd_spec(cx: &Ctx, s: &TcpSpec, path: &str) -> Result<RwndSpec, ScenarioError> {
    let name = s.rwnd_controller.unwrap_or(RwndController::Fixed).name();
    let params: Vec<(String, f64)> = s
        .rwnd_params
        .iter()
        .flatten()
        .map(|(k, v)| (k.clone(), *v))
        .collect();
    let spec = RwndSpec::parse(name, &params).map_err(|e| match e {
        RwndSpecError::UnknownController(_) => cx.err(format!("{path}.rwnd_controller"), e.to_string()),
        RwndSpecError::Param(m) => cx.err(format!("{path}.rwnd_params"), m),
    })?;
    if s.rwnd_bytes.is_some() && !matches!(spec, RwndSpec::Fixed(_)) {
        return Err(cx.err(
            format!("{path}.rwnd_bytes"),
            format!(
                "rwnd_bytes sets the fixed receiver's window; with rwnd_controller = {name:?} \
                 bound the window with rwnd_params.rmem_max_bytes (and initial_rwnd_bytes) instead"
            ),
        ));
    }
    Ok(spec)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The scenario's controller names are the proto's, so every name the
    /// parser accepts builds a controller.
    #[test]
    fn every_rwnd_controller_name_is_the_protos() {
        assert_eq!(RwndController::ACCEPTED, RwndSpec::NAMES);
    }
}
