//! Workloads beside bulk TCP: closed-loop users and open-loop UDP.

use latlab_sim::load;

fn two_nodes(flows: &str, loss: f64) -> String {
    format!(
        r#"
duration_s = 60
sample_interval_ms = 0
[tcp]
preset = "ns2"
[topology]
kind = "custom"
nodes = [{{ name = "a" }}, {{ name = "b" }}]
links = [{{ from = "a", to = "b", rate_bps = 10e6, delay_ms = 20, loss = {loss}, queue = {{ kind = "droptail", limit_packets = 50 }} }}]
{flows}
"#
    )
}

#[test]
fn closed_loop_users_alternate_transfers_and_think_times() {
    let flows = r#"
[[flows]]
count = 4
src = "a"
dst = "b"
closed_loop = { file_bytes = 50000, think_mean_s = 0.5 }
"#;
    let mut sim = load(&two_nodes(flows, 0.0), "users.toml").unwrap();
    sim.run();
    assert!(sim.conservation_ok());
    let t = sim.transfers_table();
    let n = t.num_rows();
    // A 50 KB file takes ~0.2 s (handshake + a few RTTs) and a user thinks
    // 0.5 s on average: ~80 files per user in 60 s, 4 users.
    assert!((200..500).contains(&n), "{n} transfers");
    let fct = t
        .column_by_name("fct_ns")
        .unwrap()
        .as_any()
        .downcast_ref::<arrow_array::UInt64Array>()
        .unwrap();
    // Every file needs at least the handshake and one data round trip (2 × 40 ms).
    assert!(
        fct.values().iter().all(|&x| x >= 80_000_000),
        "a transfer finished faster than two RTTs"
    );
    for f in &sim.flows {
        let delivered = f.bytes_delivered();
        let done = f.tcp().unwrap().closed_loop.as_ref().unwrap().transfers.len() as u64;
        // Delivered bytes cover the finished files, plus part of the live one.
        assert!(
            delivered >= done * 50_000 && delivered < (done + 1) * 50_000,
            "{delivered} bytes for {done} files"
        );
    }
}

#[test]
fn udp_sources_deliver_at_their_rate_with_propagation_delay() {
    let flows = r#"
[[flows]]
name = "poisson"
kind = "udp"
src = "a"
dst = "b"
udp = { pattern = "poisson", rate_bps = 2e6, size_bytes = [100, 300] }
[[flows]]
name = "cbr"
kind = "udp"
src = "a"
dst = "b"
udp = { pattern = "cbr", rate_bps = 1e6, size_bytes = 125 }
"#;
    let mut sim = load(&two_nodes(flows, 0.0), "udp.toml").unwrap();
    sim.run();
    assert!(sim.conservation_ok());
    // Under capacity (3 Mb/s on 10 Mb/s): the queue never overflows, so
    // what was sent and not received is exactly what is still on the link.
    let link = &sim.links[0];
    assert_eq!(link.qdisc_stats().drops_pkts(), 0);
    let in_flight = sim.on_wire_pkts(0) + link.held_pkts();
    let unreceived: u64 = sim
        .flows
        .iter()
        .map(|f| f.udp().unwrap().source.sent_pkts - f.udp().unwrap().received_pkts)
        .sum();
    assert_eq!(unreceived, in_flight);
    for (f, rate) in sim.flows.iter().zip([2e6, 1e6]) {
        let u = f.udp().unwrap();
        let measured = u.received_bytes as f64 * 8.0 / 60.0;
        assert!((measured / rate - 1.0).abs() < 0.03, "rate {measured} vs {rate}");
        let mean_owd = u.owd_sum_ns as f64 / u.received_pkts as f64;
        assert!((20e6..25e6).contains(&mean_owd), "one-way delay {mean_owd} ns");
    }
}

#[test]
fn udp_loss_follows_the_link_loss_rate() {
    let flows = r#"
[[flows]]
kind = "udp"
src = "a"
dst = "b"
udp = { pattern = "cbr", rate_bps = 4e6, size_bytes = 500 }
"#;
    let mut sim = load(&two_nodes(flows, 0.05), "udp-loss.toml").unwrap();
    sim.run();
    let u = sim.flows[0].udp().unwrap();
    let loss = 1.0 - u.received_pkts as f64 / u.source.sent_pkts as f64;
    assert!((loss - 0.05).abs() < 0.01, "loss {loss}");
}

#[test]
fn lrd_source_delivers_its_mean_rate() {
    let flows = r#"
[[flows]]
kind = "udp"
src = "a"
dst = "b"
udp = { pattern = "lrd", rate_bps = 3e6, size_bytes = [100, 300], hurst = 0.85 }
"#;
    let mut sim = load(
        &two_nodes(flows, 0.0).replace("limit_packets = 50", "limit_packets = 100000"),
        "lrd.toml",
    )
    .unwrap();
    sim.run();
    assert!(sim.conservation_ok());
    let u = sim.flows[0].udp().unwrap();
    let rate = u.source.sent_bytes as f64 * 8.0 / 60.0;
    // fGn is strongly correlated: over 60 s the sample mean wanders more than
    // Poisson's would; the Norros mean is exact in expectation.
    assert!((rate / 3e6 - 1.0).abs() < 0.15, "rate {rate}");
}

#[test]
fn edge_pacer_on_a_link_holds_packets_at_most_its_delay_bound() {
    let toml = r#"
duration_s = 30
sample_interval_ms = 100
[tcp]
preset = "ns2"
[topology]
kind = "custom"
nodes = [{ name = "a" }, { name = "e" }, { name = "b" }]
links = [
  { from = "a", to = "e", rate_bps = 20e6, delay_ms = 1 },
  { from = "e", to = "b", rate_bps = 20e6, delay_ms = 20, queue = { kind = "edge-pacer", delay_ms = 10, limit_packets = 1000 } },
]
[[flows]]
count = 3
src = "a"
dst = "b"
size_bytes = 200000
start_s = { uniform = [0, 5] }
"#;
    let mut sim = load(toml, "pacer.toml").unwrap();
    sim.run();
    assert!(sim.conservation_ok());
    let link = sim.links.iter().position(|l| l.name == "e->b").unwrap();
    let s = &sim.samples.links;
    let max_sojourn = s
        .link_id
        .iter()
        .zip(&s.sojourn_max_ns)
        .filter(|(l, _)| **l == link as u32)
        .map(|(_, x)| *x)
        .max()
        .unwrap();
    // Arrivals come over a link no faster than the paced one, so the link
    // always keeps up (the pacer's guarantee needs that: a burst faster than
    // the link can drain in d is late whatever the pacer does). Every packet
    // then leaves by its deadline (10 ms), and the pacer does hold packets.
    assert!(max_sojourn <= 10_000_000, "a packet waited {max_sojourn} ns");
    assert!(max_sojourn > 1_000_000, "the pacer never held a packet");
    assert!(sim.flows.iter().all(|f| f.tcp().unwrap().sender.is_complete()));
}
