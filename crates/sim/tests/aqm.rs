//! FQ-CoDel (RFC 8290) and PIE (RFC 8033) as scenario queue kinds: their
//! keys and errors, and what they are for, on simulated TCP traffic.

use latlab_link::MediumKind;
use latlab_sim::sim::TraceEvent;
use latlab_sim::{load, Simulation};

const MS: f64 = 1e6;

/// A 10 Mbit/s, 20 ms bottleneck r -> b with `queue`, fed from a by a
/// ping-like UDP flow (flow 0: 100-byte packets every 20 ms) and `bulk`
/// CUBIC flows (flows 1..).
fn bottleneck(queue: &str, bulk: u32, seed: u64, duration_s: f64) -> String {
    format!(
        r#"
name = "aqm"
seed = {seed}
duration_s = {duration_s}
sample_interval_ms = 100
[tcp]
preset = "linux"
[topology]
kind = "custom"
nodes = [{{ name = "a" }}, {{ name = "r" }}, {{ name = "b" }}]
[[topology.links]]
from = "a"
to = "r"
rate_bps = 1e9
delay_ms = 1
[[topology.links]]
from = "r"
to = "b"
rate_bps = 10e6
delay_ms = 20
queue = {queue}
[[flows]]
name = "ping"
kind = "udp"
src = "a"
dst = "b"
udp = {{ pattern = "cbr", rate_bps = 40e3, size_bytes = 100 }}
[[flows]]
name = "bulk"
count = {bulk}
src = "a"
dst = "b"
cc = "cubic"
start_s = {{ uniform = [0.0, 1.0] }}
"#
    )
}

/// Run `toml` tracing the bottleneck; the sojourn of every packet of
/// `flow` that left it after `from_s`, ms, and the whole link's sojourns.
fn sojourns_ms(toml: &str, flow: u32, from_s: f64) -> (Vec<f64>, Vec<f64>, Simulation) {
    let mut sim = load(toml, "aqm.toml").unwrap_or_else(|e| panic!("{e}"));
    let id = sim
        .links
        .iter()
        .position(|l| l.name == "r->b")
        .expect("link r->b");
    sim.trace_link(id as u32);
    sim.run();
    assert!(sim.conservation_ok());
    let trace = sim.links[id].trace.take().unwrap();
    let (mut of_flow, mut all) = (Vec::new(), Vec::new());
    for ev in trace.events {
        if let TraceEvent::Departure(d) = ev {
            if (d.leave_ns as f64) < from_s * 1e9 {
                continue;
            }
            let s = d.sojourn_ns as f64 / MS;
            all.push(s);
            if d.pkt.flow == flow {
                of_flow.push(s);
            }
        }
    }
    (of_flow, all, sim)
}

fn percentile(v: &[f64], q: f64) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * q).round() as usize]
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

