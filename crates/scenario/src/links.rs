//! Links and shared access media from their plans: fixed and time-varying
//! rates (traces, schedules, generators), LTE cells and Wi-Fi APs. The
//! simulator and the emulator both build their links here, so a scenario's
//! link gets the same queue, rate and random streams in both.

use crate::ctx::Ctx;
use crate::queues::{make_link_queue, make_qdisc};
use crate::rng::{stream, stream_seed, Stream};
use crate::scenario::{
    ApBufferSpec, ApSpec, CellScheduler, CellSpec, MarkovSpec, PerIntervalSpec, RateSpec, ScenarioError,
};
use crate::topology::{LinkPlan, MediumPlan, MemberPlan, NetPlan};
use latlab_link::lte::{LteConfig, Scheduler};
use latlab_link::wifi::WifiConfig;
use latlab_link::{
    LinkPacket, LinkQueue, LinkRate, LinkService, LteCell, Medium, MediumKind, RateDist, RateSource, Service,
    TraceSchedule, Transmitter, WifiAp,
};
use latlab_qdisc::{DropTail, Limit};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Every link's service (index = the plan's link) and every shared medium
/// (index = the plan's medium), ready for a driver.
pub struct BuiltLinks<P> {
    pub services: Vec<LinkService<P>>,
    pub media: Vec<Medium<P>>,
}

/// Build the links and media of `plan` under scenario `seed`, checking
/// each link's delay, rate and queue in plan order, then the media.
pub fn build<P: LinkPacket>(cx: &Ctx, plan: &NetPlan, seed: u64) -> Result<BuiltLinks<P>, ScenarioError> {
    let mut rates = Rates::new(cx.source, seed);
    let mut services = Vec::with_capacity(plan.links.len());
    for (i, lp) in plan.links.iter().enumerate() {
        services.push(make_service(cx, lp, seed, i as u64, &mut rates)?);
    }
    let media = make_media(cx, plan, &mut services, &mut rates, seed)?;
    Ok(BuiltLinks { services, media })
}

/// Links are named "from->to" by node names; a second link between the
/// same nodes is "from->to#2", and so on.
pub fn link_names(plan: &NetPlan) -> Vec<String> {
    let mut taken = BTreeMap::new();
    let mut names = Vec::with_capacity(plan.links.len());
    for lp in &plan.links {
        let mut name = format!("{}->{}", plan.nodes[lp.src as usize], plan.nodes[lp.dst as usize]);
        if taken.contains_key(&name) {
            let mut k = 2;
            while taken.contains_key(&format!("{name}#{k}")) {
                k += 1;
            }
            name = format!("{name}#{k}");
        }
        taken.insert(name.clone(), ());
        names.push(name);
    }
    names
}

/// The links (plan indices) that are members of medium `mp`, in member order.
pub fn member_links(mp: &MediumPlan) -> Vec<u32> {
    let (MediumPlan::Cell { members, .. } | MediumPlan::Ap { members, .. }) = mp;
    members.iter().map(|m| m.link).collect()
}

fn make_service<P: LinkPacket>(
    cx: &Ctx,
    lp: &LinkPlan,
    seed: u64,
    index: u64,
    rates: &mut Rates,
) -> Result<LinkService<P>, ScenarioError> {
    let delay_ns = cx.ms_to_ns(lp.delay_ms, &lp.key_path.replace("queue", "delay_ms"))?;
    // A member of a shared medium: the medium builds its queue and rate
    // (make_media); the link's own queue is a placeholder that never holds
    // a packet.
    let (service, rate_bps, qdisc) = if lp.medium.is_some() {
        (
            Service::Fixed,
            1,
            LinkQueue::DropTail(DropTail::new(Limit::Packets(1))),
        )
    } else {
        let (service, rate_bps) = link_service(cx, lp, rates, index)?;
        let q = make_link_queue(
            cx,
            &lp.queue,
            &lp.key_path,
            rate_bps,
            stream_seed(seed, Stream::Qdisc, index),
        )?;
        (service, rate_bps, q)
    };
    Ok(LinkService::new(
        LinkRate::Fixed { rate_bps },
        service,
        delay_ns,
        qdisc,
        lp.loss,
        stream(seed, Stream::LinkLoss, index),
    ))
}

/// Where relative trace paths are resolved: the folder of the scenario
/// file when the source names an existing file (a trailing " (modified)",
/// which the Python API appends to edited scenarios, is ignored), else the
/// current directory.
pub fn base_dir(source: &str) -> PathBuf {
    let path = Path::new(source.strip_suffix(" (modified)").unwrap_or(source));
    if path.is_file() {
        path.parent()
            .map(|p| p.to_path_buf())
            .unwrap_or_else(|| PathBuf::from("."))
    } else {
        PathBuf::from(".")
    }
}

