//! Inputs the fuzzer (crates/fuzz) found that panicked, aborted, hung or
//! took gigabytes: each must now be refused with an error naming the key,
//! before the topology is expanded.
//!
//! These check the core's hard limits, so they build without the memory
//! budget (which, on an ordinary machine, refuses them first; see
//! `budget.rs` for its own tests).

use latlab_sim::assemble::build_with_limit;
use latlab_sim::budget::MemoryLimit;

fn error_of(toml: &str) -> String {
    // No wall-clock bound (a loaded machine would trip it): each error below
    // names a key only the checks before expansion name.
    let result = latlab_sim::parse(toml, "fuzz.toml")
        .and_then(|sc| build_with_limit(&sc, "fuzz.toml", None, MemoryLimit::Unlimited));
    match result {
        Ok(_) => panic!("expected an error for:\n{toml}"),
        Err(e) => e.to_string(),
    }
}

fn assert_mentions(msg: &str, parts: &[&str]) {
    for p in parts {
        assert!(msg.contains(p), "error {msg:?} should mention {p:?}");
    }
}

const DUMBBELL: &str = r#"
duration_s = 1
[topology]
kind = "dumbbell"
pairs = PAIRS
access_rate_bps = 100e6
access_delay_ms = 1
core_rate_bps = 10e6
core_delay_ms = 10
[[flows]]
count = COUNT
src = "s{i}"
dst = "d{i}"
"#;

#[test]
fn a_huge_pair_count_is_refused_before_the_nodes_are_made() {
    let toml = DUMBBELL.replace("PAIRS", "999999999").replace("COUNT", "1");
    assert_mentions(&error_of(&toml), &["fuzz.toml", "topology.pairs", "too many"]);
}

#[test]
fn a_huge_flow_count_is_refused_before_start_times_are_drawn() {
    // Found by latlab-fuzz: count = 335544320 drew 2.7 GB of start times.
    let toml = DUMBBELL.replace("PAIRS", "10").replace("COUNT", "335544320");
    assert_mentions(&error_of(&toml), &["fuzz.toml", "flows[0].count", "too many"]);
}

#[test]
fn the_flow_limit_counts_every_group() {
    let mut toml = DUMBBELL.replace("PAIRS", "10").replace("COUNT", "600000");
    toml.push_str("[[flows]]\ncount = 600000\nsrc = \"s{i}\"\ndst = \"d{i}\"\n");
    assert_mentions(&error_of(&toml), &["flows[1].count", "too many"]);
}

#[test]
fn edges_times_hosts_per_edge_does_not_overflow() {
    // 65536 x 65536 is 2^32: it wrapped to 0 hosts in a u32.
    let toml = r#"
duration_s = 1
[topology]
kind = "edge-dumbbell"
edges = 65536
hosts_per_edge = 65536
access_rate_bps = 10e6
access_delay_ms = 1
edge_rate_bps = 100e6
edge_delay_ms = 1
core_rate_bps = 100e6
core_delay_ms = 10
"#;
    assert_mentions(&error_of(toml), &["topology.hosts_per_edge", "too many"]);
}

#[test]
fn a_cell_of_millions_of_users_is_refused_before_the_nodes_are_made() {
    // Found by the fuzz smoke run: 3,276,800 users were expanded (10 GB,
    // 30 s) before the memory check refused the scenario.
    let toml = r#"
duration_s = 1
[topology]
kind = "cellular"
users = 3276800
wired_rate_bps = 1e9
wired_delay_ms = 20
radio_delay_ms = 5
[topology.rate]
constant_bps = 40e6
"#;
    assert_mentions(
        &error_of(toml),
        &["fuzz.toml", "topology.users", "3276800 users is too many"],
    );
}

#[test]
fn an_ap_of_millions_of_stations_is_refused_before_the_nodes_are_made() {
    let toml = r#"
duration_s = 1
[topology]
kind = "wifi"
stations = 2000000
wired_rate_bps = 1e9
wired_delay_ms = 20
radio_delay_ms = 1
[topology.rate]
constant_bps = 40e6
"#;
    assert_mentions(
        &error_of(toml),
        &["topology.stations", "2000000 stations is too many"],
    );
}
