//! Multipath TCP in the simulator (docs/models/mptcp.md): data-level
//! delivery, coupled congestion control against competing TCP (RFC 6356
//! goals 1–2), traffic moving off a congested path, the min-RTT scheduler,
//! head-of-line blocking in a small shared receive buffer, determinism.
//!
//! `cargo test --release -p latlab-sim --test integration mptcp:: -- --nocapture` prints
//! the measured figures.

use latlab_sim::flow::MptcpFlow;
use latlab_sim::tables::to_ipc_stream;
use latlab_sim::{load, Simulation};

const S: u64 = 1_000_000_000;

fn run(toml: &str) -> Simulation {
    let mut sim = load(toml, "mptcp.toml").unwrap_or_else(|e| panic!("{e}"));
    sim.run();
    assert!(sim.conservation_ok(), "conservation: {:?}", sim.conservation());
    sim
}

fn mp(sim: &Simulation, flow: usize) -> &MptcpFlow {
    sim.flows[flow].mptcp().expect("an MPTCP flow")
}

/// Bytes subflow on path `k` had acknowledged at its own level.
fn path_acked(m: &MptcpFlow, k: usize) -> u64 {
    m.paths[k]
        .subflow
        .and_then(|i| m.sender().subflow(i as usize))
        .map_or(0, |s| s.tcp().stats().bytes_acked)
}

/// Goodput of flow `i` over [from_s, end], Mbit/s, from its samples
/// (bytes delivered, cumulative).
fn goodput_mbps(sim: &Simulation, flow: u32, from_s: f64) -> f64 {
    let s = &sim.samples.flows;
    let rows: Vec<(u64, u64)> = (0..s.time_ns.len())
        .filter(|&r| s.flow_id[r] == flow)
        .map(|r| (s.time_ns[r], s.bytes_delivered[r]))
        .collect();
    let from_ns = (from_s * 1e9) as u64;
    let a = rows
        .iter()
        .find(|r| r.0 >= from_ns)
        .expect("a sample in the window");
    let b = rows.last().unwrap();
    (b.1 - a.1) as f64 * 8.0 / ((b.0 - a.0) as f64 / 1e9) / 1e6
}

/// A server with two disjoint paths to a client: through `ra` (the
/// bottleneck ra->ca) and through `rb` (rb->cb). Hosts ha/hb and da/db let
/// plain TCP flows share one bottleneck each.
fn two_paths(rate_a: &str, delay_a: f64, rate_b: &str, delay_b: f64, queue: u32) -> String {
    format!(
        r#"
[tcp]
preset = "linux"
[topology]
kind = "custom"
nodes = [{{ name = "server" }}, {{ name = "client" }}, {{ name = "ra" }}, {{ name = "ca" }},
         {{ name = "rb" }}, {{ name = "cb" }}, {{ name = "ha" }}, {{ name = "da" }},
         {{ name = "hb" }}, {{ name = "db" }}]
links = [
  {{ from = "server", to = "ra", rate_bps = 1e9, delay_ms = 1 }},
  {{ from = "server", to = "rb", rate_bps = 1e9, delay_ms = 1 }},
  {{ from = "ra", to = "ca", rate_bps = {rate_a}, delay_ms = {delay_a}, queue = {{ kind = "droptail", limit_packets = {queue} }} }},
  {{ from = "rb", to = "cb", rate_bps = {rate_b}, delay_ms = {delay_b}, queue = {{ kind = "droptail", limit_packets = {queue} }} }},
  {{ from = "ca", to = "client", rate_bps = 1e9, delay_ms = 1 }},
  {{ from = "cb", to = "client", rate_bps = 1e9, delay_ms = 1 }},
  {{ from = "ha", to = "ra", rate_bps = 1e9, delay_ms = 1 }},
  {{ from = "ca", to = "da", rate_bps = 1e9, delay_ms = 1 }},
  {{ from = "hb", to = "rb", rate_bps = 1e9, delay_ms = 1 }},
  {{ from = "cb", to = "db", rate_bps = 1e9, delay_ms = 1 }},
]
"#
    )
}

/// An MPTCP group over paths a and b.
fn mptcp_group(cc: &str, size: Option<u64>, extra: &str) -> String {
    let size = size.map_or(String::new(), |s| format!("size_bytes = {s}\n"));
    format!(
        r#"
[[flows]]
name = "mp"
kind = "mptcp"
src = "server"
dst = "client"
cc = "{cc}"
{size}[flows.mptcp]
{extra}
[[flows.mptcp.paths]]
name = "a"
via = ["ra"]
[[flows.mptcp.paths]]
name = "b"
via = ["rb"]
"#
    )
}

