//! ECN end to end (RFC 3168): `[tcp] ecn = true` at the ends, `ecn = true`
//! in a RED, CoDel, PIE or FQ-CoDel queue. Bulk TCP through one marking
//! bottleneck: marks replace the AQM's drops, the senders answer them
//! without retransmitting, goodput does not fall; the links table counts
//! the marks; pcap shows the ECN field and ECE/CWR.

use arrow_array::Array;
use latlab_qdisc::QdiscStats;
use latlab_sim::sim::TraceEvent;
use latlab_sim::{assemble, load, parse, Simulation};

const DURATION_S: f64 = 30.0;

/// A 10 Mbit/s, 20 ms bottleneck r -> b with `queue`, 4 bulk `cc` flows
/// a -> b; `ecn` at the ends (the queue's own `ecn` is in `queue`).
fn scenario(queue: &str, ecn: bool, cc: &str, extra: &str) -> String {
    format!(
        r#"
name = "ecn"
seed = 5
duration_s = {DURATION_S}
[tcp]
preset = "linux"
ecn = {ecn}
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
name = "bulk"
count = 4
src = "a"
dst = "b"
cc = "{cc}"
start_s = {{ uniform = [0.0, 1.0] }}
{extra}
"#
    )
}

/// What one run did at the bottleneck and the senders.
#[derive(Debug)]
struct Outcome {
    q: QdiscStats,
    goodput_bps: f64,
    retransmitted: u64,
    ecn_reductions: u64,
    /// Drops at the bottleneck of ECT packets, and the time of the
    /// arrival last seen before the last of them, s.
    ect_drops: u64,
    last_ect_drop_s: f64,
}

impl Outcome {
    /// Drops the AQM chose (RED/PIE early, CoDel at dequeue), not overflow.
    fn aqm_drops(&self) -> u64 {
        self.q.drops_early_pkts + self.q.drops_dequeue_pkts
    }
}

fn run(toml: &str) -> (Outcome, Simulation) {
    let mut sim = load(toml, "ecn.toml").unwrap_or_else(|e| panic!("{e}"));
    let id = sim.links.iter().position(|l| l.name == "r->b").expect("r->b");
    sim.trace_link(id as u32);
    sim.run();
    assert!(sim.conservation_ok());
    let (mut ect_drops, mut last_ect_drop_s, mut now_s) = (0, 0.0, 0.0);
    for ev in sim.links[id].trace.take().unwrap().events {
        match ev {
            TraceEvent::Arrival { at_ns, .. } => now_s = at_ns as f64 / 1e9,
            TraceEvent::Drop { pkt, .. } if pkt.route.ecn().is_ect() => {
                ect_drops += 1;
                last_ect_drop_s = now_s;
            }
            _ => {}
        }
    }
    let link = &sim.links[id];
    let q = *link.svc.qdisc.stats();
    let delivered: u64 = sim.flows.iter().map(|f| f.bytes_delivered()).sum();
    let senders = sim.flows.iter().filter_map(|f| f.sender_totals());
    let (retransmitted, ecn_reductions) = senders.fold((0, 0), |(r, e), s| {
        (r + s.retransmitted_segments, e + s.ecn_reductions)
    });
    let out = Outcome {
        q,
        goodput_bps: delivered as f64 * 8.0 / DURATION_S,
        retransmitted,
        ecn_reductions,
        ect_drops,
        last_ect_drop_s,
    };
    (out, sim)
}