/// Builds transmitters, loading each trace file once.
struct Rates {
    base: PathBuf,
    seed: u64,
    traces: BTreeMap<PathBuf, Arc<TraceSchedule>>,
}

impl Rates {
    fn new(source: &str, seed: u64) -> Self {
        Rates {
            base: base_dir(source),
            seed,
            traces: BTreeMap::new(),
        }
    }

    /// A transmitter for `spec` (key path `path`); `index` picks the
    /// generator's random stream (one per link or member).
    fn transmitter(
        &mut self,
        cx: &Ctx,
        spec: &RateSpec,
        path: &str,
        index: u64,
    ) -> Result<Transmitter, ScenarioError> {
        let source = match spec {
            RateSpec::Trace(file) => return self.trace(cx, file, path),
            RateSpec::ConstantBps(r) => RateSource::Constant {
                rate_bps: positive_bps(cx, *r, &format!("{path}.constant_bps"))?,
            },
            RateSpec::Schedule(points) => schedule_source(cx, points, path)?,
            RateSpec::Markov(m) => markov_source(cx, m, path)?,
            RateSpec::PerInterval(pi) => per_interval_source(cx, pi, path)?,
        };
        source.validate().map_err(|m| {
            // The message starts with the offending field (e.g. "schedule[2]: ...").
            match m.split_once(": ") {
                Some((field, rest)) if !field.contains(' ') => cx.err(format!("{path}.{field}"), rest),
                _ => cx.err(path, m.clone()),
            }
        })?;
        Ok(Transmitter::rate(
            source,
            stream_seed(self.seed, Stream::LinkRate, index),
        ))
    }
}

impl Rates {
    /// A transmitter replaying trace `file` (relative to the scenario's
    /// folder), loaded once however many links use it.
    fn trace(&mut self, cx: &Ctx, file: &str, path: &str) -> Result<Transmitter, ScenarioError> {
        let p = Path::new(file);
        let full = if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.base.join(p)
        };
        if let Some(t) = self.traces.get(&full) {
            return Ok(Transmitter::trace(t.clone()));
        }
        let t =
            Arc::new(TraceSchedule::load(&full).map_err(|e| cx.err(format!("{path}.trace"), e.to_string()))?);
        self.traces.insert(full, t.clone());
        Ok(Transmitter::trace(t))
    }
}

/// `{ schedule = [[t_s, rate_bps], ...] }`: piecewise constant.
fn schedule_source(cx: &Ctx, points: &[[f64; 2]], path: &str) -> Result<RateSource, ScenarioError> {
    let mut v = Vec::with_capacity(points.len());
    for (i, [t_s, r]) in points.iter().enumerate() {
        let t = cx.s_to_ns(*t_s, &format!("{path}.schedule[{i}]"))?;
        if !r.is_finite() || *r < 0.0 {
            return Err(cx.err(
                format!("{path}.schedule[{i}]"),
                format!("expected [t_s, rate_bps] with a non-negative rate, got rate {r}"),
            ));
        }
        v.push((t, r.round() as u64));
    }
    Ok(RateSource::Schedule(v.into()))
}

/// `{ markov = { ... } }`: a good/bad channel (a bad rate of 0 is an outage).
fn markov_source(cx: &Ctx, m: &MarkovSpec, path: &str) -> Result<RateSource, ScenarioError> {
    let MarkovSpec {
        good_bps,
        bad_bps,
        mean_good_ms,
        mean_bad_ms,
    } = m;
    let bad = if *bad_bps == 0.0 {
        0
    } else {
        positive_bps(cx, *bad_bps, &format!("{path}.markov.bad_bps"))?
    };
    Ok(RateSource::Markov {
        good_bps: positive_bps(cx, *good_bps, &format!("{path}.markov.good_bps"))?,
        bad_bps: bad,
        mean_good_ns: cx.ms_to_ns(*mean_good_ms, &format!("{path}.markov.mean_good_ms"))?,
        mean_bad_ns: cx.ms_to_ns(*mean_bad_ms, &format!("{path}.markov.mean_bad_ms"))?,
    })
}

