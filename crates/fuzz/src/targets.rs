//! Fuzz targets: generate input `i`, run it, check the invariants. A
//! violated invariant is a panic, which the driver records like any other.

use crate::corpus::Seed;
use crate::mutate::{self, input_rng};
use latlab_link::trace::{TraceError, TraceSchedule, MAX_TIMESTAMP_MS, OPPORTUNITY_BYTES};
use latlab_net::media::wire::{self, DataPacket, FeedbackPacket, Packet, ReceiverReport};
use latlab_proto::tfrc::{DflowParams, TfrcConfig, TfrcData, TfrcFeedback, TfrcMode, MAX_NDUPACK};
use latlab_sim::scenario::{Scenario, Topology, UdpPatternKind};
use rand::{Rng, RngCore, SeedableRng};
use rand_pcg::Pcg64Mcg;
use std::path::{Path, PathBuf};

/// What became of one input (for the run's statistics).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Refused with an error value (parse or build).
    Rejected,
    /// Parsed; valid-looking but larger than the per-input budget, so not built.
    TooLarge,
    /// Built, but too large to run within the per-input budget.
    Built,
    /// Built and run for part of its duration.
    RanPartly,
    /// Built and run to its end; result tables made.
    RanToEnd,
}

/// Which parser or core a run fuzzes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Scenarios,
    Wire,
    Traces,
}

impl Target {
    /// The corpus this target's inputs are mutated from (see corpus.rs).
    pub fn corpus(self, root: &Path) -> Result<Vec<Seed>, String> {
        match self {
            Target::Traces => crate::corpus::load_traces(root),
            _ => crate::corpus::load(root),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Target::Scenarios => "scenarios",
            Target::Wire => "wire",
            Target::Traces => "traces",
        }
    }
    /// Extension of saved inputs.
    pub fn ext(self) -> &'static str {
        match self {
            Target::Scenarios => "toml",
            Target::Wire => "bin",
            Target::Traces => "trace",
        }
    }
}

/// Input `index` of a run with `seed`.
pub fn input(target: Target, corpus: &[Seed], seed: u64, index: u64) -> Vec<u8> {
    let mut rng = input_rng(seed, index);
    match target {
        Target::Scenarios => mutate::scenario_input(corpus, &mut rng),
        Target::Wire => wire_input(&mut rng),
        Target::Traces => mutate::trace_input(corpus, &mut rng),
    }
}

/// Run one input against its target.
pub fn exec(target: Target, input: &[u8], scratch: &Path) -> Outcome {
    match target {
        Target::Scenarios => exec_scenario(input, scratch),
        Target::Wire => exec_wire(input),
        Target::Traces => exec_traces(input),
    }
}

// --- Scenarios -------------------------------------------------------------

/// Per-input budget, so that one input takes milliseconds: scenarios with
/// more hosts or flows than this are not built (unless they exceed the
/// core's own limits, which build must then refuse quickly) ...
const MAX_BUILD_HOSTS: u64 = 400;
const MAX_BUILD_FLOWS: u64 = 400;
/// ... nor LRD sources with more fGn slots than this over all flows ...
const MAX_BUILD_LRD_SLOTS: f64 = 1e6;
/// ... scenarios with more links or flows than this are built but not run ...
const MAX_RUN_LINKS: usize = 256;
const MAX_RUN_FLOWS: usize = 256;
/// ... and a run stops at this much simulated time ...
const MAX_RUN_NS: u64 = 50_000_000;
/// ... or once this many events were processed (checked every step).
const MAX_RUN_EVENTS: u64 = 30_000;
const RUN_STEP_NS: u64 = 100_000;

