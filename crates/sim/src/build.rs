//! Build a [`Simulation`] from a parsed [`Scenario`], validating everything a
//! user can get wrong and naming the key path in each error.

use crate::fgn;
use crate::flow::{make_cc, ClosedLoop, Flow, TcpFlow, TfrcFlow, TimerSlot, Transport, UdpFlow};
use crate::network::{Link, LinkCounters, LinkRate, Node};
use crate::packet::PacketRef;
use crate::pcap::PcapWriter;
use crate::rng::{stream, stream_seed, Stream};
use crate::routing::{self, Graph};
use crate::scenario::FlowGroup;
use crate::scenario::{
    CoDelSpec, DropTailSpec, EdgePacerSpec, QueueSpec, RedSpec, Scenario, ScenarioError, StartDist,
    StartSpec, TcpSpec,
};
use crate::sim::Simulation;
use crate::topology::{self, LinkPlan};
use crate::traffic::{FileSize, UdpPattern, UdpSource, UserDraws};
use latlab_proto::cc;
use latlab_proto::tcp::{DelayedAck, FixedRwnd, Pacing, Recovery, TcpConfig, TcpReceiver, TcpSender};
use latlab_proto::tfrc::{DflowParams, TfrcConfig, TfrcMode, TfrcReceiver, TfrcSender};
use latlab_qdisc::{CoDel, CoDelParams, DropTail, EdgePacer, EdgePacerParams, Limit, Qdisc, Red, RedParams};
use rand::Rng;
use rand_distr::{Distribution, Exp};
use std::collections::{BTreeMap, VecDeque};
use std::path::Path;

/// Flows whose time series are kept when the scenario does not say.
const DEFAULT_MAX_SAMPLED_FLOWS: u32 = 100;
/// Topologies with at most this many links sample them all by default;
/// larger ones sample only their key (core and edge) links.
const SAMPLE_ALL_LINKS_UP_TO: usize = 64;

struct Ctx<'a> {
    source: &'a str,
}

impl Ctx<'_> {
    fn err(&self, path: impl Into<String>, message: impl Into<String>) -> ScenarioError {
        ScenarioError {
            source_name: self.source.to_string(),
            path: path.into(),
            message: message.into(),
        }
    }

    /// Milliseconds (finite, ≥ 0) to integer nanoseconds.
    fn ms_to_ns(&self, ms: f64, path: &str) -> Result<u64, ScenarioError> {
        self.s_to_ns(ms / 1e3, path).map_err(|mut e| {
            e.message = e.message.replace("seconds", "milliseconds");
            e
        })
    }

    fn s_to_ns(&self, s: f64, path: &str) -> Result<u64, ScenarioError> {
        if !s.is_finite() || s < 0.0 {
            return Err(self.err(
                path,
                format!("expected a non-negative number of seconds, got {s}"),
            ));
        }
        if s > 1e9 {
            return Err(self.err(path, format!("{s} seconds is too long (at most 1e9)")));
        }
        Ok((s * 1e9).round() as u64)
    }
}