fn tcp_group(name: &str, src: &str, dst: &str, count: u32) -> String {
    format!(
        "\n[[flows]]\nname = \"{name}\"\nsrc = \"{src}\"\ndst = \"{dst}\"\ncount = {count}\ncc = \"newreno\"\n"
    )
}

fn header(duration_s: u32, interval_ms: u32) -> String {
    format!(
        "name = \"mptcp-test\"\nseed = 1\nduration_s = {duration_s}\nsample_interval_ms = {interval_ms}\n"
    )
}

#[test]
fn a_two_path_transfer_delivers_every_byte_in_data_order() {
    let total = 4_000_000u64;
    let toml =
        header(30, 100) + &two_paths("10e6", 4.0, "10e6", 14.0, 100) + &mptcp_group("lia", Some(total), "");
    let sim = run(&toml);
    let m = mp(&sim, 0);
    assert!(
        m.sender().is_complete(),
        "incomplete: {} of {total}",
        m.sender().data_una()
    );
    assert_eq!(m.sender().data_una(), total);
    assert_eq!(m.receiver.bytes_delivered(), total);
    assert_eq!(m.receiver.buffer().occupancy_bytes(), 0);
    assert_eq!(m.receiver.stats().unmapped_segments, 0);
    // Each data byte went out once (no loss on these paths' large queues
    // would need reinjection): subflow-acknowledged bytes tile the data.
    let (a, b) = (path_acked(m, 0), path_acked(m, 1));
    assert_eq!(a + b, total, "subflows acked {a} + {b}");
    assert!(a > total / 5 && b > total / 5, "split {a} / {b}");
    // The flows table row is the connection's.
    let flows = sim.flows_table();
    let kind = flows
        .column_by_name("kind")
        .unwrap()
        .as_any()
        .downcast_ref::<arrow_array::StringArray>()
        .unwrap()
        .value(0)
        .to_string();
    assert_eq!(kind, "mptcp");
    let names: Vec<&str> = sim.tables().iter().map(|t| t.0).collect();
    for t in ["subflows", "subflow_samples", "mptcp", "mptcp_samples"] {
        assert!(names.contains(&t), "{t} missing from {names:?}");
    }
    let completed = sim.flows_table();
    let c = completed
        .column_by_name("completed")
        .unwrap()
        .as_any()
        .downcast_ref::<arrow_array::BooleanArray>()
        .unwrap()
        .value(0);
    assert!(c);
}

/// RFC 6356 goals 1–2 on two disjoint 10 Mbit/s paths, each shared with
/// one NewReno flow: (MPTCP goodput, mean competing-TCP goodput), Mbit/s.
fn disjoint_paths_with_competition(cc: &str) -> (f64, f64, f64) {
    let toml = header(100, 500)
        + &two_paths("10e6", 10.0, "10e6", 10.0, 60)
        + &mptcp_group(cc, None, "")
        + &tcp_group("tcp-a", "ha", "da", 1)
        + &tcp_group("tcp-b", "hb", "db", 1);
    let sim = run(&toml);
    let from = 20.0;
    let mp = goodput_mbps(&sim, 0, from);
    let (a, b) = (goodput_mbps(&sim, 1, from), goodput_mbps(&sim, 2, from));
    (mp, a, b)
}

#[test]
fn lia_takes_no_more_than_one_tcp_on_the_best_path() {
    // Each path is a 10 Mbit/s bottleneck shared by one NewReno flow and
    // one subflow. A single TCP on the best path (either: they are alike)
    // would share it with that path's TCP and get what that TCP gets, g.
    // Goal 2 (do no harm): MPTCP's total is no more than about g; we allow
    // 30% over g for drop-tail synchronisation and NewReno's variance
    // (the proto's shared-bottleneck test measured LIA 1.4 g there). Two
    // uncoupled subflows are two TCPs and take about 2g: the bound
    // separates the two. Goal 1 (improve throughput): at least 0.8 g.
    let (lia, a, b) = disjoint_paths_with_competition("lia");
    let g = (a + b) / 2.0;
    let (reno, ra, rb) = disjoint_paths_with_competition("newreno");
    let rg = (ra + rb) / 2.0;
    println!("LIA: MPTCP {lia:.2} Mbit/s, TCPs {a:.2} / {b:.2}; uncoupled: MPTCP {reno:.2}, TCPs {ra:.2} / {rb:.2}");
    assert!(lia <= 1.3 * g, "LIA {lia:.2} Mbit/s vs one TCP's {g:.2}");
    assert!(lia >= 0.8 * g, "LIA {lia:.2} Mbit/s below one TCP's {g:.2}");
    assert!(reno > 1.6 * rg, "uncoupled {reno:.2} vs one TCP's {rg:.2}");
    // Everything the paths carry: the two bottlenecks are full.
    assert!(lia + a + b > 18.0, "{lia} + {a} + {b}");
}

