//! BBR in the simulator: alone on a path it reaches the bottleneck's rate
//! with a small standing queue, where CUBIC on the same path fills the
//! buffer. Self-contained (its own scenario text, no shared helpers).

use latlab_sim::load;

/// 20 Mbit/s, 20 ms each way (BDP 100 kB, 67 packets of 1500 B), DropTail
/// of 4 BDP; one Linux-like download with controller `cc`.
fn path(cc: &str) -> String {
    format!(
        r#"
seed = 3
duration_s = 20
sample_interval_ms = 0
[topology]
kind = "custom"
nodes = [{{ name = "client" }}, {{ name = "server" }}]
links = [{{ from = "client", to = "server", rate_bps = 20e6, delay_ms = 20, queue = {{ kind = "droptail", limit_packets = 267 }} }}]
[[flows]]
src = "server"
dst = "client"
cc = "{cc}"
tcp = {{ preset = "linux" }}
"#
    )
}

/// Goodput as a share of the link's payload rate over [5 s, 20 s], and
/// the median of the sender's smoothed RTT sampled every 100 ms there.
fn goodput_share_and_median_srtt_ms(cc: &str) -> (f64, f64) {
    let mut sim = load(&path(cc), "bbr.toml").unwrap_or_else(|e| panic!("{e}"));
    let from_ns = 5_000_000_000u64;
    sim.run_until(from_ns);
    let acked0 = sim.flows[0].tcp().unwrap().sender.stats().bytes_acked;
    let mut srtts = Vec::new();
    let mut t = from_ns;
    while t < sim.duration_ns {
        t += 100_000_000;
        sim.run_until(t);
        srtts.push(sim.flows[0].tcp().unwrap().sender.srtt_ns() as f64 / 1e6);
    }
    let s = &sim.flows[0].tcp().unwrap().sender;
    let acked = s.stats().bytes_acked - acked0;
    let secs = (t - from_ns) as f64 / 1e9;
    // Payload share of a 1500-byte packet with the linux preset: 1448 B.
    let payload_bps = 20e6 * 1448.0 / 1500.0;
    srtts.sort_by(|a, b| a.partial_cmp(b).unwrap());
    (acked as f64 * 8.0 / secs / payload_bps, srtts[srtts.len() / 2])
}

#[test]
fn bbr_reaches_the_link_rate_with_a_small_standing_queue() {
    let (bbr_share, bbr_srtt_ms) = goodput_share_and_median_srtt_ms("bbr");
    let (cubic_share, cubic_srtt_ms) = goodput_share_and_median_srtt_ms("cubic");
    println!("bbr: goodput {bbr_share:.3} of the link, median srtt {bbr_srtt_ms:.1} ms");
    println!("cubic: goodput {cubic_share:.3} of the link, median srtt {cubic_srtt_ms:.1} ms");
    // Near the link rate (PROBE_RTT costs about 2 %, the 1 % pacing margin
    // is made up by the 5/4 phase and cwnd).
    assert!(bbr_share > 0.9, "BBR goodput {bbr_share:.3} of the link");
    // The base RTT is 40 ms plus serialization; BBR's cwnd of 2 BDP bounds
    // the queue by one BDP (40 ms), and pacing at bw keeps it well below.
    assert!(bbr_srtt_ms < 40.0 + 20.0, "BBR median srtt {bbr_srtt_ms:.1} ms");
    // CUBIC on the same path fills much of the 4-BDP buffer.
    assert!(
        cubic_srtt_ms > 2.0 * bbr_srtt_ms,
        "CUBIC {cubic_srtt_ms:.1} ms vs BBR {bbr_srtt_ms:.1} ms"
    );
}

#[test]
fn bbr_runs_repeat_with_the_same_seed() {
    let run = |seed: u64| {
        let text = path("bbr").replace("seed = 3", &format!("seed = {seed}"));
        let mut sim = load(&text, "bbr.toml").unwrap();
        sim.run();
        sim.flows[0].tcp().unwrap().sender.stats().bytes_acked
    };
    assert_eq!(run(3), run(3), "same scenario and seed, same run");
}

/// The `cc_samples` table: BBR's model every sample, which the path above
/// pins down (bw near the link's payload rate, min_rtt the 40 ms base RTT
/// plus serialization, the cwnd target 2 BDP and a few packets); a run
/// with no model-based controller has no such table.
#[test]
fn cc_samples_hold_the_bbr_model() {
    let text = path("bbr").replace("sample_interval_ms = 0", "sample_interval_ms = 100");
    let mut sim = load(&text, "bbr.toml").unwrap();
    sim.run();
    let names: Vec<&str> = sim.tables().into_iter().map(|(n, _)| n).collect();
    assert!(names.contains(&"cc_samples"), "{names:?}");
    let c = &sim.samples.cc;
    let last = c.time_ns.len() - 1;
    assert_eq!(c.time_ns.len(), sim.samples.flows.time_ns.len());
    assert!(c.mode.contains(&"probe_bw"), "{:?}", c.mode);
    let payload_bps = 20e6 * 1448.0 / 1500.0;
    let bw = c.bw_bps[last] as f64;
    assert!((0.9 * payload_bps..1.1 * payload_bps).contains(&bw), "bw {bw}");
    let min_rtt_ms = c.min_rtt_ns[last].expect("an RTT sample") as f64 / 1e6;
    assert!((40.0..42.0).contains(&min_rtt_ms), "min_rtt {min_rtt_ms} ms");
    let bdp_bytes = bw / 8.0 * min_rtt_ms / 1e3;
    let target = c.target_cwnd_bytes[last] as f64;
    assert!(
        (2.0 * bdp_bytes..2.0 * bdp_bytes + 30.0 * 1448.0).contains(&target),
        "target {target} B, BDP {bdp_bytes} B"
    );

    let mut cubic = load(
        &path("cubic").replace("sample_interval_ms = 0", "sample_interval_ms = 100"),
        "c.toml",
    )
    .unwrap();
    cubic.run();
    assert!(cubic.tables().iter().all(|(n, _)| *n != "cc_samples"));
}