/// Build the simulation. `outdir` receives pcap files (the current directory if None).
pub fn build(sc: &Scenario, source: &str, outdir: Option<&Path>) -> Result<Simulation, ScenarioError> {
    let cx = Ctx { source };
    let duration_ns = cx.s_to_ns(sc.duration_s, "duration_s")?;
    if duration_ns == 0 {
        return Err(cx.err("duration_s", "expected a positive duration in seconds"));
    }
    let sample_interval_ns = cx.ms_to_ns(sc.sample_interval_ms, "sample_interval_ms")?;
    let measure_from_ns = cx.s_to_ns(sc.measure_from_s, "measure_from_s")?;
    if measure_from_ns >= duration_ns {
        return Err(cx.err(
            "measure_from_s",
            format!("must be less than duration_s ({})", sc.duration_s),
        ));
    }

    // Network.
    let plan = topology::expand(&sc.topology, sc.seed, source)?;
    let nodes: Vec<Node> = plan.nodes.iter().map(|n| Node { name: n.clone() }).collect();
    let node_index: BTreeMap<&str, u32> = plan
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.as_str(), i as u32))
        .collect();
    let mut links = Vec::with_capacity(plan.links.len());
    let mut link_names = BTreeMap::new();
    let sample_all = plan.links.len() <= SAMPLE_ALL_LINKS_UP_TO;
    for (i, lp) in plan.links.iter().enumerate() {
        let mut name = format!("{}->{}", plan.nodes[lp.src as usize], plan.nodes[lp.dst as usize]);
        if link_names.contains_key(&name) {
            let mut k = 2;
            while link_names.contains_key(&format!("{name}#{k}")) {
                k += 1;
            }
            name = format!("{name}#{k}");
        }
        link_names.insert(name.clone(), i as u32);
        links.push(make_link(&cx, lp, name, sc.seed, i as u64, sample_all)?);
    }
    for (i, pname) in sc.outputs.pcap.iter().enumerate() {
        let Some(&li) = link_names.get(pname) else {
            return Err(cx.err(
                format!("outputs.pcap[{i}]"),
                format!(
                    "unknown link {pname:?}; links are named \"from->to\" by node names, e.g. {:?}",
                    links.first().map(|l: &Link| l.name.as_str()).unwrap_or("a->b")
                ),
            ));
        };
        let dir = outdir.unwrap_or(Path::new("."));
        let file = dir.join(format!("{}.pcap", pname.replace("->", "_to_").replace('#', "_")));
        let writer = PcapWriter::create(&file).map_err(|e| {
            cx.err(
                format!("outputs.pcap[{i}]"),
                format!("cannot create {}: {e}", file.display()),
            )
        })?;
        links[li as usize].pcap = Some(Box::new(writer));
    }

    // Routing: one shortest-path tree per distinct destination.
    let graph_links: Vec<(u32, u32, u64)> = links.iter().map(|l| (l.src, l.dst, l.delay_ns)).collect();
    let link_dst: Vec<u32> = links.iter().map(|l| l.dst).collect();
    let graph = Graph::new(nodes.len(), &graph_links);
    let mut trees: BTreeMap<u32, Vec<Option<u32>>> = BTreeMap::new();
    let mut route = |src: u32, dst: u32| -> Option<Vec<u32>> {
        let next = trees.entry(dst).or_insert_with(|| graph.next_links_to(dst));
        routing::path(next, &link_dst, src, dst)
    };

    // Flows.
    let max_sampled = sc.outputs.max_sampled_flows.unwrap_or(DEFAULT_MAX_SAMPLED_FLOWS);
    let mut flows = Vec::new();
    let mut group_names = Vec::new();
    for (g, grp) in sc.flows.iter().enumerate() {
        let p = format!("flows[{g}]");
        if grp.count == 0 {
            return Err(cx.err(format!("{p}.count"), "expected at least 1 flow"));
        }
        let tcp_spec = sc.tcp.overlay(&grp.tcp);
        let cfg = tcp_config(&cx, &tcp_spec, &format!("{p}.tcp"))?;
        let kind = group_kind(&cx, grp, &p, sc.duration_s)?;
        if let GroupKind::Tcp { params, .. } = &kind {
            if cc::by_name(&grp.cc, cfg.mss_bytes as u64).is_none() {
                return Err(cx.err(
                    format!("{p}.cc"),
                    format!(
                        "unknown congestion control {:?}; expected one of {}",
                        grp.cc,
                        cc::CONTROLLERS.join(", ")
                    ),
                ));
            }
            cc::build(&grp.cc, cfg.mss_bytes as u64, params)
                .map_err(|m| cx.err(format!("{p}.cc_params"), m))?;
        }
        if grp.size_bytes == Some(0) {
            return Err(cx.err(
                format!("{p}.size_bytes"),
                "expected a positive size in bytes (omit it for a long-lived flow)",
            ));
        }
        let starts = start_times(
            &cx,
            &grp.start_s,
            grp.count,
            sc.seed,
            g as u64,
            &format!("{p}.start_s"),
        )?;
        group_names.push(grp.name.clone());
        for i in 0..grp.count {
            let index = grp.first_index as u64 + i as u64;
            let resolve = |pattern: &str, key: &str| -> Result<u32, ScenarioError> {
                let name = pattern.replace("{i}", &index.to_string());
                node_index.get(name.as_str()).copied().ok_or_else(|| {
                    let how = if pattern.contains("{i}") {
                        format!(" (from {pattern:?} with i = {index})")
                    } else {
                        String::new()
                    };
                    cx.err(
                        format!("{p}.{key}"),
                        format!("unknown node {name:?}{how}; expected a node of the topology"),
                    )
                })
            };
            let (src, dst) = (resolve(&grp.src, "src")?, resolve(&grp.dst, "dst")?);
            if src == dst {
                return Err(cx.err(format!("{p}.dst"), "source and destination are the same node"));
            }
            let unroutable = |a: u32, b: u32| {
                cx.err(
                    p.clone(),
                    format!(
                        "no route from {:?} to {:?}; the topology does not connect them",
                        nodes[a as usize].name, nodes[b as usize].name
                    ),
                )
            };
            let fwd = route(src, dst).ok_or_else(|| unroutable(src, dst))?;
            let flow_id = flows.len() as u32;
            let (transport, header_bytes, rev_path) = match &kind {
                GroupKind::Tcp { params, closed_loop } => {
                    let cc = make_cc(&grp.cc, cfg.mss_bytes, params);
                    let closed_loop = closed_loop.as_ref().map(|(size, think_mean_s)| ClosedLoop {
                        draws: UserDraws {
                            size: *size,
                            think_mean_s: *think_mean_s,
                            rng: stream(sc.seed, Stream::Users, flow_id as u64),
                        },
                        cfg: cfg.clone(),
                        cc_params: params.clone(),
                        transfers: Vec::new(),
                        current_start_ns: 0,
                        current_size_bytes: 0,
                        past_bytes_delivered: 0,
                        past_sender: Default::default(),
                    });
                    // A closed-loop user's first file is drawn at its start.
                    let app_bytes = match &closed_loop {
                        Some(_) => Some(1),
                        None => grp.size_bytes,
                    };
                    let tcp = TcpFlow {
                        sender: TcpSender::new(cfg.clone(), cc, app_bytes),
                        receiver: TcpReceiver::new(cfg.clone(), Box::new(FixedRwnd(cfg.rwnd_bytes))),
                        sender_timer: TimerSlot::default(),
                        receiver_timer: TimerSlot::default(),
                        closed_loop,
                    };
                    let rev = route(dst, src).ok_or_else(|| unroutable(dst, src))?;
                    (Transport::Tcp(tcp), cfg.header_bytes, rev)
                }
                GroupKind::Udp {
                    pattern,
                    lrd,
                    header_bytes,
                } => {
                    let mut pattern = pattern.clone();
                    if let (
                        Some(l),
                        UdpPattern::PerSlot {
                            bytes_per_slot,
                            slot_ns,
                            ..
                        },
                    ) = (lrd, &mut pattern)
                    {
                        // Its own stream, so the slot draw never shifts the packet-size draws.
                        let mut rng = stream(sc.seed, Stream::UdpSource, (1 << 32) | flow_id as u64);
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
                    let source =
                        UdpSource::new(pattern, stream(sc.seed, Stream::UdpSource, flow_id as u64), 0);
                    let udp = UdpFlow {
                        source,
                        timer: TimerSlot::default(),
                        received_pkts: 0,
                        received_bytes: 0,
                        owd_sum_ns: 0,
                        owd_max_ns: 0,
                    };
                    (Transport::Udp(udp), *header_bytes, Vec::new())
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
                    let rev = route(dst, src).ok_or_else(|| unroutable(dst, src))?;
                    (Transport::Tfrc(tfrc), *header_bytes, rev)
                }
            };
            flows.push(Flow {
                group: g as u32,
                src,
                dst,
                cc_name: match kind {
                    GroupKind::Udp { .. } => "udp".to_string(),
                    // "tfrc" or "dflow": the rate law is the kind.
                    GroupKind::Tfrc { .. } => grp.kind.clone(),
                    GroupKind::Tcp { .. } => grp.cc.clone(),
                },
                start_ns: starts[i as usize],
                size_bytes: grp.size_bytes,
                transport,
                fwd_path: fwd.into_boxed_slice(),
                rev_path: rev_path.into_boxed_slice(),
                header_bytes,
                conn: 0,
                started: false,
                window_start_delivered: 0,
                window_start_sent: 0,
                sampled: flow_id < max_sampled,
            });
        }
    }
    Ok(Simulation::new(
        sc.name.clone(),
        sc.seed,
        duration_ns,
        sample_interval_ns,
        measure_from_ns,
        nodes,
        links,
        flows,
        group_names,
    ))
}