/// A fast path (10 Mbit/s) and a slow one (2 Mbit/s) shared with `n_slow`
/// NewReno flows: the share of MPTCP's acknowledged bytes on the fast path
/// over [10 s, end], and the slow subflow's goodput in Mbit/s.
fn fast_share(cc: &str, n_slow: u32) -> (f64, f64) {
    let mut toml = header(60, 500) + &two_paths("10e6", 10.0, "2e6", 10.0, 60) + &mptcp_group(cc, None, "");
    if n_slow > 0 {
        toml += &tcp_group("slow-tcp", "hb", "db", n_slow);
    }
    let mut sim = load(&toml, "mptcp.toml").unwrap();
    sim.run_until(10 * S);
    let m = mp(&sim, 0);
    let (a0, b0) = (path_acked(m, 0), path_acked(m, 1));
    sim.run();
    assert!(sim.conservation_ok());
    let m = mp(&sim, 0);
    let (a, b) = (path_acked(m, 0) - a0, path_acked(m, 1) - b0);
    (a as f64 / (a + b) as f64, b as f64 * 8.0 / 50.0 / 1e6)
}

#[test]
fn lia_moves_traffic_off_a_congested_slow_path() {
    // With the slow path congested by two NewReno flows, an uncoupled
    // subflow there takes a TCP's third of 2 Mbit/s, 0.67 Mbit/s, and the
    // fast share is about 10 / 10.67 = 0.94. LIA balances congestion: the
    // congested path's subflow backs off further (RFC 6356 goal 3), so its
    // fast share is above the uncoupled one and above 0.95.
    let (lia, lia_slow) = fast_share("lia", 2);
    let (reno, reno_slow) = fast_share("newreno", 2);
    let (idle, _) = fast_share("lia", 0);
    println!(
        "fast share: LIA {lia:.3} (slow {lia_slow:.2} Mbit/s), uncoupled {reno:.3} (slow {reno_slow:.2}), LIA uncongested {idle:.3}"
    );
    assert!(lia > 0.95, "LIA fast share {lia:.3}");
    assert!(lia > reno, "LIA {lia:.3} vs uncoupled {reno:.3}");
    assert!(
        lia_slow < reno_slow,
        "slow subflow LIA {lia_slow:.2} vs {reno_slow:.2}"
    );
    // Uncongested, the slow path carries more of the traffic.
    assert!(idle < lia, "uncongested {idle:.3} vs congested {lia:.3}");
}

/// A bulk connection over a 10 ms-RTT and a 100 ms-RTT path (50 Mbit/s
/// each) whose 150 kB receive buffer limits it: whenever a Data ACK opens
/// the connection-level window, both subflows have room in their own
/// windows and the scheduler chooses. Returns (fast share of the bytes the
/// subflows acknowledged, goodput Mbit/s).
fn window_limited_split(scheduler: &str) -> (f64, f64) {
    let extra = format!("scheduler = \"{scheduler}\"\nrecv_buffer_bytes = 150000");
    let toml =
        header(20, 100) + &two_paths("50e6", 2.0, "50e6", 47.0, 400) + &mptcp_group("lia", None, &extra);
    let sim = run(&toml);
    let m = mp(&sim, 0);
    let (f, s) = (path_acked(m, 0), path_acked(m, 1));
    (f as f64 / (f + s) as f64, goodput_mbps(&sim, 0, 5.0))
}

