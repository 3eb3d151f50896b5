//! Host pacing in the simulator: in congestion avoidance a paced sender
//! spaces its packets by wire_bytes / (factor · cwnd / srtt), the ns-2
//! pacing patch's "window spread over one RTT" (factor 1).
//!
//! The rate is counted in payload bytes (cwnd) and spent on wire bytes, as
//! Linux's fq paces skb lengths at a cwnd-based rate; in packets the gap is
//! srtt/cwnd × wire/payload (1000/960 with the ns2 preset, 4% above the
//! textbook srtt/cwnd).

use latlab_sim::load;

#[test]
fn paced_sender_spaces_packets_by_srtt_over_cwnd_in_congestion_avoidance() {
    // A fast access link into a 10 Mb/s bottleneck with a buffer of half a
    // BDP: the flow reaches congestion avoidance after its first loss; its
    // own link (1 Gb/s) never spaces packets, so any spacing is the pacer's.
    let toml = r#"
duration_s = 40
sample_interval_ms = 0
[tcp]
preset = "ns2"
pacing = true
pacing_ss_factor = 1.0
pacing_ca_factor = 1.0
[topology]
kind = "custom"
nodes = [{ name = "a" }, { name = "r" }, { name = "b" }]
links = [
  { from = "a", to = "r", rate_bps = 1e9, delay_ms = 1 },
  { from = "r", to = "b", rate_bps = 10e6, delay_ms = 49, queue = { kind = "droptail", limit_packets = 62 } },
]
[[flows]]
src = "a"
dst = "b"
"#;
    let mut sim = load(toml, "pacing.toml").unwrap();
    let step_ns = 20_000; // 20 µs: far below the expected gaps (~1 ms)
    let (mut t, mut last_sent, mut last_send_ns) = (0u64, 0u64, 0u64);
    let mut ratios = Vec::new();
    while t < sim.duration_ns {
        t += step_ns;
        sim.run_until(t);
        let s = &sim.flows[0].tcp().unwrap().sender;
        let sent = s.stats().segments_sent;
        let in_ca =
            s.stats().fast_retransmits > 0 && !s.in_recovery() && s.cwnd_bytes() >= s.ssthresh_bytes();
        if sent == last_sent + 1 && in_ca && t > 15_000_000_000 {
            // One packet left in this step: the gap since the previous one.
            let gap_ns = (t - last_send_ns) as f64;
            let (wire_bytes, factor) = (1000.0, 1.0);
            let expected_ns = wire_bytes * s.srtt_ns() as f64 / (factor * s.cwnd_bytes() as f64);
            ratios.push(gap_ns / expected_ns);
        }
        if sent != last_sent {
            last_sent = sent;
            last_send_ns = t;
        }
    }
    assert!(ratios.len() > 1000, "only {} paced gaps observed", ratios.len());
    ratios.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let median = ratios[ratios.len() / 2];
    println!(
        "{} gaps in congestion avoidance: median gap / (wire·srtt/cwnd) = {median:.3}",
        ratios.len()
    );
    // Gaps are measured to the 20 µs step on ~1 ms spacings, and cwnd grows
    // between the send that set a gap and its measurement (a small upward
    // bias): the median must sit on the model.
    assert!((median - 1.0).abs() < 0.05, "median ratio {median}");
}