fn make_link(
    cx: &Ctx,
    lp: &LinkPlan,
    name: String,
    seed: u64,
    index: u64,
    sample_all: bool,
) -> Result<Link, ScenarioError> {
    let rate_bps = lp.rate_bps.round() as u64;
    if rate_bps == 0 {
        return Err(cx.err(
            lp.key_path.replace(".queue", ".rate_bps"),
            "rate is below 1 bit/s; expected a positive rate in bits per second",
        ));
    }
    let delay_ns = cx.ms_to_ns(lp.delay_ms, &lp.key_path.replace("queue", "delay_ms"))?;
    let qdisc = make_qdisc(
        cx,
        &lp.queue,
        &lp.key_path,
        rate_bps,
        stream_seed(seed, Stream::Qdisc, index),
    )?;
    Ok(Link {
        name,
        src: lp.src,
        dst: lp.dst,
        rate: LinkRate::Fixed { rate_bps },
        delay_ns,
        qdisc,
        loss_prob: lp.loss,
        loss_rng: stream(seed, Stream::LinkLoss, index),
        busy_until_ns: 0,
        tx_scheduled: false,
        wake_at: None,
        wire: VecDeque::new(),
        counters: LinkCounters::default(),
        window_start_departures_bytes: 0,
        pcap: None,
        sampled: sample_all || lp.key_link,
    })
}

