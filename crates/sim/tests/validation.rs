//! Validation: does the simulated TCP behave like the textbook says?
//!
//! Each test builds a scenario from TOML (so the schema is exercised too),
//! runs it, and compares a measured figure with a closed-form model.

use latlab_sim::{load, Simulation};

const MSS: f64 = 960.0; // ns2 preset payload
const WIRE: f64 = 1000.0; // ns2 preset data packet on the wire

/// One flow from `a` to `b` through a bottleneck `r1->r2`:
/// a --(fast)--> r1 --(bottleneck)--> r2 --(fast)--> b.
fn single_path(
    extra_tcp: &str,
    bottleneck_bps: f64,
    one_way_ms: f64,
    queue: &str,
    loss: f64,
    duration_s: f64,
    flow: &str,
) -> Simulation {
    // Half of the propagation delay sits on the bottleneck, the rest on the access links.
    let toml = format!(
        r#"
name = "single"
seed = 3
duration_s = {duration_s}
sample_interval_ms = 0
[tcp]
preset = "ns2"
{extra_tcp}
[topology]
kind = "custom"
nodes = [{{ name = "a" }}, {{ name = "r1" }}, {{ name = "r2" }}, {{ name = "b" }}]
[[topology.links]]
from = "a"
to = "r1"
rate_bps = 1e9
delay_ms = {q}
[[topology.links]]
from = "r1"
to = "r2"
rate_bps = {bottleneck_bps}
delay_ms = {h}
loss = {loss}
queue = {queue}
[[topology.links]]
from = "r2"
to = "b"
rate_bps = 1e9
delay_ms = {q}
[[flows]]
src = "a"
dst = "b"
{flow}
"#,
        q = one_way_ms / 4.0,
        h = one_way_ms / 2.0,
    );
    load(&toml, "validation.toml").unwrap_or_else(|e| panic!("{e}"))
}

fn bottleneck(sim: &Simulation) -> usize {
    sim.links.iter().position(|l| l.name == "r1->r2").unwrap()
}

/// Utilisation of the bottleneck and loss events in [from_s, end].
fn utilisation_and_losses(sim: &mut Simulation, from_s: f64) -> (f64, u64) {
    let from_ns = (from_s * 1e9) as u64;
    sim.run_until(from_ns);
    let b = bottleneck(sim);
    let bytes0 = sim.links[b].counters.departures_bytes;
    let fr0 = sim.flows[0].tcp().unwrap().sender.stats().fast_retransmits;
    sim.run();
    assert!(sim.conservation_ok(), "packet conservation violated");
    let bytes = sim.links[b].counters.departures_bytes - bytes0;
    let secs = (sim.duration_ns - from_ns) as f64 / 1e9;
    let rate = sim.links[b].rate.nominal_bps() as f64;
    (
        bytes as f64 * 8.0 / (rate * secs),
        sim.flows[0].tcp().unwrap().sender.stats().fast_retransmits - fr0,
    )
}

#[test]
fn newreno_fills_a_one_bdp_buffer() {
    // 10 Mb/s, 100 ms RTT: BDP = 125 packets of 1000 B.
    let bdp_pkts = 10e6 * 0.1 / (8.0 * WIRE);
    let queue = format!("{{ kind = \"droptail\", limit_packets = {} }}", bdp_pkts as u64);
    let mut sim = single_path("", 10e6, 50.0, &queue, 0.0, 300.0, "");
    let (util, losses) = utilisation_and_losses(&mut sim, 50.0);
    println!("buffer = 1 BDP: utilisation {util:.4}, {losses} loss events");
    assert!(losses > 5, "the flow should see periodic losses");
    assert!(util >= 0.95, "utilisation {util} < 0.95");
}

