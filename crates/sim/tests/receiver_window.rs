//! Receiver-side window control in the simulator (docs/models/receiver-window.md):
//! RTAC's operating point on a clean path, the three receivers on a bloated
//! LTE user queue, and auto-tuning's tcp_rmem_max trade-off.
//!
//! `cargo test --release -p latlab-sim --test integration receiver_window:: -- --nocapture`
//! prints the measured figures.

use latlab_sim::{load, Simulation};

const S: u64 = 1_000_000_000;

fn build(toml: &str) -> Simulation {
    load(toml, "receiver-window.toml").unwrap_or_else(|e| panic!("{e}"))
}

/// What one flow did over [from, end].
#[derive(Debug, Clone, Copy)]
struct FlowFigures {
    goodput_bps: f64,
    /// Sender srtt, sampled every 10 ms: mean and median, ms.
    rtt_mean_ms: f64,
    rtt_p50_ms: f64,
    /// Smallest RTT the sender measured, ms.
    rtt_min_ms: f64,
    /// Bytes in flight, sampled: mean.
    flight_mean_bytes: f64,
    /// Advertised window the sender saw, sampled: mean.
    rwnd_mean_bytes: f64,
}

fn run(toml: &str, from_ns: u64) -> FlowFigures {
    let mut sim = build(toml);
    sim.run_until(from_ns);
    let b0 = sim.flows[0].bytes_delivered();
    sim.run();
    assert!(sim.conservation_ok());
    let secs = (sim.duration_ns - from_ns) as f64 / 1e9;
    let goodput_bps = (sim.flows[0].bytes_delivered() - b0) as f64 * 8.0 / secs;
    let s = &sim.samples.flows;
    let rows: Vec<usize> = (0..s.time_ns.len())
        .filter(|&r| s.flow_id[r] == 0 && s.time_ns[r] >= from_ns)
        .collect();
    let mean = |v: &mut dyn Iterator<Item = f64>| {
        let (sum, n) = v.fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
        sum / n as f64
    };
    let mut rtt: Vec<u64> = rows.iter().map(|&r| s.srtt_ns[r]).collect();
    rtt.sort();
    let tcp = sim.flows[0].tcp().unwrap();
    FlowFigures {
        goodput_bps,
        rtt_mean_ms: mean(&mut rtt.iter().map(|&x| x as f64 / 1e6)),
        rtt_p50_ms: rtt[rtt.len() / 2] as f64 / 1e6,
        rtt_min_ms: tcp.sender.min_rtt_ns() as f64 / 1e6,
        flight_mean_bytes: mean(&mut rows.iter().map(|&r| s.flight_bytes[r].unwrap() as f64)),
        rwnd_mean_bytes: mean(&mut rows.iter().map(|&r| s.rwnd_bytes[r].unwrap() as f64)),
    }
}

fn show(label: &str, f: &FlowFigures) {
    println!(
        "{label:<34} goodput {:6.2} Mb/s  RTT mean {:6.1} ms  p50 {:6.1} ms  min {:5.1} ms  \
         flight {:7.0} B  rwnd {:8.0} B",
        f.goodput_bps / 1e6,
        f.rtt_mean_ms,
        f.rtt_p50_ms,
        f.rtt_min_ms,
        f.flight_mean_bytes,
        f.rwnd_mean_bytes
    );
}

/// One 20 Mb/s, 20 ms link with a deep (2000-packet) buffer; one flow.
fn clean_path(tcp: &str, duration_s: f64) -> String {
    format!(
        r#"
name = "clean"
seed = 3
duration_s = {duration_s}
sample_interval_ms = 10
[tcp]
preset = "linux"
{tcp}
[topology]
kind = "custom"
nodes = [{{ name = "a" }}, {{ name = "b" }}]
links = [{{ from = "a", to = "b", rate_bps = 20e6, delay_ms = 20, queue = {{ kind = "droptail", limit_packets = 2000 }} }}]
[[flows]]
src = "a"
dst = "b"
cc = "cubic"
"#
    )
}