/// Whether a parsed scenario is too large for the per-input budget, yet
/// within the core's limits (beyond them, build must refuse it quickly).
fn too_large(sc: &Scenario) -> bool {
    use latlab_sim::assemble::MAX_FLOWS;
    use latlab_sim::topology::MAX_HOSTS;
    let hosts = match &sc.topology {
        Topology::Dumbbell(d) => d.pairs as u64,
        Topology::EdgeDumbbell(e) => e.edges as u64 * e.hosts_per_edge as u64,
        Topology::Cellular(c) => c.users as u64,
        Topology::Wifi(w) => w.stations as u64,
        Topology::Custom(c) => c.nodes.len() as u64,
    };
    let flows: u64 = sc.flows.iter().map(|g| g.count as u64).sum();
    let lrd_slots: f64 = sc
        .flows
        .iter()
        .filter_map(|g| {
            let u = g.udp.as_ref().filter(|u| u.pattern == UdpPatternKind::Lrd)?;
            Some(g.count as f64 * sc.duration_s / (u.slot_ms.unwrap_or(10.0) / 1e3))
        })
        .sum();
    let beyond_core_limits = hosts > MAX_HOSTS || flows > MAX_FLOWS;
    !beyond_core_limits
        && (hosts > MAX_BUILD_HOSTS
            || flows > MAX_BUILD_FLOWS
            || lrd_slots.is_nan()
            || lrd_slots > MAX_BUILD_LRD_SLOTS)
}

/// Parse, build and run a scenario. pcap outputs go to `scratch`.
pub fn exec_scenario(input: &[u8], scratch: &Path) -> Outcome {
    let text = String::from_utf8_lossy(input);
    let mut sc = match latlab_sim::parse(&text, "fuzz.toml") {
        Ok(sc) => sc,
        Err(e) => {
            check_error(&e);
            return Outcome::Rejected;
        }
    };
    if too_large(&sc) {
        return Outcome::TooLarge;
    }
    // A pcap name is a link name, from node names the fuzzer invents:
    // keep the capture files inside the scratch folder.
    sc.outputs
        .pcap
        .retain(|n| !n.contains('/') && !n.contains('\\') && !n.contains(".."));
    let mut sim = match latlab_sim::assemble::build(&sc, "fuzz.toml", Some(scratch)) {
        Ok(sim) => sim,
        Err(e) => {
            check_error(&e);
            return Outcome::Rejected;
        }
    };
    if sim.links.len() > MAX_RUN_LINKS || sim.flows.len() > MAX_RUN_FLOWS {
        return Outcome::Built;
    }
    let horizon = sim.duration_ns.min(MAX_RUN_NS);
    let mut t = 0;
    while t < horizon && sim.events <= MAX_RUN_EVENTS {
        t = (t + RUN_STEP_NS).min(horizon);
        sim.run_until(t);
    }
    // Conservation holds at any time, not only at the end (sim.rs).
    if !sim.conservation_ok() {
        panic!(
            "packet conservation violated at t = {} ns: {:?}",
            sim.now_ns,
            sim.conservation()
                .into_iter()
                .filter(|c| !c.ok)
                .collect::<Vec<_>>()
        );
    }
    if !sim.finished {
        return Outcome::RanPartly;
    }
    for (name, batch) in sim.tables() {
        latlab_sim::tables::to_ipc_stream(&batch)
            .unwrap_or_else(|e| panic!("table {name} does not serialise: {e}"));
    }
    Outcome::RanToEnd
}

/// An error on user input must say something (and format without panicking).
fn check_error(e: &latlab_sim::ScenarioError) {
    let shown = e.to_string();
    assert!(!e.message.trim().is_empty(), "empty error message: {shown:?}");
}