/// The same queue with marking on and ECN at the ends, against marking on
/// and ECN off at the ends (Not-ECT traffic, dropped as before).
fn marks_replace_drops(queue: &str, cc: &str) -> (Outcome, Outcome) {
    let (plain, _) = run(&scenario(queue, false, cc, ""));
    let (ecn, _) = run(&scenario(queue, true, cc, ""));
    println!(
        "{queue} {cc}:\n  not-ECT: aqm drops {}, all drops {}, marks {}, retransmitted {}, goodput {:.3} Mbit/s\n  \
         ECT:     aqm drops {}, all drops {}, marks {}, retransmitted {}, goodput {:.3} Mbit/s, ECE reductions {}, ECT packets dropped {} (the last at {:.2} s)",
        plain.aqm_drops(),
        plain.q.drops_pkts(),
        plain.q.marks_pkts,
        plain.retransmitted,
        plain.goodput_bps / 1e6,
        ecn.aqm_drops(),
        ecn.q.drops_pkts(),
        ecn.q.marks_pkts,
        ecn.retransmitted,
        ecn.goodput_bps / 1e6,
        ecn.ecn_reductions,
        ecn.ect_drops,
        ecn.last_ect_drop_s,
    );
    assert!(plain.aqm_drops() > 100 && plain.q.marks_pkts == 0, "{plain:?}");
    assert_eq!(plain.ecn_reductions, 0);
    assert!(ecn.q.marks_pkts > 100, "{ecn:?}");
    assert!(ecn.ecn_reductions > 0 && ecn.ecn_reductions <= ecn.q.marks_pkts);
    assert!(
        ecn.goodput_bps >= 0.98 * plain.goodput_bps,
        "goodput {ecn:?} vs {plain:?}"
    );
    assert!(
        ecn.retransmitted < plain.retransmitted / 2,
        "{ecn:?} vs {plain:?}"
    );
    (plain, ecn)
}

#[test]
fn red_marks_ect_instead_of_dropping_it_early() {
    let red = r#"{ kind = "red", limit_packets = 200, min_th = 15, max_th = 60, max_p = 0.1, w_q = 0.002, ecn = true }"#;
    let (plain, ecn) = marks_replace_drops(red, "newreno");
    // Early drops become marks: the few left are of Not-ECT packets
    // (retransmissions); ECT packets are dropped only by force (average
    // above max_th), which drops Not-ECT retransmissions too: the ECT drops
    // are at most the forced ones.
    assert!(ecn.q.drops_early_pkts * 20 <= plain.q.drops_early_pkts, "{ecn:?}");
    assert!(
        ecn.ect_drops <= ecn.q.drops_pkts() - ecn.q.drops_early_pkts,
        "{ecn:?}"
    );
    // Those forced drops are slow start's overshoot; after it, marks only.
    assert!(ecn.last_ect_drop_s < 3.0, "{ecn:?}");
}