#[test]
fn min_rtt_prefers_the_low_rtt_path_while_it_has_room() {
    // The buffer (150 kB) is below the slow path's bandwidth-delay product
    // (625 kB) but well above the fast one's (62 kB): min-RTT hands the
    // window's room to the fast subflow whenever it has room, so the slow
    // one carries little (share of the fast path above 0.8); round robin
    // hands every other chunk to the slow subflow, whose data holds the
    // window for a 100 ms round trip, and delivers less.
    let (minrtt, minrtt_gp) = window_limited_split("minrtt");
    let (rr, rr_gp) = window_limited_split("roundrobin");
    println!(
        "fast share: minrtt {minrtt:.3} ({minrtt_gp:.1} Mbit/s), roundrobin {rr:.3} ({rr_gp:.1} Mbit/s)"
    );
    assert!(minrtt > 0.8, "minrtt fast share {minrtt:.3}");
    assert!(
        rr < minrtt - 0.2,
        "roundrobin fast share {rr:.3} vs minrtt {minrtt:.3}"
    );
    assert!(minrtt_gp > rr_gp, "{minrtt_gp} vs {rr_gp}");
}

/// Paths of 10 ms and 120 ms RTT (10 Mbit/s each), a bulk connection whose
/// subflows each apply the window only in their own sequence space: the
/// receive buffer's (blocked time ns, drops, goodput Mbit/s).
fn buffer_run(buffer_bytes: u64) -> (u64, u64, f64) {
    let extra = format!("recv_buffer_bytes = {buffer_bytes}\nenforce_data_window = false");
    let toml =
        header(30, 100) + &two_paths("10e6", 2.0, "10e6", 57.0, 100) + &mptcp_group("lia", None, &extra);
    let sim = run(&toml);
    let m = mp(&sim, 0);
    let st = m.receiver.buffer_stats(sim.now_ns);
    let gp = goodput_mbps(&sim, 0, 5.0);
    (st.blocked_ns, st.segments_dropped, gp)
}

#[test]
fn a_small_receive_buffer_blocks_and_drops_a_large_one_does_not_drop() {
    // 2·ΣBW·RTT_max = 2 · 20 Mbit/s · 120 ms = 600 kB (NSDI'12 guidance).
    // 30 kB is a twentieth of it: the fast subflow runs ahead of the data
    // the slow one holds, the buffer overflows, the subflows recover the
    // drops as losses and goodput collapses (NSDI'12 §4.2).
    let (small_blocked, small_drops, small_gp) = buffer_run(30_000);
    let (large_blocked, large_drops, large_gp) = buffer_run(1_200_000);
    println!(
        "30 kB: blocked {:.2} s, {small_drops} drops, {small_gp:.2} Mbit/s; 1.2 MB: blocked {:.2} s, {large_drops} drops, {large_gp:.2} Mbit/s",
        small_blocked as f64 / 1e9,
        large_blocked as f64 / 1e9
    );
    assert!(small_blocked > 0 && small_drops > 0);
    assert_eq!(large_drops, 0);
    assert!(large_gp > small_gp, "{large_gp} vs {small_gp}");
}

#[test]
fn the_same_seed_gives_identical_tables() {
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios/mptcp.toml")).unwrap();
    let digest = || {
        let sim = run(&text);
        sim.tables()
            .iter()
            .map(|(n, b)| (n.to_string(), to_ipc_stream(b).unwrap()))
            .collect::<Vec<_>>()
    };
    let (a, b) = (digest(), digest());
    assert_eq!(a.len(), 10);
    assert!(a == b, "two runs of one seed differ");
}

/// A server behind a proxy `px` (100 Mbit/s, 5 ms), and two paths from
/// the proxy to the client: wired through `eth` (20 Mbit/s, 5 ms RTT) and
/// Wi-Fi-like through `ap` (10 Mbit/s, 15 ms RTT). The client's 100 kB
/// receive buffer is more than the wired path needs and less than both
/// paths' queues hold, so min-RTT keeps the Wi-Fi subflow mostly idle.
fn proxied(size: Option<u64>, proxy_extra: &str) -> String {
    let size = size.map_or(String::new(), |s| format!("size_bytes = {s}\n"));
    format!(
        r#"
[tcp]
preset = "linux"
[topology]
kind = "custom"
nodes = [{{ name = "server" }}, {{ name = "px" }}, {{ name = "eth" }}, {{ name = "ap" }}, {{ name = "client" }}]
links = [
  {{ from = "server", to = "px", rate_bps = 100e6, delay_ms = 5 }},
  {{ from = "px", to = "eth", rate_bps = 20e6, delay_ms = 1.5, queue = {{ kind = "droptail", limit_packets = 50 }} }},
  {{ from = "eth", to = "client", rate_bps = 1e9, delay_ms = 1 }},
  {{ from = "px", to = "ap", rate_bps = 10e6, delay_ms = 6.5, queue = {{ kind = "droptail", limit_packets = 50 }} }},
  {{ from = "ap", to = "client", rate_bps = 1e9, delay_ms = 1 }},
]
[[flows]]
name = "mp"
kind = "mptcp"
src = "server"
dst = "client"
cc = "lia"
{size}[flows.mptcp]
recv_buffer_bytes = 100000
[[flows.mptcp.paths]]
name = "wired"
via = ["eth"]
[[flows.mptcp.paths]]
name = "wifi"
via = ["ap"]
[flows.mptcp.proxy]
node = "px"
{proxy_extra}
"#
    )
}