fn limit(
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

fn make_qdisc(
    cx: &Ctx,
    q: &QueueSpec,
    path: &str,
    link_rate_bps: u64,
    seed: u64,
) -> Result<Box<dyn Qdisc<PacketRef>>, ScenarioError> {
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

/// TCP configuration: preset, then the fields the scenario sets.
fn tcp_config(cx: &Ctx, s: &TcpSpec, path: &str) -> Result<TcpConfig, ScenarioError> {
    let mut c = match s.preset.as_deref() {
        None | Some("ns2") => TcpConfig::ns2(),
        Some("linux") => TcpConfig::linux(),
        Some(other) => {
            return Err(cx.err(
                format!("{path}.preset"),
                format!("unknown preset {other:?}; expected \"ns2\" or \"linux\""),
            ))
        }
    };
    if let Some(v) = s.mss_bytes {
        c.mss_bytes = v;
    }
    if let Some(v) = s.header_bytes {
        c.header_bytes = v;
    }
    if let Some(v) = s.initial_window_segments {
        c.initial_window_segments = v;
    }
    if let Some(r) = s.recovery.as_deref() {
        c.recovery = match r {
            "newreno" => Recovery::NewReno,
            "sack" => {
                c.sack = true;
                Recovery::Sack
            }
            other => {
                return Err(cx.err(
                    format!("{path}.recovery"),
                    format!("unknown recovery {other:?}; expected \"newreno\" or \"sack\""),
                ))
            }
        };
    }
    if let Some(v) = s.sack {
        c.sack = v;
    }
    if let Some(v) = s.timestamps {
        c.timestamps = v;
    }
    if let Some(v) = s.min_rto_ms {
        c.min_rto_ns = cx.ms_to_ns(v, &format!("{path}.min_rto_ms"))?;
    }
    if let Some(v) = s.initial_rto_ms {
        c.initial_rto_ns = cx.ms_to_ns(v, &format!("{path}.initial_rto_ms"))?;
    }
    let mut dack = c.delayed_ack;
    if let Some(on) = s.delayed_ack {
        dack = if on {
            Some(dack.unwrap_or(DelayedAck {
                segments: 2,
                timeout_ns: 200_000_000,
            }))
        } else {
            None
        };
    }
    if let Some(d) = dack.as_mut() {
        if let Some(n) = s.delayed_ack_segments {
            d.segments = n;
        }
        if let Some(ms) = s.delayed_ack_timeout_ms {
            d.timeout_ns = cx.ms_to_ns(ms, &format!("{path}.delayed_ack_timeout_ms"))?;
        }
    }
    c.delayed_ack = dack;
    if let Some(v) = s.rwnd_bytes {
        c.rwnd_bytes = v;
    }
    let mut pacing = c.pacing;
    if let Some(on) = s.pacing {
        pacing = if on {
            Some(pacing.unwrap_or(Pacing {
                ss_factor: 1.0,
                ca_factor: 1.0,
            }))
        } else {
            None
        };
    }
    if let Some(p) = pacing.as_mut() {
        if let Some(f) = s.pacing_ss_factor {
            p.ss_factor = f;
        }
        if let Some(f) = s.pacing_ca_factor {
            p.ca_factor = f;
        }
    }
    c.pacing = pacing;
    if let Some(v) = s.idle_restart {
        c.idle_restart = v;
    }
    c.validate().map_err(|m| cx.err(path, m))?;
    if c.recovery == Recovery::Sack && !c.sack {
        return Err(cx.err(format!("{path}.sack"), "recovery = \"sack\" needs sack = true"));
    }
    Ok(c)
}

fn start_times(
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

/// What a flow group is, resolved and validated.
enum GroupKind {
    Tcp {
        params: Vec<(String, f64)>,
        /// (file sizes, mean think time in seconds) of closed-loop users.
        closed_loop: Option<(FileSize, f64)>,
    },
    Udp {
        pattern: UdpPattern,
        /// For long-range-dependent sources: the fGn draw, per flow.
        lrd: Option<LrdParams>,
        header_bytes: u32,
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

/// Norros-model parameters of an LRD source (traffic.md).
#[derive(Clone, Copy)]
struct LrdParams {
    rate_bps: f64,
    hurst: f64,
    /// a in Var(A_k) = a·m·Δ^2H, bytes·s^(1−2H).
    variance_coef: f64,
    n_slots: usize,
}

fn group_kind(cx: &Ctx, grp: &FlowGroup, p: &str, duration_s: f64) -> Result<GroupKind, ScenarioError> {
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
    match grp.kind.as_str() {
        "tfrc" | "dflow" => tfrc_kind(cx, grp, p),
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
            let params = grp.cc_params.iter().map(|(k, v)| (k.clone(), *v)).collect();
            Ok(GroupKind::Tcp { params, closed_loop })
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
            format!("unknown flow kind {other:?}; expected \"tcp\", \"udp\", \"tfrc\" or \"dflow\""),
        )),
    }
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
