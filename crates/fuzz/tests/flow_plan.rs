//! The real-flow planner (`latlab-net flows --plan`) and the simulator's
//! builder expand a scenario's flows with the same code
//! (`latlab_scenario::flows`); this checks the outcome is the same flows:
//! ids, nodes, start times, sizes, sampling, and each UDP source's packet
//! times and sizes, for every UDP pattern and randomly drawn start times.

use latlab_net::flows::plan::{self, FlowPlan};
use latlab_sim::flow::Transport;
use latlab_sim::traffic::UdpSource;
use std::collections::BTreeSet;

const SCENARIO: &str = r#"
    name = "same-flows"
    seed = 7
    duration_s = 4
    [topology]
    kind = "custom"
    nodes = [{ name = "a" }, { name = "r" }, { name = "b" }]
    links = [{ from = "a", to = "r", rate_bps = 1e8, delay_ms = 1 },
             { from = "r", to = "b", rate_bps = 2e7, delay_ms = 24 }]
    [outputs]
    max_sampled_flows = 5
    [[flows]]
    name = "bulk"
    src = "a"
    dst = "b"
    count = 3
    cc = "cubic"
    start_s = { uniform = [0, 2] }
    [[flows]]
    name = "short"
    src = "a"
    dst = "b"
    count = 2
    size_bytes = 100000
    start_s = { exponential_mean = 0.5 }
    [[flows]]
    name = "cbr"
    src = "a"
    dst = "b"
    kind = "udp"
    start_s = 1
    udp = { pattern = "cbr", rate_bps = 1e6, size_bytes = 500 }
    [[flows]]
    name = "poisson"
    src = "a"
    dst = "b"
    kind = "udp"
    count = 2
    start_s = { uniform = [0, 1] }
    udp = { pattern = "poisson", rate_bps = 2e6, size_bytes = [100, 1200] }
    [[flows]]
    name = "lrd"
    src = "a"
    dst = "b"
    kind = "udp"
    udp = { pattern = "lrd", rate_bps = 3e6, size_bytes = [200, 1000], hurst = 0.8 }
"#;

/// The first `n` (send time, size) of a source started at `start_ns`.
fn schedule(source: &UdpSource, start_ns: u64, n: usize) -> Vec<(u64, u32)> {
    let mut s = source.clone();
    s.start(start_ns);
    let mut out = Vec::new();
    while out.len() < n {
        let Some(t) = s.next_ns() else { break };
        while let Some(size) = s.poll(t) {
            out.push((t, size));
        }
    }
    out
}

#[test]
fn the_planner_expands_the_flows_the_simulator_builds() {
    let ccs: BTreeSet<String> = ["reno", "cubic"].iter().map(|s| s.to_string()).collect();
    let plan: FlowPlan = plan::from_text(SCENARIO, "same.toml", &ccs).unwrap();
    let sim = latlab_sim::load(SCENARIO, "same.toml").unwrap();
    assert_eq!(plan.flows.len(), sim.flows.len());
    assert_eq!(
        (plan.duration_ns, plan.measure_from_ns, plan.sample_interval_ns),
        (sim.duration_ns, sim.measure_from_ns, sim.sample_interval_ns)
    );
    let mut udp_flows = 0;
    for (id, (p, s)) in plan.flows.iter().zip(&sim.flows).enumerate() {
        assert_eq!(p.flow_id as usize, id);
        assert_eq!(p.src, sim.nodes[s.src as usize].name, "flow {id}");
        assert_eq!(p.dst, sim.nodes[s.dst as usize].name, "flow {id}");
        assert_eq!(
            (p.start_ns, p.size_bytes, p.sampled),
            (s.start_ns, s.size_bytes, s.sampled),
            "flow {id}"
        );
        assert_eq!(
            (p.kind.as_str(), p.cc.as_str()),
            (s.kind_name(), s.cc_name.as_str())
        );
        match (&p.udp, &s.transport) {
            (Some(u), Transport::Udp(su)) => {
                udp_flows += 1;
                assert_eq!(
                    schedule(&u.source, p.start_ns, 200),
                    schedule(&su.source, s.start_ns, 200),
                    "flow {id}: the UDP packets differ"
                );
            }
            (None, Transport::Tcp(_)) => {}
            _ => panic!("flow {id}: the planner and the simulator disagree on its transport"),
        }
    }
    assert_eq!(udp_flows, 4);
    // Drawn start times differ between flows: the draws were not all zero.
    let starts: BTreeSet<u64> = plan.flows.iter().map(|f| f.start_ns).collect();
    assert!(starts.len() >= 6, "{starts:?}");
    assert!(plan.flows.iter().filter(|f| f.sampled).count() == 5);
}
