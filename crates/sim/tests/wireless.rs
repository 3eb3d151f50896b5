//! Wireless access paths: trace-driven links (Mahimahi semantics), the LTE
//! cell's per-user queues and scheduler, the Wi-Fi AP's shared buffer, and
//! the validation figures of docs/models/links.md. Traces are written by each test.

use latlab_sim::{load, Simulation};
use std::path::PathBuf;

const MS: u64 = 1_000_000;

/// Write a Mahimahi trace (one ms timestamp per line) under the temp dir.
fn trace_file(name: &str, ms: impl IntoIterator<Item = u64>) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("latlab-wireless-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    let text: String = ms.into_iter().map(|m| format!("{m}\n")).collect();
    std::fs::write(&path, text).unwrap();
    path
}

fn build(toml: &str) -> Simulation {
    load(toml, "wireless.toml").unwrap_or_else(|e| panic!("{e}"))
}

fn link(sim: &Simulation, name: &str) -> usize {
    sim.links
        .iter()
        .position(|l| l.name == name)
        .unwrap_or_else(|| panic!("no link {name}"))
}

/// Goodput of flow `i` over [from_ns, end], bits/s.
fn goodput(sim: &mut Simulation, i: usize, from_ns: u64) -> f64 {
    sim.run_until(from_ns);
    let b0 = sim.flows[i].bytes_delivered();
    sim.run();
    (sim.flows[i].bytes_delivered() - b0) as f64 * 8.0 / ((sim.duration_ns - from_ns) as f64 / 1e9)
}

/// One link a->b whose rate is `rate` (a TOML value), fed by `flow`.
fn one_link(rate: &str, queue: &str, flow: &str, duration_s: f64, extra: &str) -> String {
    format!(
        r#"
name = "one-link"
seed = 4
duration_s = {duration_s}
sample_interval_ms = 100
{extra}
[tcp]
preset = "linux"
[topology]
kind = "custom"
nodes = [{{ name = "a" }}, {{ name = "b" }}]
[[topology.links]]
from = "a"
to = "b"
{rate}
reverse_rate_bps = 100e6
delay_ms = 20
queue = {queue}
[[flows]]
src = "a"
dst = "b"
{flow}
"#
    )
}

#[test]
fn trace_replay_delivers_hand_counted_bytes_per_opportunity() {
    // Opportunities at 1, 1, 3 ms, looping with period 3: 1, 1, 3, 4, 4, 6, 7, 7, 9, ...
    let tr = trace_file("hand.trace", [1, 1, 3]);
    // 1000-byte UDP packets (972 + 28) at 20 Mbit/s: the link (12 Mbit/s) is always backlogged.
    let toml = one_link(
        &format!("rate = {{ trace = {:?} }}", tr.display().to_string()),
        "{ kind = \"droptail\", limit_packets = 100000 }",
        "kind = \"udp\"\nudp = { pattern = \"cbr\", rate_bps = 20e6, size_bytes = 972 }",
        0.2,
        "",
    );
    let mut sim = build(&toml);
    // Bytes whose last byte has left by t, seen at the receiver 20 ms later:
    // a packet spans opportunities (Mahimahi carries its remaining bytes),
    // so after n opportunities floor(1500 n / 1000) packets have left.
    let by_hand = [
        (0.5, 0),     // no opportunity yet
        (1.5, 3000),  // two at 1 ms: 3000 bytes = packets 1-3
        (2.5, 3000),  // nothing at 2 ms
        (3.5, 4000),  // 4500 bytes: packet 4, and 500 of packet 5
        (4.5, 7000),  // 7500: packets 5-7, and 500 of packet 8
        (5.5, 7000),  //
        (6.5, 9000),  // 9000: packets 8, 9
        (7.5, 12000), // 12000
    ];
    let received = |sim: &Simulation| sim.flows[0].udp().unwrap().received_pkts * 1000;
    for (t_ms, want) in by_hand {
        sim.run_until(((t_ms + 20.0) * 1e6) as u64);
        assert_eq!(received(&sim), want, "by {t_ms} ms");
    }
    // And over 90 ms: 3 opportunities per 3 ms.
    sim.run_until(110 * MS + MS / 2);
    assert_eq!(received(&sim), 90 * 1500 / 1000 * 1000);
    sim.run();
    assert!(sim.conservation_ok());
}