#[test]
fn fq_codel_isolates_a_sparse_flow_from_bulk_queues() {
    let fq = bottleneck(r#"{ kind = "fq_codel" }"#, 10, 1, 30.0);
    let dt = bottleneck(r#"{ kind = "droptail", limit_packets = 1000 }"#, 10, 1, 30.0);
    let (ping_fq, all_fq, sim_fq) = sojourns_ms(&fq, 0, 5.0);
    let (ping_dt, _, _) = sojourns_ms(&dt, 0, 5.0);
    let (p50_fq, p99_fq) = (percentile(&ping_fq, 0.5), percentile(&ping_fq, 0.99));
    let p50_dt = percentile(&ping_dt, 0.5);
    println!(
        "ping sojourn: fq_codel p50 {p50_fq:.2} ms p99 {p99_fq:.2} ms max {:.2} ms ({} pkts); \
         droptail p50 {p50_dt:.0} ms; fq_codel link mean {:.2} ms",
        percentile(&ping_fq, 1.0),
        ping_fq.len(),
        mean(&all_fq)
    );
    assert!(ping_fq.len() > 1000);
    // The issue's bar: below 2 × CoDel's 5 ms target at FQ-CoDel...
    assert!(p99_fq < 10.0, "fq_codel ping p99 {p99_fq} ms");
    // ...and hundreds of ms behind the same bulk flows at DropTail.
    assert!(p50_dt > 200.0, "droptail ping p50 {p50_dt} ms");
    // The bulk flows still fill the link.
    let bulk: u64 = sim_fq.flows[1..].iter().map(|f| f.bytes_delivered()).sum();
    let goodput = bulk as f64 * 8.0 / 30.0;
    assert!(goodput > 0.85 * 10e6, "bulk goodput {goodput}");
}

#[test]
fn pie_holds_the_mean_queueing_delay_near_its_target_for_bulk_tcp() {
    for seed in [1, 2] {
        let toml = bottleneck(r#"{ kind = "pie" }"#, 5, seed, 60.0);
        let (_, all, sim) = sojourns_ms(&toml, 0, 20.0);
        let m = mean(&all);
        let bulk: u64 = sim.flows[1..].iter().map(|f| f.bytes_delivered()).sum();
        let goodput = bulk as f64 * 8.0 / 60.0;
        let drops = sim.links.iter().find(|l| l.name == "r->b").unwrap();
        println!(
            "seed {seed}: PIE mean sojourn {m:.2} ms, p50 {:.2} p95 {:.2}; goodput {:.2} Mbit/s; {:?}",
            percentile(&all, 0.5),
            percentile(&all, 0.95),
            goodput / 1e6,
            drops.svc.qdisc.stats()
        );
        assert!((10.0..20.0).contains(&m), "seed {seed}: PIE mean sojourn {m} ms");
        assert!(goodput > 0.85 * 10e6, "goodput {goodput}");
    }
}

#[test]
fn runs_with_fq_codel_and_pie_are_deterministic() {
    for q in [r#"{ kind = "fq_codel", flows = 16 }"#, r#"{ kind = "pie" }"#] {
        let run = |seed| {
            let (_, all, _) = sojourns_ms(&bottleneck(q, 4, seed, 10.0), 0, 0.0);
            all.iter().map(|s| s.to_bits()).collect::<Vec<_>>()
        };
        assert_eq!(run(3), run(3), "{q}");
        assert_ne!(run(3), run(4), "{q}");
    }
}

fn error_of(queue: &str) -> String {
    match load(&bottleneck(queue, 1, 1, 1.0), "bad.toml") {
        Ok(_) => panic!("expected an error for {queue}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn bad_values_name_the_key_and_what_is_accepted() {
    let path = "topology.links[1].queue";
    for (queue, parts) in [
        (
            r#"{ kind = "fq-codel" }"#,
            vec!["kind", "\"fq_codel\"", "\"pie\""],
        ),
        (
            r#"{ kind = "fq_codel", flows = 0 }"#,
            vec!["queue.flows", "1 to 65536"],
        ),
        (
            r#"{ kind = "fq_codel", quantum_bytes = 0 }"#,
            vec!["queue.quantum_bytes", "positive"],
        ),
        (
            r#"{ kind = "fq_codel", limit_packets = 0 }"#,
            vec!["queue.limit_packets", "positive"],
        ),
        (
            r#"{ kind = "fq_codel", target_ms = 200 }"#,
            vec![path, "less than interval"],
        ),
        (r#"{ kind = "fq_codel", quantum = 1514 }"#, vec![path, "quantum"]),
        (r#"{ kind = "pie", alpha = -1 }"#, vec!["queue.alpha", "0.125"]),
        (r#"{ kind = "pie", beta = "high" }"#, vec!["queue.beta"]),
        (
            r#"{ kind = "pie", target_ms = 0 }"#,
            vec!["queue.target_ms", "positive"],
        ),
        (
            r#"{ kind = "pie", t_update_ms = -15 }"#,
            vec!["queue.t_update_ms"],
        ),
        (
            r#"{ kind = "pie", max_burst_ms = -1 }"#,
            vec!["queue.max_burst_ms"],
        ),
    ] {
        let msg = error_of(queue);
        assert!(msg.contains("bad.toml"), "{msg}");
        for p in parts {
            assert!(msg.contains(p), "error {msg:?} for {queue} should mention {p:?}");
        }
    }
}

/// The shipped example (scenarios/fq-codel-lte.toml) does what its
/// comment says, against the bloated FIFO of scenarios/cellular.toml.
#[test]
fn the_lte_example_keeps_a_ping_beside_two_downloads_out_of_the_queue() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios/fq-codel-lte.toml");
    let text = std::fs::read_to_string(path).unwrap();
    let fifo = text.replacen(
        r#"queue = { kind = "fq_codel""#,
        r#"queue = { kind = "droptail", limit_bytes = 1500000 } # "#,
        1,
    );
    let run = |toml: &str, link: &str, flow: u32| {
        let mut sim = load(toml, path).unwrap_or_else(|e| panic!("{e}"));
        let id = sim.links.iter().position(|l| l.name == link).unwrap();
        sim.trace_link(id as u32);
        sim.run();
        assert!(sim.conservation_ok());
        let v: Vec<f64> = sim.links[id]
            .trace
            .take()
            .unwrap()
            .events
            .into_iter()
            .filter_map(|ev| match ev {
                TraceEvent::Departure(d) if d.leave_ns >= 10_000_000_000 && d.pkt.flow == flow => {
                    Some(d.sojourn_ns as f64 / MS)
                }
                _ => None,
            })
            .collect();
        let bulk = (sim.flows[0].bytes_delivered() + sim.flows[1].bytes_delivered()) as f64 * 8.0 / 40.0;
        (v, bulk)
    };
    let (fq, g_fq) = run(&text, "bs->ue0", 2);
    let (dt, g_dt) = run(&fifo, "bs->ue0", 2);
    let (pie, _) = run(&text, "bs->ue1", 3);
    println!(
        "ping sojourn at ue0: fq_codel p50 {:.2} p99 {:.2} ms, droptail p50 {:.0} ms; \
         goodput of the two downloads {:.2} vs {:.2} Mbit/s; PIE (ue1) mean sojourn {:.1} ms",
        percentile(&fq, 0.5),
        percentile(&fq, 0.99),
        percentile(&dt, 0.5),
        g_fq / 1e6,
        g_dt / 1e6,
        mean(&pie)
    );
    assert!(percentile(&fq, 0.99) < 10.0);
    assert!(percentile(&dt, 0.5) > 100.0);
    assert!((10.0..25.0).contains(&mean(&pie)));
}

/// FQ-CoDel as a Wi-Fi AP's shared buffer: an overflow drops the head of
/// the fattest queue, often another station's frame than the arrival;
/// every station's and link's counts still add up.
#[test]
fn fq_codel_as_a_shared_ap_buffer_keeps_every_station_conserved() {
    let toml = r#"
name = "ap-fq"
seed = 3
duration_s = 15
sample_interval_ms = 100
[tcp]
preset = "linux"
[topology]
kind = "wifi"
stations = 2
wired_delay_ms = 10
rate = { constant_bps = 30e6 }
ap = { queue = { kind = "fq_codel", limit_packets = 40 } }
[[topology.station]]
[[topology.station]]
rate = { constant_bps = 8e6 }
[[flows]]
src = "server"
dst = "sta0"
cc = "cubic"
count = 3
[[flows]]
src = "server"
dst = "sta1"
kind = "udp"
udp = { pattern = "poisson", rate_bps = 12e6, size_bytes = 1400 }
"#;
    let mut sim = load(toml, "ap.toml").unwrap_or_else(|e| panic!("{e}"));
    sim.run();
    assert!(sim.conservation_ok());
    let MediumKind::Ap(ap) = &sim.media[0].medium.kind else {
        panic!("not an AP")
    };
    let mut drops = 0;
    for s in 0..2 {
        let st = ap.station_stats(s);
        // A drop charged to the arriving station instead of the dropped
        // frame's would wrap the other's queued count below zero.
        assert!(st.queued_pkts <= 40, "station {s}: {st:?}");
        drops += st.queue.drops_enqueue_pkts;
    }
    assert!(drops > 0);
    let delivered: u64 = sim.flows[..3].iter().map(|f| f.bytes_delivered()).sum();
    assert!(delivered > 1_000_000, "{delivered}");
}