#[test]
fn rtac_holds_theta_bdp_in_flight_on_a_clean_path() {
    let clean = |theta: f64| {
        let tcp =
            format!("rwnd_controller = \"rtac\"\nrwnd_params = {{ theta = {theta}, link_rate_bps = 20e6 }}");
        let f = run(&clean_path(&tcp, 20.0), 5 * S);
        show(&format!("clean path, RTAC theta {theta}"), &f);
        // BDP as RTAC configures K: link rate × RTT_min, in bytes.
        let bdp_bytes = 20e6 / 8.0 * f.rtt_min_ms / 1e3;
        let ratio = f.flight_mean_bytes / (theta * bdp_bytes);
        println!(
            "  in flight / (theta·BDP) = {ratio:.3}; RTT / RTT_min = {:.3}",
            f.rtt_mean_ms / f.rtt_min_ms
        );
        (f, ratio)
    };
    for theta in [1.3, 1.38, 1.5, 2.0] {
        let (f, ratio) = clean(theta);
        assert!((ratio - 1.0).abs() < 0.10, "theta {theta}: ratio {ratio}");
        // The link stays busy (θ > 1 keeps a standing queue).
        assert!(f.goodput_bps > 0.95 * 20e6 * 1448.0 / 1500.0, "{f:?}");
    }
    // Below θ ≈ 1.28 the once-per-RTT update overshoots: the slope of the
    // window map at the fixed point, (1 − α)·(θ − 2)/(2(θ − 1)) + α, is
    // below −1 (−1.625 at θ = 1.2 with α = 1/8), so the window oscillates
    // instead of settling (docs/models/receiver-window.md).
    let (_, ratio) = clean(1.2);
    assert!(ratio > 1.3, "theta 1.2 settled unexpectedly: {ratio}");
}

/// One LTE user at 40 Mb/s behind a 2 MB (bloated) RLC queue, 50 ms base
/// RTT (wired 20 ms + radio 5 ms each way), CUBIC with timestamps.
fn lte(tcp: &str, duration_s: f64) -> String {
    format!(
        r#"
name = "lte"
seed = 5
duration_s = {duration_s}
sample_interval_ms = 10
[tcp]
preset = "linux"
{tcp}
[topology]
kind = "cellular"
users = 1
wired_delay_ms = 20
radio_delay_ms = 5
rate = {{ constant_bps = 40e6 }}
queue = {{ kind = "droptail", limit_bytes = 2000000 }}
[[flows]]
src = "server"
dst = "ue0"
cc = "cubic"
"#
    )
}

const AUTOTUNING: &str = "rwnd_controller = \"autotuning\"\nrwnd_params = { rmem_max_bytes = 2621440 }";
const DRWA: &str = "rwnd_controller = \"drwa\"\nrwnd_params = { rmem_max_bytes = 2621440 }";
const RTAC: &str =
    "rwnd_controller = \"rtac\"\nrwnd_params = { theta = 1.38, link_rate_bps = 40e6, rmem_max_bytes = 2621440 }";

#[test]
fn drwa_and_rtac_remove_most_of_the_lte_bloat_at_nearly_full_throughput() {
    let auto = run(&lte(AUTOTUNING, 20.0), 5 * S);
    let drwa = run(&lte(DRWA, 20.0), 5 * S);
    let rtac = run(&lte(RTAC, 20.0), 5 * S);
    show("LTE, auto-tuning (2560 KB)", &auto);
    show("LTE, DRWA (lambda 3)", &drwa);
    show("LTE, RTAC (theta 1.38)", &rtac);
    // Auto-tuning fills the queue: RTT far above RTT_min.
    assert!(auto.rtt_p50_ms > 4.0 * auto.rtt_min_ms, "{auto:?}");
    // DRWA settles where its window map is fixed, RTT = λ·RTT_min; RTAC at
    // θ·RTT_min.
    assert!(
        (drwa.rtt_p50_ms / (3.0 * drwa.rtt_min_ms) - 1.0).abs() < 0.2,
        "{drwa:?}"
    );
    assert!(
        (rtac.rtt_p50_ms / (1.38 * rtac.rtt_min_ms) - 1.0).abs() < 0.1,
        "{rtac:?}"
    );
    let excess = |g: &FlowFigures| g.rtt_mean_ms - g.rtt_min_ms;
    for (name, f, most) in [("drwa", &drwa, 0.5), ("rtac", &rtac, 0.15)] {
        // Most of the excess delay is gone...
        assert!(excess(f) < most * excess(&auto), "{name}: {f:?} vs {auto:?}");
        // ... at 90 % or more of auto-tuning's goodput.
        assert!(
            f.goodput_bps >= 0.9 * auto.goodput_bps,
            "{name}: {f:?} vs {auto:?}"
        );
        // The advertised window the sender saw is the controller's, well below the cap.
        assert!(f.rwnd_mean_bytes < 0.5 * 2621440.0, "{name}: {f:?}");
    }
}