/// A scratch folder for pcap outputs, one per call: runs side by side in one
/// process (the smoke tests' threads) each remove their own when done.
pub fn scratch_dir() -> PathBuf {
    static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("latlab-fuzz-{}-{n}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    dir
}

// --- Media wire parser -------------------------------------------------------

/// A valid data or feedback packet with random fields, and what parsing
/// its encoding must give back.
fn valid_packet(rng: &mut Pcg64Mcg) -> Packet {
    if rng.random_bool(0.5) {
        let len = if rng.random_bool(0.9) {
            rng.random_range(wire::DATA_HEADER_LEN..=2_000)
        } else {
            rng.random_range(wire::DATA_HEADER_LEN..=wire::MAX_PACKET_BYTES)
        };
        let mode = if rng.random_bool(0.5) {
            TfrcMode::Tfrc
        } else {
            TfrcMode::DFlow(DflowParams {
                base_period_rtts: rng.random_range(1.0..=10_000.0),
                current_period_ns: rng.random_range(1..=60_000_000_000),
                cd_thresh_ns: rng.random_range(1..=10_000_000_000),
                gradient_test: rng.random(),
            })
        };
        Packet::Data(DataPacket {
            session_id: rng.random(),
            data: TfrcData {
                seq: rng.random(),
                send_ts_ns: rng.random(),
                rtt_ns: rng.random(),
                payload_bytes: len as u32,
            },
            // What the parser reconstructs: the wire carries only these fields.
            config: TfrcConfig {
                mode,
                segment_bytes: len as u32,
                ndupack: rng.random_range(1..=MAX_NDUPACK),
                ..TfrcConfig::default()
            },
        })
    } else {
        Packet::Feedback(FeedbackPacket {
            session_id: rng.random(),
            feedback: TfrcFeedback {
                t_recvdata_ns: rng.random(),
                t_delay_ns: rng.random(),
                x_recv_bps: if rng.random_bool(0.1) {
                    0.0
                } else {
                    rng.random_range(0.0..1e12)
                },
                p: [0.0, 1.0, rng.random_range(0.0..=1.0)][rng.random_range(0..3)],
            },
            report: ReceiverReport {
                packets_received: rng.random(),
                packets_lost: rng.random(),
                queueing_delay_ns: rng.random(),
                delay_events: rng.random(),
                malformed: rng.random(),
            },
        })
    }
}

fn encode(pkt: &Packet) -> Vec<u8> {
    let mut buf = vec![0u8; wire::MAX_PACKET_BYTES];
    let n = match pkt {
        Packet::Data(d) => wire::encode_data(d, &mut buf),
        Packet::Feedback(f) => wire::encode_feedback(f, &mut buf),
    }
    .unwrap_or_else(|e| panic!("a valid packet does not encode: {e:?} ({pkt:?})"));
    buf.truncate(n);
    buf
}

/// Input: a byte prefix says how to read the rest. `0`: a valid packet's
/// encoding that must round-trip; anything else: arbitrary bytes.
fn wire_input(rng: &mut Pcg64Mcg) -> Vec<u8> {
    let choice = rng.random_range(0..100);
    if choice < 30 {
        let mut b = vec![0u8];
        b.extend(encode(&valid_packet(rng)));
        return b;
    }
    let mut b = if choice < 90 {
        encode(&valid_packet(rng))
    } else {
        mutate::random_bytes(rng, 128)
    };
    for _ in 0..1 + rng.random_range(0..4) {
        let len = b.len();
        match rng.random_range(0..7) {
            0 if len > 0 => {
                let i = rng.random_range(0..len);
                b[i] ^= 1 << rng.random_range(0..8);
            }
            // A field of the header set to a byte at its edges.
            1 if len > 0 => {
                let i = rng.random_range(0..len.min(wire::FEEDBACK_LEN));
                b[i] = [0, 1, 2, 0x7f, 0x80, 0xfe, 0xff][rng.random_range(0..7)];
            }
            2 => b.truncate(rng.random_range(0..=len)),
            3 => b.extend(std::iter::repeat_n(0, rng.random_range(1..64))),
            // An 8-byte field to all ones (u64::MAX, NaN as a float).
            4 if len >= 8 => {
                let i = rng.random_range(0..=len - 8) & !7;
                b[i..i + 8].fill(0xff);
            }
            5 if len > 0 => {
                let i = rng.random_range(0..len);
                b[i] = rng.random();
            }
            _ => {
                let mut tail = vec![0u8; rng.random_range(0..16)];
                rng.fill_bytes(&mut tail);
                b.extend(tail);
            }
        }
    }
    let mut out = vec![1u8];
    out.extend(b);
    out
}

/// Parse the datagram; a packet that parses must re-encode to a datagram
/// that parses to the same packet; a valid packet must round-trip exactly.
pub fn exec_wire(input: &[u8]) -> Outcome {
    let Some((&mode, datagram)) = input.split_first() else {
        return Outcome::Rejected;
    };
    let parsed = wire::parse(datagram);
    if mode == 0 {
        let pkt = parsed.unwrap_or_else(|e| panic!("a valid encoding does not parse: {e:?}"));
        let again = encode(&pkt);
        assert_eq!(again, datagram, "decode(encode(x)) is not x");
        return Outcome::RanToEnd;
    }
    match parsed {
        Err(e) => {
            // The kind the endpoints count it under must exist for every error.
            let _ = e.kind();
            Outcome::Rejected
        }
        Ok(pkt) => {
            let bytes = encode(&pkt);
            if let Packet::Data(_) = pkt {
                assert_eq!(bytes.len(), datagram.len(), "re-encoded length differs");
            }
            let again = wire::parse(&bytes)
                .unwrap_or_else(|e| panic!("a re-encoded packet does not parse: {e:?} ({pkt:?})"));
            assert_eq!(again, pkt, "parse(encode(parse(b))) differs from parse(b)");
            Outcome::RanToEnd
        }
    }
}

// --- Mahimahi traces -----------------------------------------------------------

/// The name parse errors must carry.
const TRACE_FILE: &str = "fuzz.trace";
const NS_PER_MS: u64 = 1_000_000;

/// The trace format, written independently of trace.rs: lines end at LF,
/// a CR right before an LF belongs to the line end, the last line end is
/// optional; every line is one or more ASCII digits; timestamps are
/// non-decreasing and at most MAX_TIMESTAMP_MS; the last one (the period)
/// is positive.
fn reference_parse(text: &str) -> Result<Vec<u64>, TraceError> {
    let mut pieces: Vec<&str> = text.split('\n').collect();
    let n = pieces.len();
    for p in &mut pieces[..n - 1] {
        *p = p.strip_suffix('\r').unwrap_or(p);
    }
    if pieces.last() == Some(&"") {
        pieces.pop();
    }
    let file = TRACE_FILE.to_string();
    let mut ms: Vec<u64> = Vec::new();
    for (i, line) in pieces.iter().enumerate() {
        let malformed = || TraceError::Malformed {
            file: file.clone(),
            line: i + 1,
            text: line.to_string(),
        };
        if line.is_empty() || !line.bytes().all(|b| b.is_ascii_digit()) {
            return Err(malformed());
        }
        let v = line
            .parse::<u64>()
            .ok()
            .filter(|&v| v <= MAX_TIMESTAMP_MS)
            .ok_or_else(|| TraceError::TooLarge {
                file: file.clone(),
                line: i + 1,
                text: line.to_string(),
            })?;
        if let Some(&prev) = ms.last() {
            if v < prev {
                return Err(TraceError::NonMonotone {
                    file,
                    line: i + 1,
                    ms: v,
                    previous_ms: prev,
                });
            }
        }
        ms.push(v);
    }
    match ms.last() {
        None => Err(TraceError::Empty { file }),
        Some(0) => Err(TraceError::ZeroLength { file }),
        Some(_) => Ok(ms),
    }
}

/// The time of opportunity `n` by the definition (trace.rs), in u128 so it
/// never wraps (u128::MAX if even that overflows).
fn true_time_ns(ms: &[u64], n: u64) -> u128 {
    let len = ms.len() as u128;
    let period = *ms.last().expect("non-empty") as u128;
    let m = ms[(n as u128 % len) as usize] as u128;
    (n as u128 / len)
        .checked_mul(period)
        .and_then(|x| x.checked_add(m))
        .and_then(|x| x.checked_mul(NS_PER_MS as u128))
        .unwrap_or(u128::MAX)
}

/// What `time_ns` must return: the true time, or u64::MAX ("never") for a
/// time past the end of the u64 nanosecond clock.
fn want_time_ns(ms: &[u64], n: u64) -> u64 {
    true_time_ns(ms, n).min(u64::MAX as u128) as u64
}

/// Parse the trace (must match the reference parser, errors naming the
/// file and line); on a trace that parses, check the schedule at query
/// times drawn from the input's hash, including 0, period boundaries and
/// values near u64::MAX, against the definition and, for small traces, an
/// explicit expansion of the opportunities.
pub fn exec_traces(input: &[u8]) -> Outcome {
    let text = String::from_utf8_lossy(input);
    let parsed = TraceSchedule::parse(&text, TRACE_FILE);
    let reference = reference_parse(&text);
    let (tr, ms) = match (parsed, reference) {
        (Err(e), want) => {
            let shown = e.to_string();
            assert!(
                shown.starts_with(&format!("{TRACE_FILE}: ")),
                "error does not name the file: {shown:?}"
            );
            if let TraceError::Malformed { line, .. }
            | TraceError::NonMonotone { line, .. }
            | TraceError::TooLarge { line, .. } = e
            {
                assert!(
                    shown.contains(&format!(": line {line}: ")),
                    "error does not name its line: {shown:?}"
                );
            }
            assert_eq!(Err(e), want.map(|_| ()), "parse and the reference disagree");
            return Outcome::Rejected;
        }
        (Ok(tr), Ok(ms)) => (tr, ms),
        (Ok(tr), Err(e)) => panic!(
            "parsed a trace the reference refuses ({e}): {} opportunities",
            tr.len()
        ),
    };
    let len = ms.len() as u64;
    let period = *ms.last().expect("non-empty");
    assert_eq!(tr.len() as u64, len, "opportunities per period");
    assert_eq!(tr.period_ms(), period, "period");
    let rate = tr.mean_rate_bps();
    let want_rate = len as f64 * OPPORTUNITY_BYTES as f64 * 8.0 * 1e3 / period as f64;
    assert!(
        rate.is_finite() && rate > 0.0 && (rate - want_rate).abs() <= 1e-9 * want_rate,
        "mean_rate_bps {rate}, want {want_rate}"
    );

    // Query times: a function of the input, so a replay repeats them.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in input {
        h = (h ^ b as u64).wrapping_mul(0x0100_0000_01b3);
    }
    let mut rng = Pcg64Mcg::seed_from_u64(h);
    let period_ns = (period as u128 * NS_PER_MS as u128).min(u64::MAX as u128) as u64;
    let mut ts: Vec<u64> = vec![
        0,
        1,
        NS_PER_MS - 1,
        NS_PER_MS,
        NS_PER_MS + 1,
        u64::MAX,
        u64::MAX - 1,
    ];
    ts.push(u64::MAX - u64::MAX % NS_PER_MS);
    ts.push((u64::MAX - u64::MAX % NS_PER_MS).wrapping_sub(1));
    for k in 0..4u64 {
        let b = period_ns.saturating_mul(k);
        ts.extend([b.saturating_sub(1), b, b.saturating_add(1)]);
    }
    for _ in 0..8 {
        let m = ms[rng.random_range(0..ms.len())];
        let b = m.saturating_mul(NS_PER_MS);
        ts.extend([b.saturating_sub(1), b, b.saturating_add(1)]);
        ts.push(rng.random_range(0..=period_ns.saturating_mul(4)));
        ts.push(rng.random());
        let bits = rng.random_range(1..50);
        ts.push(u64::MAX - rng.random_range(0..1u64 << bits));
    }
    ts.sort_unstable();
    ts.dedup();

    let mut prev_n = 0;
    let mut firsts = Vec::with_capacity(ts.len());
    for &t in &ts {
        let n = tr.first_at_or_after(t);
        assert!(
            n >= prev_n,
            "first_at_or_after not monotone: t = {t} ns gives {n} < {prev_n}"
        );
        prev_n = n;
        // Saturation (trace.rs): past u64::MAX opportunities, the index is u64::MAX.
        if n < u64::MAX {
            assert!(
                true_time_ns(&ms, n) >= t as u128,
                "first_at_or_after({t}) = {n}, which is at {} ns",
                true_time_ns(&ms, n)
            );
        }
        if n > 0 {
            assert!(
                true_time_ns(&ms, n - 1) < t as u128,
                "first_at_or_after({t}) = {n} skips opportunity {}, at {} ns",
                n - 1,
                true_time_ns(&ms, n - 1)
            );
        }
        let got = tr.time_ns(n);
        assert_eq!(got, want_time_ns(&ms, n), "time_ns({n})");
        assert!(got >= t, "time_ns(first_at_or_after({t})) = {got} < t");
        assert_eq!(tr.count_between(t, t), 0, "count_between({t}, {t})");
        firsts.push(n);
    }
    // count_between against stepping through the opportunities one by one.
    for _ in 0..16 {
        let (i, j) = (rng.random_range(0..ts.len()), rng.random_range(0..ts.len()));
        let (t0, t1) = (ts[i], ts[j]);
        let c = tr.count_between(t0, t1);
        let (n0, n1) = (firsts[i], firsts[j]);
        assert_eq!(c, n1.saturating_sub(n0), "count_between({t0}, {t1})");
        if t1 > t0 && n1 - n0 <= 2_000 && n1 < u64::MAX {
            let mut n = n0;
            while n < u64::MAX && true_time_ns(&ms, n) < t1 as u128 {
                n += 1;
            }
            assert_eq!(
                c,
                n - n0,
                "count_between({t0}, {t1}) vs stepping from opportunity {n0}"
            );
        }
    }
    // time_ns is monotone in n, also where it saturates.
    for _ in 0..8 {
        let n: u64 = match rng.random_range(0..3) {
            0 => rng.random_range(0..4 * len),
            1 => rng.random(),
            _ => u64::MAX - 1 - rng.random_range(0..1_000),
        };
        assert_eq!(tr.time_ns(n), want_time_ns(&ms, n), "time_ns({n})");
        assert!(tr.time_ns(n) <= tr.time_ns(n + 1), "time_ns not monotone at {n}");
    }
    // Small traces: every opportunity over a few loops, explicitly.
    if len <= 64 && period <= 1_000 {
        let loops = 5;
        let times: Vec<u64> = (0..loops)
            .flat_map(|k| ms.iter().map(move |m| (k * period + m) * NS_PER_MS))
            .collect();
        for (n, &t) in times.iter().enumerate() {
            assert_eq!(tr.time_ns(n as u64), t, "time_ns({n}) by expansion");
        }
        let horizon = (loops - 1) * period * NS_PER_MS;
        for _ in 0..16 {
            let t0 = rng.random_range(0..=horizon);
            let t1 = rng.random_range(0..=horizon);
            let want0 = times.partition_point(|&x| x < t0) as u64;
            assert_eq!(
                tr.first_at_or_after(t0),
                want0,
                "first_at_or_after({t0}) by expansion"
            );
            let want = times.iter().filter(|&&x| x >= t0 && x < t1).count() as u64;
            assert_eq!(
                tr.count_between(t0, t1),
                want,
                "count_between({t0}, {t1}) by expansion"
            );
        }
    }
    Outcome::RanToEnd
}
