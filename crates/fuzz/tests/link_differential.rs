//! The link service has one implementation (latlab-link) and two drivers:
//! the simulator's, on its event agenda, and the emulator's line, on a
//! clock it is handed. This test feeds both the same timed packets and
//! demands the same departures and drops, packet by packet, for every
//! queue discipline on every medium.
//!
//! The packets come from three simulated Poisson UDP sources (random gaps
//! and sizes from the scenario's seed; three flows, so that FQ-CoDel
//! schedules between queues) crossing the link under test; the
//! simulator records what the link did ([`Simulation::trace_link`]). The
//! emulator's line is built from the same scenario file (the same seeded
//! queue, loss and rate streams), gets the same arrivals on a fake clock
//! (advanced to each arrival, then to the end of the run), and its
//! outcomes are compared with the simulator's record.

use latlab_link::DropCause;
use latlab_net::emulate::config;
use latlab_net::emulate::line::{Line, Outcome};
use latlab_sim::packet::PacketRef;
use latlab_sim::sim::TraceEvent;
use latlab_sim::Simulation;
use std::collections::HashMap;

const QUEUES: [(&str, &str); 6] = [
    ("droptail", r#"{ kind = "droptail", limit_packets = 30 }"#),
    (
        "red",
        r#"{ kind = "red", limit_packets = 60, min_th = 5, max_th = 15, max_p = 0.1, w_q = 0.02 }"#,
    ),
    (
        "codel",
        r#"{ kind = "codel", limit_packets = 200, target_ms = 5, interval_ms = 50 }"#,
    ),
    (
        "edge-pacer",
        r#"{ kind = "edge-pacer", limit_packets = 200, delay_ms = 20 }"#,
    ),
    (
        "fq_codel",
        r#"{ kind = "fq_codel", limit_packets = 100, target_ms = 5, interval_ms = 50 }"#,
    ),
    (
        "pie",
        r#"{ kind = "pie", limit_packets = 200, target_ms = 5, max_burst_ms = 30 }"#,
    ),
];

const MEDIA: [&str; 7] = [
    "fixed",
    "constant",
    "trace",
    "loss",
    "lte",
    "wifi",
    "wifi-per-station",
];

fn trace_path() -> String {
    format!(
        "{}/../../python/latlab/data/traces/lte-variable.trace",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// A scenario whose UDP flow `src -> dst` crosses the link under test
/// (the one into `dst`) with queue `queue` on medium `medium`.
fn scenario(medium: &str, queue: &str) -> (String, &'static str, &'static str) {
    let flow = |src: &str, dst: &str| {
        format!(
            r#"
[[flows]]
name = "probe"
kind = "udp"
count = 3
src = "{src}"
dst = "{dst}"
udp = {{ pattern = "poisson", rate_bps = 4e6, size_bytes = [40, 1500] }}
"#
        )
    };
    let head = "name = \"diff\"\nseed = 7\nduration_s = 3\nsample_interval_ms = 0\n";
    let custom = |rate: &str, loss: f64| {
        format!(
            r#"{head}
[topology]
kind = "custom"
nodes = [{{ name = "a" }}, {{ name = "b" }}]
links = [{{ from = "a", to = "b", {rate}, delay_ms = 10, loss = {loss}, queue = {queue} }}]
{}"#,
            flow("a", "b")
        )
    };
    let text = match medium {
        "fixed" => custom("rate_bps = 10e6", 0.0),
        "constant" => custom("rate = { constant_bps = 10e6 }", 0.0),
        "trace" => custom(&format!("rate = {{ trace = {:?} }}", trace_path()), 0.0),
        "loss" => custom("rate_bps = 10e6", 0.05),
        "lte" => {
            return (
                format!(
                    r#"{head}
[topology]
kind = "cellular"
users = 2
wired_rate_bps = 1e9
wired_delay_ms = 20
radio_delay_ms = 5
cell = {{ scheduler = "pf", resource_blocks = 50, harq_error_prob = 0.1, harq_rtt_ms = 8, jitter_ms = 2 }}
queue = {queue}
uplink_rate = {{ constant_bps = 5e6 }}

[[topology.user]]
rate = {{ constant_bps = 8e6 }}

[[topology.user]]
rate = {{ trace = {:?} }}
{}"#,
                    trace_path(),
                    flow("server", "ue0")
                ),
                "server",
                "ue0",
            )
        }
        "wifi" | "wifi-per-station" => {
            let buffer = if medium == "wifi" { "shared" } else { "per-station" };
            return (
                format!(
                    r#"{head}
[topology]
kind = "wifi"
stations = 2
wired_rate_bps = 1e9
wired_delay_ms = 15
radio_delay_ms = 1
rate = {{ constant_bps = 10e6 }}
frame_error_prob = 0.2
ap = {{ queue = {queue}, buffer = "{buffer}", slot_us = 9, cw_min = 15, cw_max = 1023, max_attempts = 3 }}
uplink_rate = {{ constant_bps = 20e6 }}

[[topology.station]]

[[topology.station]]
{}"#,
                    flow("server", "sta0")
                ),
                "server",
                "sta0",
            );
        }
        other => panic!("no medium {other}"),
    };
    (text, "a", "b")
}

/// What one driver made of the arrivals, per arrival ordinal.
#[derive(Debug, Default, PartialEq, Eq)]
struct Record {
    /// (packet, leave_ns, sojourn_ns), in the order the link let them go.
    departures: Vec<(u32, u64, u64)>,
    drops: Vec<(u32, DropCause)>,
}

/// Run the simulator; returns the arrivals at the link under test (time,
/// size, flow) and what the link did with them.
fn simulate(text: &str, link: &str) -> (Vec<(u64, PacketRef)>, Record, HashMap<u32, u64>) {
    let sc = latlab_sim::parse(text, "diff.toml").unwrap();
    let mut sim: Simulation = latlab_sim::assemble::build(&sc, "diff.toml", None).unwrap();
    let id = sim.links.iter().position(|l| l.name == link).unwrap() as u32;
    sim.trace_link(id);
    sim.run();
    let trace = sim.links[id as usize].trace.take().unwrap();
    let mut ordinal: HashMap<u32, u32> = HashMap::new();
    let (mut arrivals, mut rec, mut far) = (Vec::new(), Record::default(), HashMap::new());
    for ev in trace.events {
        match ev {
            TraceEvent::Arrival { at_ns, pkt } => {
                ordinal.insert(pkt.idx, arrivals.len() as u32);
                arrivals.push((at_ns, pkt));
            }
            TraceEvent::Departure(d) => {
                let i = ordinal[&d.pkt.idx];
                rec.departures.push((i, d.leave_ns, d.sojourn_ns));
                far.insert(i, d.arrive_ns);
            }
            TraceEvent::Drop { pkt, cause } => rec.drops.push((ordinal[&pkt.idx], cause)),
        }
    }
    (arrivals, rec, far)
}

/// Drive the emulator's line over the same link with a fake clock; also
/// returns when each packet delivered by the end reached the far end.
fn emulate(
    text: &str,
    src: &str,
    dst: &str,
    link: &str,
    arrivals: &[(u64, PacketRef)],
) -> (Record, HashMap<u32, u64>) {
    let mut plan = config::from_text(text, "diff.toml", Some(dst), Some(src)).unwrap();
    let at = plan.down.hops.iter().position(|h| h.name == link).unwrap();
    let mut line = Line::new(vec![plan.down.hops.swap_remove(at)]);
    let mut out = Vec::new();
    for (i, &(t, p)) in arrivals.iter().enumerate() {
        line.advance(t, &mut out);
        let pkt = PacketRef { idx: i as u32, ..p };
        line.arrive(t, pkt, &mut out);
    }
    line.advance(3_000_000_000, &mut out);
    let mut rec = Record::default();
    let mut far = HashMap::new();
    for o in out {
        match o {
            Outcome::Left {
                pkt,
                leave_ns,
                sojourn_ns,
                ..
            } => rec.departures.push((pkt.idx, leave_ns, sojourn_ns)),
            Outcome::Dropped { pkt, cause, .. } => rec.drops.push((pkt.idx, cause)),
            Outcome::Delivered { pkt, due_ns } => {
                far.insert(pkt.idx, due_ns);
            }
        }
    }
    (rec, far)
}

#[test]
fn simulator_and_emulator_drivers_agree_packet_by_packet() {
    let mut failures = Vec::new();
    for medium in MEDIA {
        for (qname, queue) in QUEUES {
            let (text, src, dst) = scenario(medium, queue);
            let sc = latlab_sim::parse(&text, "diff.toml").unwrap();
            let sim = latlab_sim::assemble::build(&sc, "diff.toml", None).unwrap();
            let dst_node = sim.nodes.iter().position(|n| n.name == dst).unwrap() as u32;
            let link = sim.links.iter().find(|l| l.dst == dst_node).unwrap().name.clone();
            let (arrivals, sim_rec, sim_far) = simulate(&text, &link);
            let (emu_rec, emu_far) = emulate(&text, src, dst, &link, &arrivals);
            // Packets still on the wire at the end have no far-end time in
            // the emulator's outcomes: compare those it delivered.
            let far_differs = emu_far.iter().find(|(i, t)| sim_far.get(i) != Some(t));
            let case = format!("{medium}/{qname}");
            assert!(
                sim_rec.departures.len() > 100,
                "{case}: too few departures to compare ({})",
                sim_rec.departures.len()
            );
            if let Some((i, t)) = far_differs {
                failures.push(format!(
                    "{case}: packet {i} reaches the far end at {t} ns in the emulator, {:?} in the simulator",
                    sim_far.get(i)
                ));
            }
            if sim_rec != emu_rec {
                let first = sim_rec
                    .departures
                    .iter()
                    .zip(&emu_rec.departures)
                    .position(|(a, b)| a != b);
                failures.push(format!(
                    "{case}: simulator {} departures / {} drops, emulator {} / {}; first differing departure: {:?}",
                    sim_rec.departures.len(),
                    sim_rec.drops.len(),
                    emu_rec.departures.len(),
                    emu_rec.drops.len(),
                    first.map(|i| (sim_rec.departures[i], emu_rec.departures[i])),
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "the drivers disagree:\n{}",
        failures.join("\n")
    );
}

/// The cases exercise what they claim to: queue drops where the queue
/// overflows or manages, random loss where the link loses.
#[test]
fn the_cases_drop_where_they_should() {
    for (medium, queue, cause) in [
        ("fixed", QUEUES[0].1, DropCause::Queue),
        ("fixed", QUEUES[1].1, DropCause::Queue),
        ("fixed", QUEUES[2].1, DropCause::Queue),
        ("fixed", QUEUES[4].1, DropCause::Queue),
        ("fixed", QUEUES[5].1, DropCause::Queue),
        ("lte", QUEUES[4].1, DropCause::Queue),
        ("loss", QUEUES[0].1, DropCause::Lost),
        ("lte", QUEUES[0].1, DropCause::Queue),
        ("wifi", QUEUES[0].1, DropCause::Lost),
        ("wifi-per-station", QUEUES[0].1, DropCause::Lost),
        ("wifi-per-station", QUEUES[0].1, DropCause::Queue),
    ] {
        let (text, _, dst) = scenario(medium, queue);
        let sc = latlab_sim::parse(&text, "diff.toml").unwrap();
        let sim = latlab_sim::assemble::build(&sc, "diff.toml", None).unwrap();
        let dst_node = sim.nodes.iter().position(|n| n.name == dst).unwrap() as u32;
        let link = sim.links.iter().find(|l| l.dst == dst_node).unwrap().name.clone();
        let (_, rec, _) = simulate(&text, &link);
        assert!(
            rec.drops.iter().any(|&(_, c)| c == cause),
            "{medium}: no {cause:?} drop in {} drops",
            rec.drops.len()
        );
    }
}