/// `{ per_interval = { ... } }`: a rate drawn per interval from exactly one
/// distribution.
fn per_interval_source(cx: &Ctx, spec: &PerIntervalSpec, path: &str) -> Result<RateSource, ScenarioError> {
    let PerIntervalSpec {
        interval_ms,
        uniform_bps,
        lognormal,
        values_bps,
    } = spec;
    let p = format!("{path}.per_interval");
    let dist = match (uniform_bps, lognormal, values_bps) {
        (Some([lo, hi]), None, None) => RateDist::Uniform {
            lo_bps: *lo,
            hi_bps: *hi,
        },
        (None, Some(l), None) => RateDist::LogNormal {
            median_bps: l.median_bps,
            sigma: l.sigma,
        },
        (None, None, Some(v)) => RateDist::Values(v.clone().into()),
        _ => {
            return Err(cx.err(
                p,
                "set exactly one distribution: uniform_bps, lognormal or values_bps",
            ))
        }
    };
    Ok(RateSource::PerInterval {
        interval_ns: cx.ms_to_ns(*interval_ms, &format!("{p}.interval_ms"))?,
        dist,
    })
}

fn positive_bps(cx: &Ctx, r: f64, path: &str) -> Result<u64, ScenarioError> {
    if !r.is_finite() || r.round() < 1.0 {
        return Err(cx.err(
            path,
            format!("expected a positive rate in bits per second, got {r}"),
        ));
    }
    Ok(r.round() as u64)
}

/// The link's service and nominal rate (the fixed rate, or the mean of a
/// time-varying one). A `{ constant_bps }` rate on a plain link is a fixed link.
fn link_service(
    cx: &Ctx,
    lp: &LinkPlan,
    rates: &mut Rates,
    index: u64,
) -> Result<(Service, u64), ScenarioError> {
    match &lp.rate {
        None => {
            let rate_bps = lp.rate_bps.round() as u64;
            if rate_bps == 0 {
                return Err(cx.err(
                    lp.rate_path.clone(),
                    "rate is below 1 bit/s; expected a positive rate in bits per second",
                ));
            }
            Ok((Service::Fixed, rate_bps))
        }
        Some(RateSpec::ConstantBps(r)) => Ok((
            Service::Fixed,
            positive_bps(cx, *r, &format!("{}.constant_bps", lp.rate_path))?,
        )),
        Some(spec) => {
            let tx = rates.transmitter(cx, spec, &lp.rate_path, index)?;
            let nominal = tx.nominal_bps().max(1);
            Ok((Service::Varying(Box::new(tx)), nominal))
        }
    }
}

fn lte_config(cx: &Ctx, c: &CellSpec, path: &str) -> Result<LteConfig, ScenarioError> {
    let scheduler = match c.scheduler {
        CellScheduler::Pf => Scheduler::ProportionalFair {
            window_ttis: c.pf_window_ttis,
        },
        CellScheduler::Rr => Scheduler::RoundRobin,
    };
    let cfg = LteConfig {
        tti_ns: cx.ms_to_ns(c.tti_ms, &format!("{path}.cell.tti_ms"))?,
        resource_blocks: c.resource_blocks,
        scheduler,
        harq_error_prob: c.harq_error_prob,
        harq_rtt_ns: cx.ms_to_ns(c.harq_rtt_ms, &format!("{path}.cell.harq_rtt_ms"))?,
        harq_max_tx: c.harq_max_tx,
        jitter_max_ns: cx.ms_to_ns(c.jitter_ms, &format!("{path}.cell.jitter_ms"))?,
    };
    cfg.validate().map_err(|m| match m.split_once(": ") {
        Some((field, rest)) => cx.err(format!("{path}.cell.{field}"), rest),
        None => cx.err(format!("{path}.cell"), m.clone()),
    })?;
    Ok(cfg)
}

/// Build the shared media and mark their member links.
fn make_media<P: LinkPacket>(
    cx: &Ctx,
    plan: &NetPlan,
    links: &mut [LinkService<P>],
    rates: &mut Rates,
    seed: u64,
) -> Result<Vec<Medium<P>>, ScenarioError> {
    let mut builder = MediaBuilder {
        cx,
        links,
        rates,
        seed,
    };
    let mut media = Vec::new();
    for (m, mp) in plan.media.iter().enumerate() {
        let rng_seed = stream_seed(seed, Stream::Medium, m as u64);
        let (kind, members) = match mp {
            MediumPlan::Cell { spec, path, members } => (
                MediumKind::Cell(builder.cell(spec, path, members, rng_seed)?),
                members,
            ),
            MediumPlan::Ap { spec, path, members } => (
                MediumKind::Ap(builder.ap(m, spec, path, members, rng_seed)?),
                members,
            ),
        };
        for (i, mem) in members.iter().enumerate() {
            builder.links[mem.link as usize].service = Service::Shared {
                medium: m as u32,
                member: i as u32,
            };
        }
        media.push(Medium::new(kind));
    }
    Ok(media)
}