#[test]
fn tcp_rmem_max_trades_throughput_for_delay() {
    let sizes_kb = [64u64, 256, 640, 2560];
    let figs: Vec<FlowFigures> = sizes_kb
        .iter()
        .map(|kb| {
            let tcp = format!(
                "rwnd_controller = \"autotuning\"\nrwnd_params = {{ rmem_max_bytes = {} }}",
                kb * 1024
            );
            let f = run(&lte(&tcp, 15.0), 5 * S);
            show(&format!("LTE, auto-tuning {kb} KB"), &f);
            f
        })
        .collect();
    let (small, mid, large) = (&figs[0], &figs[2], &figs[3]);
    // Too small underutilises the 40 Mb/s user: 64 KB per 50 ms is ~10 Mb/s.
    assert!(small.goodput_bps < 0.5 * large.goodput_bps, "{small:?}");
    // Too large bloats; a middle size keeps nearly all the throughput at a
    // fraction of the delay.
    assert!(large.rtt_mean_ms > 2.0 * mid.rtt_mean_ms, "{mid:?} vs {large:?}");
    assert!(mid.goodput_bps >= 0.9 * large.goodput_bps, "{mid:?} vs {large:?}");
    // Goodput never falls and delay never shrinks as the cap grows.
    for w in figs.windows(2) {
        assert!(w[1].goodput_bps >= 0.97 * w[0].goodput_bps, "{figs:?}");
        assert!(w[1].rtt_mean_ms >= 0.97 * w[0].rtt_mean_ms, "{figs:?}");
    }
}

#[test]
fn without_timestamps_the_receiver_rtt_is_a_running_minimum() {
    // The window method's estimate only falls, so the receivers see no
    // queue: auto-tuning stops near 2·C·RTT_min (its per-RTT delivery is
    // C·RTT_min once the link is full), DRWA's RTT_min/RTT is 1 and it sits
    // at λ·C·RTT_min, and RTAC's Q̂ is 0, so it opens to tcp_rmem_max.
    let figs: Vec<FlowFigures> = [AUTOTUNING, DRWA, RTAC]
        .iter()
        .zip(["auto-tuning", "DRWA", "RTAC"])
        .map(|(tcp, name)| {
            let f = run(&lte(&format!("{tcp}\ntimestamps = false"), 20.0), 5 * S);
            show(&format!("LTE, no timestamps, {name}"), &f);
            f
        })
        .collect();
    let (auto, drwa, rtac) = (&figs[0], &figs[1], &figs[2]);
    let c_rtt_min = 40e6 / 8.0 * auto.rtt_min_ms / 1e3;
    assert!(
        (auto.rwnd_mean_bytes / (2.0 * c_rtt_min) - 1.0).abs() < 0.25,
        "{auto:?}"
    );
    assert!(
        (drwa.rwnd_mean_bytes / (3.0 * c_rtt_min) - 1.0).abs() < 0.25,
        "{drwa:?}"
    );
    assert!(rtac.rwnd_mean_bytes > 0.9 * 2621440.0, "{rtac:?}");
    assert!(rtac.rtt_p50_ms > 4.0 * rtac.rtt_min_ms, "{rtac:?}");
}

/// A Wi-Fi AP at 72 Mb/s PHY with one 400-packet buffer shared by its two
/// stations, 14 ms RTT_min; CUBIC to station 0 with `tcp0` and, when
/// given, to station 1 with `tcp1`.
fn wifi(tcp0: &str, tcp1: Option<&str>, duration_s: f64) -> String {
    let second = match tcp1 {
        Some(t) => format!("[[flows]]\nsrc = \"server\"\ndst = \"sta1\"\ncc = \"cubic\"\ntcp = {{ {t} }}\n"),
        None => String::new(),
    };
    format!(
        r#"
name = "wifi"
seed = 5
duration_s = {duration_s}
sample_interval_ms = 10
[tcp]
preset = "linux"
[topology]
kind = "wifi"
stations = 2
wired_delay_ms = 6
radio_delay_ms = 1
rate = {{ constant_bps = 72e6 }}
ap = {{ queue = {{ kind = "droptail", limit_packets = 400 }} }}
[[flows]]
src = "server"
dst = "sta0"
cc = "cubic"
tcp = {{ {tcp0} }}
{second}
"#
    )
}