#[test]
fn a_proxied_transfer_reaches_the_client_whole() {
    let total = 5_000_000u64;
    let toml = header(20, 100)
        + &proxied(
            Some(total),
            "relay_bytes = 1000000\nsyn_delay_ms = 7.8\ndata_delay_ms = 15.3",
        );
    let sim = run(&toml);
    let m = mp(&sim, 0);
    let px = m.proxy().expect("a proxy");
    assert_eq!(m.receiver.bytes_delivered(), total);
    assert_eq!(px.server.stats().bytes_acked, total);
    let st = px.proxy.stats(sim.now_ns);
    assert_eq!(st.bytes_relayed, total);
    assert!(
        st.relay_max_bytes <= 1_000_000 && st.relay_max_bytes > 0,
        "{st:?}"
    );
    // The server's connection opened the SYN delay after the first subflow.
    let first = st.first_subflow_established_at_ns.unwrap();
    assert_eq!(st.upstream_connect_at_ns, Some(first + 7_800_000));
    let fct = m.completed_at().expect("completed");
    println!(
        "proxied 5 MB: {:.3} s, relay max {} bytes",
        fct as f64 / 1e9,
        st.relay_max_bytes
    );
    // At best the two paths' 30 Mbit/s: 5 MB take at least 1.33 s.
    assert!(fct > 1_330_000_000, "{fct}");
    let names: Vec<&str> = sim.tables().iter().map(|t| t.0).collect();
    assert!(names.contains(&"mptcp_proxy"));
}

/// Bytes acknowledged per path over [from_s, to_s], Mbit/s.
fn path_rates(sim: &Simulation, from_s: f64, to_s: f64) -> Vec<f64> {
    let s = &sim.samples.subflows;
    let at = |k: u32, t: f64| {
        (0..s.time_ns.len())
            .find(|&r| s.subflow[r] == k && s.time_ns[r] >= (t * 1e9) as u64)
            .map(|r| s.bytes_acked[r])
            .unwrap()
    };
    (0..2)
        .map(|k| (at(k, to_s) - at(k, from_s)) as f64 * 8.0 / (to_s - from_s) / 1e6)
        .collect()
}

#[test]
fn throttling_the_wired_subflow_at_the_proxy_moves_traffic_to_wifi() {
    // Unthrottled, the wired path (lower RTT, twice the rate) carries most
    // of the traffic. A 2 Mbit/s throttle on it from 5 s holds that
    // subflow to about 2 Mbit/s and the Wi-Fi subflow carries the bulk
    // ("force steering"): the total is below the unthrottled one, above
    // the throttled rate alone.
    let free = run(&(header(20, 100) + &proxied(None, "")));
    let throttled = run(&(header(20, 100)
        + &proxied(
            None,
            "[flows.mptcp.proxy.throttle]\npath = \"wired\"\nrate_bps = 2e6\nafter_s = 5",
        )));
    let (f, t) = (path_rates(&free, 10.0, 20.0), path_rates(&throttled, 10.0, 20.0));
    let st = mp(&throttled, 0).proxy().unwrap().proxy.stats(throttled.now_ns);
    println!(
        "wired/wifi Mbit/s over [10, 20] s: free {:.2}/{:.2}, throttled {:.2}/{:.2}; installed at {:?} ns",
        f[0], f[1], t[0], t[1], st.throttle_installed_at_ns
    );
    assert!(f[0] > 2.0 * f[1], "free: wired {:.2} vs wifi {:.2}", f[0], f[1]);
    assert!(t[0] < 2.1, "throttled wired {:.2}", t[0]);
    assert!(
        t[1] > 4.0 * t[0] && t[1] > f[1],
        "wifi {:.2} throttled vs {:.2}",
        t[1],
        f[1]
    );
    assert!(t[0] + t[1] < f[0] + f[1] && t[0] + t[1] > 5.0);
    assert!(st.throttle_installed_at_ns.unwrap() >= 5_000_000_000);
}