#[test]
fn an_idle_trace_link_costs_no_events_per_unused_opportunity() {
    // Ten opportunities every ms (120 Mbit/s), a source of 100 packets/s:
    // 100 000 opportunities in 10 s, 1000 packets.
    let tr = trace_file("dense.trace", std::iter::repeat_n(1, 10));
    let toml = one_link(
        &format!("rate = {{ trace = {:?} }}", tr.display().to_string()),
        "{ kind = \"droptail\", limit_packets = 1000 }",
        "kind = \"udp\"\nudp = { pattern = \"cbr\", rate_bps = 1.1776e6, size_bytes = 1472 }",
        10.0,
        "",
    );
    let mut sim = build(&toml);
    sim.run();
    let pkts = sim.links[link(&sim, "a->b")].counters.departures_pkts;
    assert!((990..=1001).contains(&pkts), "{pkts} packets");
    // Per packet: a source timer, at most one TxDone, one arrival; plus samples.
    assert!(
        sim.events <= 3 * pkts + 200,
        "{} events for {pkts} packets",
        sim.events
    );
}

#[test]
fn trace_errors_name_the_key_the_file_and_the_line() {
    let err = |rate: &str| {
        let toml = one_link(rate, "{ kind = \"droptail\", limit_packets = 10 }", "", 1.0, "");
        match load(&toml, "w.toml") {
            Ok(_) => panic!("accepted {rate}"),
            Err(e) => e.to_string(),
        }
    };
    let msg = err("rate = { trace = \"/nonexistent/x.trace\" }");
    assert!(
        msg.contains("topology.links[0].rate.trace") && msg.contains("/nonexistent/x.trace"),
        "{msg}"
    );
    let bad = trace_file("bad.trace", []);
    std::fs::write(&bad, "1\n2\n2x\n").unwrap();
    let msg = err(&format!("rate = {{ trace = {:?} }}", bad.display().to_string()));
    assert!(msg.contains("line 3") && msg.contains("\"2x\""), "{msg}");
    let back = trace_file("back.trace", [1, 5, 3]);
    let msg = err(&format!("rate = {{ trace = {:?} }}", back.display().to_string()));
    assert!(msg.contains("line 3") && msg.contains("non-decreasing"), "{msg}");
    let msg = err("rate = { schedule = [[0, 1e6], [2, 2e6], [1, 3e6]] }");
    assert!(msg.contains("topology.links[0].rate.schedule[2]"), "{msg}");
    let msg = err("rate_bps = 1e6\nrate = { constant_bps = 1e6 }");
    assert!(msg.contains("not both"), "{msg}");
}