/// Builds each medium from its members' rates and queues, and gives each
/// member link its nominal rate.
struct MediaBuilder<'a, 'c, P> {
    cx: &'a Ctx<'c>,
    links: &'a mut [LinkService<P>],
    rates: &'a mut Rates,
    seed: u64,
}

impl<P: LinkPacket> MediaBuilder<'_, '_, P> {
    /// A member's transmitter (random stream `2^32 + link`, apart from the
    /// plain links' streams).
    fn member_transmitter(&mut self, mem: &MemberPlan) -> Result<Transmitter, ScenarioError> {
        self.rates
            .transmitter(self.cx, &mem.rate, &mem.rate_path, (1 << 32) | mem.link as u64)
    }

    /// An LTE cell: one user (own queue, own rate) per member.
    fn cell(
        &mut self,
        spec: &CellSpec,
        path: &str,
        members: &[MemberPlan],
        rng_seed: u64,
    ) -> Result<LteCell<P>, ScenarioError> {
        let cx = self.cx;
        let mut cell = LteCell::new(lte_config(cx, spec, path)?, rng_seed);
        for mem in members {
            let tx = self.member_transmitter(mem)?;
            let nominal = tx.nominal_bps().max(1);
            let queue = make_qdisc(
                cx,
                &mem.queue,
                &mem.queue_path,
                nominal,
                stream_seed(self.seed, Stream::Qdisc, mem.link as u64),
            )?;
            cell.add_user(queue, tx);
            self.links[mem.link as usize].rate = LinkRate::Fixed { rate_bps: nominal };
        }
        Ok(cell)
    }

    /// A Wi-Fi AP (medium `m`): one station per member, behind one shared
    /// queue or a queue each.
    fn ap(
        &mut self,
        m: usize,
        spec: &ApSpec,
        path: &str,
        members: &[MemberPlan],
        rng_seed: u64,
    ) -> Result<WifiAp<P>, ScenarioError> {
        let cx = self.cx;
        let cfg = wifi_config(cx, spec, path)?;
        let mut nominal_max = 1;
        let mut txs = Vec::new();
        for mem in members {
            let tx = self.member_transmitter(mem)?;
            nominal_max = nominal_max.max(tx.nominal_bps());
            self.links[mem.link as usize].rate = LinkRate::Fixed {
                rate_bps: tx.nominal_bps().max(1),
            };
            txs.push(tx);
        }
        let queue_path = format!("{path}.ap.queue");
        let mut ap = match spec.buffer {
            ApBufferSpec::Shared => {
                let seed = stream_seed(self.seed, Stream::Qdisc, (1 << 32) | m as u64);
                WifiAp::new(
                    cfg,
                    make_qdisc(cx, &spec.queue, &queue_path, nominal_max, seed)?,
                    rng_seed,
                )
            }
            ApBufferSpec::PerStation => WifiAp::per_station(cfg, rng_seed),
        };
        for (tx, mem) in txs.into_iter().zip(members) {
            // Each station's own queue draws from its link's stream, as a cell user's does.
            let own = match spec.buffer {
                ApBufferSpec::Shared => None,
                ApBufferSpec::PerStation => Some(make_qdisc(
                    cx,
                    &spec.queue,
                    &queue_path,
                    tx.nominal_bps().max(1),
                    stream_seed(self.seed, Stream::Qdisc, mem.link as u64),
                )?),
            };
            ap.add_station(tx, mem.frame_error_prob, own)
                .map_err(|msg| cx.err(format!("{path}.frame_error_prob"), msg))?;
        }
        Ok(ap)
    }
}

fn wifi_config(cx: &Ctx, spec: &ApSpec, path: &str) -> Result<WifiConfig, ScenarioError> {
    let cfg = WifiConfig {
        slot_ns: cx.ms_to_ns(spec.slot_us / 1e3, &format!("{path}.ap.slot_us"))?,
        cw_min: spec.cw_min,
        cw_max: spec.cw_max,
        max_attempts: spec.max_attempts,
    };
    cfg.validate().map_err(|msg| match msg.split_once(": ") {
        Some((field, rest)) => cx.err(format!("{path}.ap.{field}"), rest),
        None => cx.err(format!("{path}.ap"), msg.clone()),
    })?;
    Ok(cfg)
}