#[test]
fn on_a_shared_wifi_buffer_rtac_competes_and_drwa_starves() {
    let auto = "rwnd_controller = \"autotuning\"";
    let drwa = "rwnd_controller = \"drwa\"";
    // θ = 1.38 at the AP's delivered rate (69.5 Mb/s here).
    let rtac = "rwnd_controller = \"rtac\", rwnd_params = { theta = 1.38, link_rate_bps = 69.5e6 }";
    let single: Vec<FlowFigures> = [("auto-tuning", auto), ("DRWA", drwa), ("RTAC", rtac)]
        .iter()
        .map(|(name, t)| {
            let f = run(&wifi(t, None, 20.0), 5 * S);
            show(&format!("Wi-Fi, one station, {name}"), &f);
            f
        })
        .collect();
    let excess = |g: &FlowFigures| g.rtt_mean_ms - g.rtt_min_ms;
    assert!(
        single[0].rtt_p50_ms > 3.0 * single[0].rtt_min_ms,
        "{:?}",
        single[0]
    );
    for f in &single[1..] {
        assert!(excess(f) < 0.6 * excess(&single[0]), "{f:?}");
        assert!(f.goodput_bps >= 0.9 * single[0].goodput_bps, "{f:?}");
    }
    // Direct competition: station 0 runs the receiver under test, station 1
    // auto-tuning; goodput over the last 20 of 30 s.
    let share = |t: &str| {
        let mut sim = build(&wifi(t, Some(auto), 30.0));
        sim.run_until(10 * S);
        let b = (sim.flows[0].bytes_delivered(), sim.flows[1].bytes_delivered());
        sim.run();
        let g0 = (sim.flows[0].bytes_delivered() - b.0) as f64 * 8.0 / 20.0;
        let g1 = (sim.flows[1].bytes_delivered() - b.1) as f64 * 8.0 / 20.0;
        (g0, g1)
    };
    let mut ratios = Vec::new();
    for (name, t) in [("auto-tuning", auto), ("DRWA", drwa), ("RTAC", rtac)] {
        let (g0, g1) = share(t);
        println!(
            "Wi-Fi, {name:<11} beside auto-tuning: {:6.2} vs {:6.2} Mb/s ({:.2})",
            g0 / 1e6,
            g1 / 1e6,
            g0 / g1
        );
        ratios.push(g0 / g1);
    }
    // Two auto-tuning flows share evenly; DRWA, Vegas-like, starves; RTAC
    // holds a good part of its share (the RTAC study reports about 95 %;
    // latlab measures less, docs/models/receiver-window.md).
    assert!((ratios[0] - 1.0).abs() < 0.15, "{ratios:?}");
    assert!(ratios[1] < 0.1, "{ratios:?}");
    assert!(ratios[2] > 0.5, "{ratios:?}");
}

/// The `receiver_samples` table: an adaptive receiver's estimates beside the
/// sender's state at the same instant. On a clean path with RTAC binding the
/// window, the receiver's RTT estimate follows the sender's srtt and its
/// window estimate (bytes delivered per RTT) follows the data in flight; a
/// fixed-window receiver has no such table.
#[test]
fn receiver_samples_set_the_receivers_estimates_beside_the_sender() {
    let tcp = "rwnd_controller = \"rtac\"\nrwnd_params = { theta = 1.38, link_rate_bps = 20e6 }";
    let mut sim = build(&clean_path(tcp, 20.0));
    sim.run();
    let names: Vec<&str> = sim.tables().into_iter().map(|(n, _)| n).collect();
    assert!(names.contains(&"receiver_samples"), "{names:?}");
    let r = &sim.samples.receivers;
    let rows: Vec<usize> = (0..r.time_ns.len()).filter(|&i| r.time_ns[i] >= 5 * S).collect();
    assert!(rows.len() > 1000, "{} rows", rows.len());
    let mean_rel = |est: &dyn Fn(usize) -> Option<f64>, truth: &dyn Fn(usize) -> f64| {
        let errs: Vec<f64> = rows
            .iter()
            .filter_map(|&i| est(i).map(|e| (e - truth(i)).abs() / truth(i)))
            .collect();
        errs.iter().sum::<f64>() / errs.len() as f64
    };
    let rtt_err = mean_rel(&|i| r.rcv_rtt_ns[i].map(|x| x as f64), &|i| r.srtt_ns[i] as f64);
    let flight_err = mean_rel(&|i| r.rcv_window_est_bytes[i], &|i| {
        r.flight_bytes[i].max(1) as f64
    });
    println!("receiver RTT vs srtt: {rtt_err:.3}; window estimate vs flight: {flight_err:.3}");
    assert!(rtt_err < 0.10, "RTT estimate off by {rtt_err}");
    assert!(flight_err < 0.15, "window estimate off by {flight_err}");
    // The sender's columns are the flow samples' at the same instant.
    let i = *rows.last().unwrap();
    let s = &sim.samples.flows;
    let j = (0..s.time_ns.len())
        .rfind(|&j| s.time_ns[j] == r.time_ns[i])
        .unwrap();
    assert_eq!(Some(r.cwnd_bytes[i]), s.cwnd_bytes[j]);
    assert_eq!(r.srtt_ns[i], s.srtt_ns[j]);

    let mut fixed = build(&clean_path("", 2.0));
    fixed.run();
    assert!(fixed.tables().iter().all(|(n, _)| *n != "receiver_samples"));
    assert!(fixed.samples.receivers.time_ns.is_empty());
}