/// A 1.5 Mb/s bottleneck with a 50-packet DropTail buffer (about one BDP at
/// a 244 ms RTT; ns-2's default queue): each sawtooth ends in one loss that
/// fast retransmit repairs. Two things used to turn that into a timeout:
/// the RTO, last restarted before the hole, firing while the retransmission
/// crossed the full queue; and, paced, a timeout during recovery raising
/// ssthresh to half of a FlightSize that still spans the overflowing window.
/// Once slow start's losses are repaired (60 s) no timeout may fire, and the
/// link stays busy.
#[test]
fn newreno_recovers_behind_a_standing_queue_without_timeouts() {
    for pacing in [
        "",
        "pacing = true\npacing_ss_factor = 1.0\npacing_ca_factor = 1.0",
    ] {
        let queue = "{ kind = \"droptail\", limit_packets = 50 }";
        let mut sim = single_path(pacing, 1.5e6, 122.0, queue, 0.0, 200.0, "");
        sim.run_until(60_000_000_000);
        let timeouts0 = sim.flows[0].tcp().unwrap().sender.stats().timeouts;
        let (util, losses) = utilisation_and_losses(&mut sim, 60.0);
        let timeouts = sim.flows[0].tcp().unwrap().sender.stats().timeouts - timeouts0;
        println!(
            "pacing {:5}: utilisation {util:.4}, {losses} fast retransmits, {timeouts} timeouts after 60 s",
            !pacing.is_empty()
        );
        assert!(losses >= 3, "the flow should see periodic losses");
        assert_eq!(timeouts, 0, "pacing {pacing:?}: {timeouts} timeouts");
        assert!(util >= 0.95, "pacing {pacing:?}: utilisation {util}");
    }
}

#[test]
fn newreno_sawtooth_with_half_bdp_buffer() {
    // Reno with buffer B = BDP/2 (packets): the window peaks at W = BDP + B
    // = 1.5·BDP, halves to 0.75·BDP and grows one packet per RTT. Below BDP
    // the RTT is R0: 0.25·BDP rounds of R0. Above it the RTT is W/C, so the
    // time to grow from BDP to 1.5·BDP is Σ W·(packet time) = 0.625·BDP·R0.
    // Period T = 0.875·BDP·R0; data per period = 0.21875·BDP² (phase 1,
    // mean window 0.875·BDP over 0.25·BDP rounds) + 0.625·BDP² (phase 2 at
    // full rate), so utilisation = 0.84375/0.875 = 96.4%.
    let r0 = 0.1;
    let bdp_pkts = 10e6 * r0 / (8.0 * WIRE);
    let queue = format!(
        "{{ kind = \"droptail\", limit_packets = {} }}",
        (bdp_pkts / 2.0) as u64
    );
    let mut sim = single_path("", 10e6, 50.0, &queue, 0.0, 600.0, "");
    let (util, losses) = utilisation_and_losses(&mut sim, 100.0);
    let period_s = 500.0 / losses as f64;
    let textbook_period_s = 0.875 * bdp_pkts * r0;
    let textbook_util = 0.84375 / 0.875;
    println!(
        "buffer = BDP/2: utilisation {util:.4} (textbook {textbook_util:.4}); period {period_s:.2} s (textbook {textbook_period_s:.2} s, {losses} loss events)"
    );
    assert!(
        (util / textbook_util - 1.0).abs() <= 0.10,
        "utilisation {util} vs {textbook_util}"
    );
    assert!(
        (period_s / textbook_period_s - 1.0).abs() <= 0.10,
        "period {period_s} vs {textbook_period_s}"
    );
}

/// Padhye et al. (1998) full model, eq. (30), with b = 1 (one ACK per
/// segment) — the form RFC 5348 §3.1 uses for TFRC:
/// X = 1 / (R·sqrt(2bp/3) + T0·min(1, 3·sqrt(3bp/8))·p·(1 + 32p²)) packets/s.
fn padhye_pkts_per_s(rtt_s: f64, rto_s: f64, p: f64) -> f64 {
    let b = 1.0;
    1.0 / (rtt_s * (2.0 * b * p / 3.0).sqrt()
        + rto_s * (3.0 * (3.0 * b * p / 8.0).sqrt()).min(1.0) * p * (1.0 + 32.0 * p * p))
}