#[test]
fn codel_marks_ect_instead_of_dropping_it() {
    let (_, ecn) = marks_replace_drops(r#"{ kind = "codel", ecn = true }"#, "cubic");
    assert_eq!((ecn.aqm_drops(), ecn.retransmitted), (0, 0), "{ecn:?}");
}

#[test]
fn fq_codel_marks_ect_instead_of_dropping_it() {
    let (_, ecn) = marks_replace_drops(r#"{ kind = "fq_codel", ecn = true }"#, "cubic");
    assert_eq!((ecn.aqm_drops(), ecn.retransmitted), (0, 0), "{ecn:?}");
}

#[test]
fn pie_marks_ect_below_ten_percent() {
    let (plain, ecn) = marks_replace_drops(r#"{ kind = "pie", ecn = true }"#, "cubic");
    // ECT packets are dropped only above 10 % probability (RFC 8033 §5.1).
    assert!(ecn.aqm_drops() * 2 <= plain.aqm_drops(), "{ecn:?} vs {plain:?}");
    // That is slow start's overshoot; after it, marks only.
    assert!(ecn.last_ect_drop_s < 3.0, "{ecn:?}");
}

#[test]
fn a_queue_without_ecn_drops_ect_traffic() {
    let (out, _) = run(&scenario(r#"{ kind = "codel" }"#, true, "cubic", ""));
    assert!(out.aqm_drops() > 100 && out.q.marks_pkts == 0, "{out:?}");
    assert_eq!(out.ecn_reductions, 0);
}

#[test]
fn the_links_table_counts_marks_only_where_a_queue_marks() {
    let has_marks = |toml: &str| {
        let (_, sim) = run(toml);
        let t = sim.links_table();
        let i = t.schema().index_of("marks_pkts").ok()?;
        let col = t
            .column(i)
            .as_any()
            .downcast_ref::<arrow_array::UInt64Array>()
            .unwrap();
        Some(col.values().to_vec())
    };
    let plain = has_marks(&scenario(r#"{ kind = "codel" }"#, true, "cubic", ""));
    assert_eq!(
        plain, None,
        "no marking queue, no column (golden digests unchanged)"
    );
    let marks = has_marks(&scenario(r#"{ kind = "codel", ecn = true }"#, true, "cubic", ""))
        .expect("a marks_pkts column");
    // Only r->b (link 2, after a->r and its reverse) has a marking queue.
    assert_eq!(marks.iter().filter(|&&m| m > 0).count(), 1, "{marks:?}");
    assert!(marks[2] > 100, "{marks:?}");
}

#[test]
fn ecn_runs_are_deterministic() {
    let toml = scenario(r#"{ kind = "pie", ecn = true }"#, true, "cubic", "");
    let (a, _) = run(&toml);
    let (b, _) = run(&toml);
    assert_eq!(
        (a.q, a.retransmitted, a.ecn_reductions),
        (b.q, b.retransmitted, b.ecn_reductions)
    );
    assert_eq!(a.goodput_bps.to_bits(), b.goodput_bps.to_bits());
}

#[test]
fn pcap_shows_the_ecn_field_and_ece_cwr() {
    let dir = std::env::temp_dir().join(format!("latlab-ecn-pcap-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let toml = scenario(
        r#"{ kind = "codel", ecn = true }"#,
        true,
        "cubic",
        "[outputs]\npcap = [\"r->b\", \"r->a\"]",
    )
    .replace("duration_s = 30", "duration_s = 8");
    let sc = parse(&toml, "ecn.toml").unwrap();
    let mut sim = assemble::build(&sc, "ecn.toml", Some(&dir)).unwrap();
    sim.run();
    assert!(sim.pcap_error.is_none(), "{:?}", sim.pcap_error);
    // (ECN field, TCP flags) of every record.
    let read = |name: &str| -> Vec<(u8, u8)> {
        let bytes = std::fs::read(dir.join(name)).unwrap();
        let mut out = Vec::new();
        let mut o = 24;
        while o + 16 <= bytes.len() {
            let incl = u32::from_le_bytes(bytes[o + 8..o + 12].try_into().unwrap()) as usize;
            let ip = &bytes[o + 16..o + 16 + incl];
            out.push((ip[1] & 0b11, ip[20 + 13]));
            o += 16 + incl;
        }
        out
    };
    let data = read("r_to_b.pcap");
    let acks = read("r_to_a.pcap");
    let count = |v: &[(u8, u8)], f: &dyn Fn(u8, u8) -> bool| v.iter().filter(|&&(e, fl)| f(e, fl)).count();
    let ce = count(&data, &|e, _| e == 0b11);
    let ect0 = count(&data, &|e, _| e == 0b10);
    let cwr = count(&data, &|_, f| f & 0x80 != 0);
    let syn_setup = count(&data, &|_, f| f & 0x02 != 0 && f & 0xc0 == 0xc0);
    let ece = count(&acks, &|_, f| f & 0x40 != 0);
    let ect_acks = count(&acks, &|e, _| e != 0);
    println!(
        "r->b: {} records, CE {ce}, ECT(0) {ect0}, CWR {cwr}, ECN-setup SYNs {syn_setup}; r->a: ECE {ece}",
        data.len()
    );
    let link = sim.links.iter().find(|l| l.name == "r->b").unwrap();
    assert_eq!(
        ce as u64,
        link.svc.qdisc.stats().marks_pkts,
        "every mark on r->b is a CE record"
    );
    assert!(
        ect0 > 1000 && cwr > 0 && ece > 0,
        "ECT(0) {ect0}, CWR {cwr}, ECE {ece}"
    );
    assert_eq!(syn_setup, 4, "each flow's SYN offers ECN (ECE|CWR)");
    assert_eq!(ect_acks, 0, "pure ACKs are Not-ECT (RFC 3168 §6.1.4)");
    let _ = std::fs::remove_dir_all(&dir);
}

fn error_of(toml: &str) -> String {
    match load(toml, "bad.toml") {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn bad_ecn_keys_name_the_key_and_what_is_accepted() {
    let base = scenario(r#"{ kind = "codel" }"#, false, "cubic", "");
    // A value that is not a boolean.
    let msg = error_of(&base.replace("ecn = false", "ecn = \"yes\""));
    assert!(msg.contains("ecn") && msg.contains("bool"), "{msg}");
    // A misspelt key is refused, not ignored.
    let msg = error_of(&base.replace("ecn = false", "ecn_on = true"));
    assert!(msg.contains("ecn_on"), "{msg}");
    // DropTail has no AQM to mark with.
    let msg = error_of(&scenario(
        r#"{ kind = "droptail", limit_packets = 50, ecn = true }"#,
        true,
        "cubic",
        "",
    ));
    assert!(msg.contains("ecn") && msg.contains("queue"), "{msg}");
    // Per flow group, as the other TCP knobs.
    let group = base.replace("cc = \"cubic\"", "cc = \"cubic\"\ntcp = { ecn = 1 }");
    let msg = error_of(&group);
    assert!(msg.contains("ecn"), "{msg}");
}

#[test]
fn a_flow_group_turns_ecn_on_for_itself() {
    let base = scenario(r#"{ kind = "codel", ecn = true }"#, false, "cubic", "");
    let group = base.replace("cc = \"cubic\"", "cc = \"cubic\"\ntcp = { ecn = true }");
    let (out, _) = run(&group);
    assert!(out.q.marks_pkts > 100 && out.ecn_reductions > 0, "{out:?}");
}

/// The links table's marks on the links of a shared medium: each Wi-Fi
/// station's share of the AP's queue and each LTE user's queue counts the
/// marks of its own packets beside its drops (the AP used to count none).
#[test]
fn a_shared_medium_counts_marks_per_station_and_user() {
    let wifi = r#"
name = "ecn-wifi"
seed = 4
duration_s = 15
[tcp]
preset = "linux"
ecn = true
[topology]
kind = "wifi"
stations = 2
wired_delay_ms = 10
rate = { constant_bps = 30e6 }
ap = { queue = { kind = "codel", ecn = true, limit_packets = 300 } }
[[flows]]
count = 2
src = "server"
dst = "sta{i}"
cc = "cubic"
"#;
    let lte = r#"
name = "ecn-lte"
seed = 4
duration_s = 15
[tcp]
preset = "linux"
ecn = true
[topology]
kind = "cellular"
users = 2
wired_delay_ms = 10
radio_delay_ms = 10
cell = { scheduler = "pf" }
queue = { kind = "pie", ecn = true, limit_packets = 1000 }
[[topology.user]]
rate = { constant_bps = 20e6 }
[[topology.user]]
rate = { constant_bps = 10e6 }
[[flows]]
count = 2
src = "server"
dst = "ue{i}"
cc = "cubic"
"#;
    for (toml, members) in [(wifi, ["ap->sta0", "ap->sta1"]), (lte, ["bs->ue0", "bs->ue1"])] {
        let mut sim = load(toml, "ecn.toml").unwrap_or_else(|e| panic!("{e}"));
        sim.run();
        assert!(sim.conservation_ok());
        let t = sim.links_table();
        let marks = t
            .column_by_name("marks_pkts")
            .expect("a marks_pkts column")
            .as_any()
            .downcast_ref::<arrow_array::UInt64Array>()
            .unwrap()
            .clone();
        for name in members {
            let id = sim.links.iter().position(|l| l.name == name).expect(name);
            assert!(marks.value(id) > 20, "{name}: {} marks", marks.value(id));
        }
        let reductions: u64 = sim
            .flows
            .iter()
            .filter_map(|f| f.sender_totals())
            .map(|s| s.ecn_reductions)
            .sum();
        assert!(reductions > 0, "{members:?}");
    }
}
