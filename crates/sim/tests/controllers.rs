//! Controllers end to end: one bulk flow over a dumbbell whose bottleneck
//! buffer is a quarter of the bandwidth-delay product.
//!
//! Reno halves its window at each loss, which empties so small a buffer and
//! idles the link for part of every cycle. H-TCP backs off by
//! β = minRTT/maxRTT (here about 0.8) and Westwood+ to the measured
//! bandwidth times the minimum RTT (the pipe without the queue), so both
//! keep the bottleneck busy.

use latlab_sim::{load, Simulation};

/// 10 Mb/s core with 20 ms one way, access links 100 Mb/s and 2 ms: RTT
/// 48 ms plus serialization, BDP ≈ 60 packets of 1000 B; the buffer holds
/// 15.
fn dumbbell(cc: &str, preset: &str) -> Simulation {
    let toml = format!(
        r#"
name = "controllers-{cc}"
seed = 5
duration_s = 40
sample_interval_ms = 0
[tcp]
preset = "{preset}"
[topology]
kind = "dumbbell"
pairs = 1
access_rate_bps = 100e6
access_delay_ms = 2
core_rate_bps = 10e6
core_delay_ms = 20
core_queue = {{ kind = "droptail", limit_bytes = 15000 }}
[[flows]]
src = "s0"
dst = "d0"
cc = "{cc}"
"#
    );
    load(&toml, "controllers.toml").unwrap_or_else(|e| panic!("{e}"))
}

/// Bottleneck utilisation over [from_s, end] and the loss events then.
fn utilisation(sim: &mut Simulation, from_s: f64) -> (f64, u64) {
    let from_ns = (from_s * 1e9) as u64;
    sim.run_until(from_ns);
    let core = sim.links.iter().position(|l| l.name == "left->right").unwrap();
    let bytes0 = sim.links[core].counters.departures_bytes;
    let losses0 = sim.flows[0].tcp().unwrap().sender.stats().fast_retransmits;
    sim.run();
    assert!(sim.conservation_ok(), "packet conservation violated");
    let bytes = sim.links[core].counters.departures_bytes - bytes0;
    let secs = (sim.duration_ns - from_ns) as f64 / 1e9;
    let rate = sim.links[core].rate.nominal_bps() as f64;
    let losses = sim.flows[0].tcp().unwrap().sender.stats().fast_retransmits - losses0;
    (bytes as f64 * 8.0 / (rate * secs), losses)
}

#[test]
fn htcp_and_westwood_keep_a_small_buffer_busy() {
    for preset in ["ns2", "linux"] {
        let (reno_util, _) = utilisation(&mut dumbbell("newreno", preset), 10.0);
        for cc in ["htcp", "westwood"] {
            let mut sim = dumbbell(cc, preset);
            // The flow runs the controller the flows table names.
            assert_eq!(sim.flows[0].cc_name, cc);
            assert_eq!(sim.flows[0].tcp().unwrap().sender.cc().name(), cc);
            let (util, losses) = utilisation(&mut sim, 10.0);
            println!(
                "{preset:5} {cc:9}: utilisation {util:.4} ({losses} loss events); newreno {reno_util:.4}"
            );
            assert!(
                losses >= 3,
                "{preset} {cc}: the flow should keep probing ({losses} losses)"
            );
            assert!(util >= 0.95, "{preset} {cc}: utilisation {util:.4} < 0.95");
            assert!(
                util > reno_util,
                "{preset} {cc}: utilisation {util:.4} not above NewReno's {reno_util:.4}"
            );
        }
    }
}

/// "reno" is an alias of NewReno: the flows table keeps the scenario's name,
/// the sender runs NewReno.
#[test]
fn reno_alias_runs_newreno_under_its_scenario_name() {
    let sim = dumbbell("reno", "ns2");
    assert_eq!(sim.flows[0].cc_name, "reno");
    assert_eq!(sim.flows[0].tcp().unwrap().sender.cc().name(), "newreno");
}