#[test]
fn newreno_throughput_under_random_loss_matches_padhye() {
    for (p, duration_s) in [(0.001, 1500.0), (0.01, 600.0), (0.03, 600.0)] {
        // A fast path (100 Mb/s, 100 ms RTT) with a buffer that never fills:
        // every loss is the random one.
        let queue = "{ kind = \"droptail\", limit_packets = 100000 }";
        let mut sim = single_path("rwnd_bytes = 100000000", 100e6, 50.0, queue, p, duration_s, "");
        let from_s = 50.0;
        sim.run_until((from_s * 1e9) as u64);
        let seg0 = sim.flows[0].tcp().unwrap().sender.stats().segments_sent;
        sim.run();
        let s = &sim.flows[0].tcp().unwrap().sender;
        let pkts_per_s = (s.stats().segments_sent - seg0) as f64 / (duration_s - from_s);
        // Base RTT: propagation plus one packet's serialisation per hop (the
        // queue stays nearly empty at these rates).
        let rtt_s = 0.1 + WIRE * 8.0 * (2.0 / 1e9 + 1.0 / 100e6);
        // T0: the sender's RTO with a stable RTT is its 200 ms minimum.
        let rto_s = s.rto_ns() as f64 / 1e9;
        let model = padhye_pkts_per_s(rtt_s, rto_s, p);
        let ratio = pkts_per_s / model;
        println!("p = {p}: {pkts_per_s:.1} pkt/s sent, Padhye {model:.1} pkt/s (R = {rtt_s:.4} s, T0 = {rto_s:.3} s), ratio {ratio:.3}");
        assert!((ratio - 1.0).abs() <= 0.20, "p = {p}: simulated/model = {ratio}");
    }
}

/// The exact lossless short-flow model of docs/models/latency-model.md.
fn exact_latency_s(o_bits: f64, s_bits: f64, c_bps: f64, r_s: f64, iw: f64) -> f64 {
    let t = s_bits / c_bps;
    let x = (r_s + t) / (iw * t);
    let q = x.log2().ceil().max(0.0);
    let k = (1.0 + o_bits / (iw * s_bits)).log2().ceil();
    let p = q.min(k - 1.0).max(0.0);
    2.0 * r_s + o_bits / c_bps + p * (r_s + t) - (2f64.powf(p) - 1.0) * iw * t
}

#[test]
fn finite_flow_completion_matches_exact_model() {
    // One link a<->b of rate C and one-way delay R/2; delayed ACK off.
    let c_bps = 10e6;
    let r_s = 0.1;
    let sizes: Vec<u64> = vec![
        1, 2, 3, 4, 5, 7, 10, 15, 20, 30, 50, 64, 100, 127, 200, 300, 500, 700, 1000,
    ];
    let mut worst = 0.0f64;
    for iw in [1u32, 3, 10] {
        for &n in &sizes {
            let toml = format!(
                r#"
duration_s = 30
sample_interval_ms = 0
[tcp]
preset = "ns2"
delayed_ack = false
initial_window_segments = {iw}
[topology]
kind = "custom"
nodes = [{{ name = "a" }}, {{ name = "b" }}]
links = [{{ from = "a", to = "b", rate_bps = {c_bps}, delay_ms = {d}, queue = {{ kind = "droptail", limit_packets = 100000 }} }}]
[[flows]]
src = "a"
dst = "b"
start_s = 1.0
size_bytes = {size}
"#,
                d = r_s * 1e3 / 2.0,
                size = n * MSS as u64,
            );
            let mut sim = load(&toml, "fct.toml").unwrap();
            sim.run();
            let f = &sim.flows[0];
            let fct_s = (f.tcp().unwrap().sender.completed_at_ns().expect("flow completes") - f.start_ns)
                as f64
                / 1e9;
            // The model in wire units: O = n segments of S wire bits each.
            let s_bits = WIRE * 8.0;
            let model = exact_latency_s(n as f64 * s_bits, s_bits, c_bps, r_s, iw as f64);
            let err_segments = (fct_s - model).abs() / (s_bits / c_bps);
            worst = worst.max(err_segments);
            assert!(err_segments <= 1.0, "IW {iw}, {n} segments: simulated {fct_s:.6} s, model {model:.6} s ({err_segments:.3} segment times apart)");
        }
    }
    println!("finite flows: worst deviation from the exact model = {worst:.3} segment transmission times");
}