#[test]
fn trace_paths_resolve_against_the_scenario_folder() {
    let tr = trace_file("rel.trace", [1]);
    let dir = tr.parent().unwrap();
    let scenario = dir.join("rel.toml");
    let toml = one_link(
        "rate = { trace = \"rel.trace\" }",
        "{ kind = \"droptail\", limit_packets = 10 }",
        "",
        1.0,
        "",
    );
    std::fs::write(&scenario, &toml).unwrap();
    load(&toml, scenario.to_str().unwrap()).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn cubic_over_a_constant_trace_matches_a_fixed_link() {
    // "1" = one 1500-byte opportunity per ms = 12 Mbit/s.
    let tr = trace_file("const.trace", [1]);
    let q = "{ kind = \"droptail\", limit_packets = 100 }";
    let flow = "cc = \"cubic\"";
    let mut traced = build(&one_link(
        &format!("rate = {{ trace = {:?} }}", tr.display().to_string()),
        q,
        flow,
        30.0,
        "",
    ));
    let mut fixed = build(&one_link("rate_bps = 12e6", q, flow, 30.0, ""));
    let (gt, gf) = (
        goodput(&mut traced, 0, 5_000_000_000),
        goodput(&mut fixed, 0, 5_000_000_000),
    );
    println!("goodput over the trace {gt:.0} b/s, over the fixed link {gf:.0} b/s");
    assert!((gt - gf).abs() / gf < 0.01, "{gt} vs {gf}");
    assert!(traced.conservation_ok() && fixed.conservation_ok());
}

#[test]
fn goodput_over_a_variable_trace_never_exceeds_its_capacity() {
    // 500 ms at 12 Mbit/s (one opportunity per ms), 500 ms at 3 Mbit/s (one per 4 ms).
    let ms: Vec<u64> = (1..=500).chain((504..=1000).step_by(4)).collect();
    let tr = trace_file("variable.trace", ms);
    let mut sim = build(&one_link(
        &format!("rate = {{ trace = {:?} }}", tr.display().to_string()),
        "{ kind = \"droptail\", limit_packets = 60 }",
        "cc = \"cubic\"",
        20.0,
        "",
    ));
    sim.run();
    assert!(sim.conservation_ok());
    let l = link(&sim, "a->b") as u32;
    let s = &sim.samples.access;
    let rows: Vec<usize> = (0..s.time_ns.len()).filter(|&r| s.link_id[r] == l).collect();
    assert!(rows.len() > 150);
    for &r in &rows {
        assert!(
            s.departures_bytes[r] <= s.offered_bytes[r],
            "at {} ns: carried {} > offered {}",
            s.time_ns[r],
            s.departures_bytes[r],
            s.offered_bytes[r]
        );
    }
    // Mean capacity 7.5 Mbit/s; the flow's goodput stays below it but uses most of it.
    let g = sim.flows[0].bytes_delivered() as f64 * 8.0 / 20.0;
    assert!(g < 7.5e6 && g > 0.6 * 7.5e6, "goodput {g}");
    let t = sim.access_links_table();
    let util = t
        .column_by_name("capacity_utilization")
        .unwrap()
        .as_any()
        .downcast_ref::<arrow_array::Float64Array>()
        .unwrap()
        .value(0);
    assert!(util <= 1.0 && util > 0.6, "{util}");
}

/// A cell with two users, each with a bulk or UDP flow from the server.
fn cellular(users: &str, cell: &str, flows: &str, duration_s: f64) -> String {
    format!(
        r#"
name = "cell"
seed = 9
duration_s = {duration_s}
sample_interval_ms = 100
[tcp]
preset = "linux"
[topology]
kind = "cellular"
users = 2
wired_delay_ms = 10
radio_delay_ms = 10
cell = {cell}
{users}
{flows}
"#
    )
}

const TWO_BULK: &str = r#"
[[flows]]
count = 2
src = "server"
dst = "ue{i}"
cc = "cubic"
"#;

#[test]
fn lte_users_never_drop_each_others_packets() {
    // User 0: fast trace, tiny queue, an aggressive flow that overflows it.
    // User 1: slow trace, a light UDP flow below its capacity.
    let fast = trace_file("fast.trace", std::iter::repeat_n(1, 3)); // 36 Mbit/s
    let slow = trace_file("slow.trace", [2]); // 6 Mbit/s
    let users = format!(
        r#"
[[topology.user]]
rate = {{ trace = {:?} }}
queue = {{ kind = "droptail", limit_packets = 20 }}
[[topology.user]]
rate = {{ trace = {:?} }}
queue = {{ kind = "droptail", limit_packets = 20 }}
"#,
        fast.display().to_string(),
        slow.display().to_string()
    );
    let flows = r#"
[[flows]]
src = "server"
dst = "ue0"
cc = "cubic"
[[flows]]
src = "server"
dst = "ue1"
kind = "udp"
udp = { pattern = "cbr", rate_bps = 1e6, size_bytes = 1000 }
"#;
    let mut sim = build(&cellular(&users, "{ scheduler = \"pf\" }", flows, 20.0));
    sim.run();
    assert!(sim.conservation_ok());
    let d0 = link(&sim, "bs->ue0");
    let d1 = link(&sim, "bs->ue1");
    let t = sim.links_table();
    let drops = t
        .column_by_name("drops_pkts")
        .unwrap()
        .as_any()
        .downcast_ref::<arrow_array::UInt64Array>()
        .unwrap();
    assert!(drops.value(d0) > 10, "user 0 should overflow its own queue");
    assert_eq!(drops.value(d1), 0, "user 1 lost packets to user 0's queue");
    // Every UDP packet arrived, but those still in flight at the end.
    let udp = sim.flows[1].udp().unwrap();
    assert!(
        udp.received_pkts + 5 >= udp.source.sent_pkts,
        "the UDP flow lost packets"
    );
    assert_eq!(sim.links[d1].counters.lost_pkts, 0);
}

#[test]
fn proportional_fair_with_equal_channels_is_fair() {
    let tr = trace_file("equal.trace", [1, 1]); // 24 Mbit/s each
    let users = format!(
        "rate = {{ trace = {:?} }}\nqueue = {{ kind = \"droptail\", limit_bytes = 300000 }}",
        tr.display().to_string()
    );
    let mut sim = build(&cellular(&users, "{ scheduler = \"pf\" }", TWO_BULK, 30.0));
    let g0 = {
        sim.run_until(5_000_000_000);
        let b = (sim.flows[0].bytes_delivered(), sim.flows[1].bytes_delivered());
        sim.run();
        (
            (sim.flows[0].bytes_delivered() - b.0) as f64,
            (sim.flows[1].bytes_delivered() - b.1) as f64,
        )
    };
    let share = g0.0 / (g0.0 + g0.1);
    println!("PF, equal channels: user 0 gets {share:.4} of the bytes");
    assert!((share - 0.5).abs() < 0.05 * 0.5, "share {share}");
    // Together they use the cell: 24 Mbit/s.
    let total = (g0.0 + g0.1) * 8.0 / 25.0;
    assert!(total > 0.85 * 24e6 && total <= 24e6, "{total}");
    assert!(sim.conservation_ok());
}

#[test]
fn a_bloated_lte_queue_shows_hundreds_of_ms_and_a_small_rwnd_removes_them() {
    let tr = trace_file("lte10.trace", (1..=6).map(|k| k * 6 / 5)); // ~ 10 Mbit/s
    let run = |rwnd: &str| {
        let users = format!(
            "rate = {{ trace = {:?} }}\nqueue = {{ kind = \"droptail\", limit_bytes = 2000000 }}",
            tr.display().to_string()
        );
        let flows = format!("[[flows]]\nsrc = \"server\"\ndst = \"ue0\"\ncc = \"cubic\"\n{rwnd}");
        let mut sim = build(&cellular(&users, "{}", &flows, 40.0));
        sim.run();
        assert!(sim.conservation_ok());
        // Median srtt over the last 30 s.
        let s = &sim.samples.flows;
        let mut v: Vec<u64> = (0..s.time_ns.len())
            .filter(|&r| s.flow_id[r] == 0 && s.time_ns[r] >= 10_000_000_000)
            .map(|r| s.srtt_ns[r])
            .collect();
        v.sort();
        let g = sim.flows[0].bytes_delivered() as f64 * 8.0 / 40.0;
        (v[v.len() / 2] as f64 / 1e6, g)
    };
    let (bloated, g_bloated) = run("");
    let (limited, g_limited) = run("tcp = { rwnd_bytes = 65535 }");
    println!("median srtt: {bloated:.0} ms with a 2 MB queue, {limited:.0} ms with rwnd 64 KB");
    println!("goodput: {g_bloated:.0} vs {g_limited:.0} b/s");
    assert!(bloated > 300.0, "bloated srtt {bloated} ms");
    assert!(limited < 120.0, "rwnd-limited srtt {limited} ms");
    // The small window costs little throughput at a ~60 ms base RTT.
    assert!(g_limited > 0.6 * g_bloated);
}

#[test]
fn harq_and_frame_jitter_put_the_minimum_rtt_below_the_unloaded_mean() {
    let flows = r#"
[[flows]]
src = "server"
dst = "ue0"
kind = "udp"
udp = { pattern = "poisson", rate_bps = 100e3, size_bytes = 200 }
"#;
    let cell = "{ harq_error_prob = 0.1, jitter_ms = 4 }";
    let toml = cellular("rate = { constant_bps = 20e6 }", cell, flows, 30.0)
        .replace("sample_interval_ms = 100", "sample_interval_ms = 1");
    let mut sim = build(&toml);
    sim.run();
    let s = &sim.samples.access_flows;
    let d: Vec<u64> = (0..s.time_ns.len())
        .filter_map(|r| s.access_delay_mean_ns[r])
        .collect();
    assert!(d.len() > 1000);
    let min = *d.iter().min().unwrap() as f64 / 1e6;
    let mean = d.iter().sum::<u64>() as f64 / d.len() as f64 / 1e6;
    let max = *d.iter().max().unwrap() as f64 / 1e6;
    println!("unloaded radio-hop delay: min {min:.2} ms, mean {mean:.2} ms, max {max:.2} ms");
    // TTI alignment + 1 ms TTI + jitter U(0, 4) + 10% HARQ at 8 ms: mean ≈ 4.3 ms.
    assert!(min < 1.5 && mean > 3.5 && max >= 8.0, "{min} {mean} {max}");
}

/// Two Wi-Fi stations with bulk flows; station 1 at `weak_rate` with `weak_p`.
fn wifi(weak: &str) -> Simulation {
    let toml = format!(
        r#"
name = "wifi"
seed = 2
duration_s = 30
sample_interval_ms = 100
[tcp]
preset = "linux"
[topology]
kind = "wifi"
stations = 2
wired_delay_ms = 10
rate = {{ constant_bps = 30e6 }}
ap = {{ queue = {{ kind = "droptail", limit_packets = 200 }} }}
[[topology.station]]
[[topology.station]]
{weak}
{TWO_BULK}
"#
    );
    let mut sim = build(&toml.replace("dst = \"ue{i}\"", "dst = \"sta{i}\""));
    sim.run();
    assert!(sim.conservation_ok());
    sim
}

fn median_srtt_ms(sim: &Simulation, flow: u32) -> f64 {
    let s = &sim.samples.flows;
    let mut v: Vec<u64> = (0..s.time_ns.len())
        .filter(|&r| s.flow_id[r] == flow && s.time_ns[r] >= 5_000_000_000)
        .map(|r| s.srtt_ns[r])
        .collect();
    v.sort();
    v[v.len() / 2] as f64 / 1e6
}

#[test]
fn a_weak_wifi_station_raises_the_other_stations_delay() {
    let strong = wifi("");
    let weak = wifi("rate = { constant_bps = 7.1e6 }\nframe_error_prob = 0.4");
    let (a, b) = (median_srtt_ms(&strong, 0), median_srtt_ms(&weak, 0));
    println!("station 0's median srtt: {a:.1} ms beside a strong station, {b:.1} ms beside a weak one");
    assert!(b > 1.5 * a, "{a} vs {b}");
    // One shared buffer: both stations' flows lose packets at it.
    for sim in [&strong, &weak] {
        for sta in ["ap->sta0", "ap->sta1"] {
            let l = link(sim, sta);
            let t = sim.links_table();
            let drops = t
                .column_by_name("drops_pkts")
                .unwrap()
                .as_any()
                .downcast_ref::<arrow_array::UInt64Array>()
                .unwrap()
                .value(l);
            assert!(drops > 0, "{sta} saw no drops at the shared buffer");
        }
    }
}

/// Station 0: a CUBIC bulk flow that overflows the AP's 30-packet queue;
/// station 1: a 1 Mbit/s UDP flow far below its rate. Returns the AP's
/// drops of station 1's packets and the UDP packets sent and received.
fn light_station_beside_a_bulk_one(buffer: &str) -> (u64, u64, u64) {
    let toml = format!(
        r#"
name = "wifi-buffer"
seed = 3
duration_s = 20
sample_interval_ms = 100
[tcp]
preset = "linux"
[topology]
kind = "wifi"
stations = 2
wired_delay_ms = 10
rate = {{ constant_bps = 30e6 }}
ap = {{ queue = {{ kind = "droptail", limit_packets = 30 }}, buffer = "{buffer}" }}
[[flows]]
src = "server"
dst = "sta0"
cc = "cubic"
[[flows]]
src = "server"
dst = "sta1"
kind = "udp"
udp = {{ pattern = "cbr", rate_bps = 1e6, size_bytes = 1000 }}
"#
    );
    let mut sim = build(&toml);
    sim.run();
    assert!(sim.conservation_ok());
    let d1 = link(&sim, "ap->sta1");
    let t = sim.links_table();
    let drops = t
        .column_by_name("drops_pkts")
        .unwrap()
        .as_any()
        .downcast_ref::<arrow_array::UInt64Array>()
        .unwrap();
    assert!(
        drops.value(link(&sim, "ap->sta0")) > 10,
        "{buffer}: the bulk flow should overflow"
    );
    let udp = sim.flows[1].udp().unwrap();
    (drops.value(d1), udp.source.sent_pkts, udp.received_pkts)
}

#[test]
fn per_station_ap_queues_keep_a_bulk_flow_from_dropping_another_stations_packets() {
    let (shared_drops, _, _) = light_station_beside_a_bulk_one("shared");
    let (own_drops, sent, received) = light_station_beside_a_bulk_one("per-station");
    println!("station 1's drops at the AP: {shared_drops} shared, {own_drops} per station");
    assert!(
        shared_drops > 0,
        "a shared buffer: station 0's flow should drop station 1's packets"
    );
    assert_eq!(
        own_drops, 0,
        "per-station queues: station 1 lost packets to station 0's backlog"
    );
    // Every UDP packet arrived, but those still in flight at the end.
    assert!(received + 5 >= sent, "{received} of {sent} UDP packets arrived");
}

#[test]
fn runs_with_access_links_are_deterministic() {
    let users =
        "rate = { markov = { good_bps = 20e6, bad_bps = 2e6, mean_good_ms = 500, mean_bad_ms = 200 } }";
    let toml = cellular(users, "{ harq_error_prob = 0.1, jitter_ms = 2 }", TWO_BULK, 5.0);
    let digest = || {
        let mut sim = build(&toml);
        sim.run();
        assert!(sim.conservation_ok());
        sim.tables()
            .into_iter()
            .map(|(n, b)| (n, latlab_sim::tables::to_ipc_stream(&b).unwrap()))
            .collect::<Vec<_>>()
    };
    let (a, b) = (digest(), digest());
    assert_eq!(a.len(), 9);
    assert_eq!(a, b);
}

#[test]
fn custom_topologies_take_cells_aps_and_varying_links() {
    let toml = r#"
name = "custom-access"
seed = 5
duration_s = 5
sample_interval_ms = 100
[tcp]
preset = "linux"
[topology]
kind = "custom"
nodes = [{ name = "srv" }, { name = "gw" }, { name = "bs" }, { name = "ap" },
         { name = "ue" }, { name = "sta" }]
[[topology.links]]
from = "srv"
to = "gw"
rate = { schedule = [[0, 50e6], [2, 10e6]] }
delay_ms = 5
[[topology.links]]
from = "gw"
to = "bs"
rate_bps = 1e9
delay_ms = 5
[[topology.links]]
from = "gw"
to = "ap"
rate_bps = 1e9
delay_ms = 5
[[topology.cells]]
node = "bs"
cell = { scheduler = "rr" }
users = [{ node = "ue", rate = { per_interval = { interval_ms = 50, uniform_bps = [5e6, 15e6] } } }]
[[topology.aps]]
node = "ap"
rate = { constant_bps = 20e6 }
stations = [{ node = "sta", frame_error_prob = 0.2 }]
[[flows]]
count = 1
src = "srv"
dst = "ue"
cc = "cubic"
[[flows]]
count = 1
src = "srv"
dst = "sta"
cc = "cubic"
"#;
    let mut sim = build(toml);
    sim.run();
    assert!(sim.conservation_ok());
    assert!(sim.flows.iter().all(|f| f.bytes_delivered() > 500_000));
    let t = sim.access_links_table();
    // srv->gw and gw->srv (the schedule, both ways), bs->ue, ap->sta; the
    // uplinks' constant rate makes them fixed links.
    assert_eq!(t.num_rows(), 4);
    // An unknown node and an unknown scheduler are named in errors.
    let bad = toml.replace("{ node = \"ue\", rate", "{ node = \"nowhere\", rate");
    let msg = load(&bad, "c.toml").err().unwrap().to_string();
    assert!(
        msg.contains("topology.cells[0].users[0].node") && msg.contains("nowhere"),
        "{msg}"
    );
    let bad = toml.replace("cell = { scheduler = \"rr\" }", "cell = { scheduler = \"fifo\" }");
    let msg = load(&bad, "c.toml").err().unwrap().to_string();
    assert!(msg.contains("topology.cells[0].cell.scheduler"), "{msg}");
}
