//! Bad scenarios give errors that name the file, the key path and what is
//! expected — never a panic.

use latlab_sim::load;

const BASE: &str = r#"
duration_s = 10
[topology]
kind = "custom"
nodes = [{ name = "a" }, { name = "b" }, { name = "c" }]
links = [{ from = "a", to = "b", rate_bps = 1e6, delay_ms = 10 }]
[[flows]]
src = "a"
dst = "b"
"#;

fn error_of(toml: &str) -> String {
    match load(toml, "bad.toml") {
        Ok(_) => panic!("expected an error for:\n{toml}"),
        Err(e) => e.to_string(),
    }
}

fn assert_mentions(msg: &str, parts: &[&str]) {
    for p in parts {
        assert!(msg.contains(p), "error {msg:?} should mention {p:?}");
    }
}

#[test]
fn the_base_scenario_is_valid() {
    load(BASE, "ok.toml").unwrap();
}

#[test]
fn unknown_key() {
    let msg = error_of(&BASE.replace("duration_s = 10", "duration_s = 10\ndurration = 3"));
    assert_mentions(&msg, &["bad.toml", "durration", "expected"]);
}

#[test]
fn unknown_key_in_a_nested_table() {
    let msg = error_of(&BASE.replace("delay_ms = 10 }", "delay_ms = 10, jitter_ms = 1 }"));
    assert_mentions(&msg, &["bad.toml", "topology.links[0]", "jitter_ms"]);
}

#[test]
fn wrong_type() {
    let msg = error_of(&BASE.replace("rate_bps = 1e6", "rate_bps = \"fast\""));
    assert_mentions(&msg, &["bad.toml", "topology.links[0].rate_bps"]);
}

#[test]
fn negative_rate() {
    let msg = error_of(&BASE.replace("rate_bps = 1e6", "rate_bps = -5"));
    assert_mentions(&msg, &["bad.toml", "topology.links[0].rate_bps", "positive"]);
}

#[test]
fn unknown_node() {
    let msg = error_of(&BASE.replace("dst = \"b\"", "dst = \"zz\""));
    assert_mentions(&msg, &["bad.toml", "flows[0].dst", "zz"]);
}

#[test]
fn unroutable_flow() {
    let msg = error_of(&BASE.replace("dst = \"b\"", "dst = \"c\""));
    assert_mentions(&msg, &["bad.toml", "flows[0]", "no route"]);
}

#[test]
fn unknown_congestion_control() {
    let msg = error_of(&BASE.replace("dst = \"b\"", "dst = \"b\"\ncc = \"bbr9\""));
    assert_mentions(&msg, &["flows[0].cc", "bbr9", "newreno"]);
}

#[test]
fn missing_required_key() {
    let msg = error_of(&BASE.replace("duration_s = 10", ""));
    assert_mentions(&msg, &["bad.toml", "duration_s"]);
}

#[test]
fn syntax_error_gives_a_line() {
    let msg = error_of("duration_s = = 3");
    assert_mentions(&msg, &["bad.toml", "line 1"]);
}

#[test]
fn bad_queue_parameters() {
    let msg = error_of(&BASE.replace(
        "delay_ms = 10 }",
        "delay_ms = 10, queue = { kind = \"droptail\" } }",
    ));
    assert_mentions(&msg, &["topology.links[0]", "limit_bytes or limit_packets"]);
    let msg = error_of(&BASE.replace(
        "delay_ms = 10 }",
        "delay_ms = 10, queue = { kind = \"red\", limit_packets = 10, min_th = 8, max_th = 4, max_p = 0.1, w_q = 0.002 } }",
    ));
    assert_mentions(&msg, &["topology.links[0]", "max_th"]);
}

#[test]
fn garbage_never_panics() {
    // Mutations of a valid file: each must load or give an error, never panic.
    let lines: Vec<&str> = BASE.lines().collect();
    for skip in 0..lines.len() {
        let text: String = lines
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != skip)
            .map(|(_, l)| format!("{l}\n"))
            .collect();
        let _ = load(&text, "mut.toml");
    }
    for junk in [
        "",
        "[[[",
        "duration_s = 1e400",
        "duration_s = -1",
        "duration_s = nan",
        "seed = -1",
    ] {
        let _ = load(&format!("{junk}\n{BASE}"), "junk.toml");
    }
}

#[test]
fn bad_controller_parameters() {
    let msg = error_of(&BASE.replace(
        "dst = \"b\"",
        "dst = \"b\"\ncc = \"vegas\"\ncc_params = { alhpa = 1 }",
    ));
    assert_mentions(&msg, &["flows[0].cc_params", "alhpa", "alpha"]);
    load(
        &BASE.replace(
            "dst = \"b\"",
            "dst = \"b\"\ncc = \"ledbat\"\ncc_params = { target_ms = 50 }",
        ),
        "ok.toml",
    )
    .unwrap();
}

#[test]
fn controller_names_and_knobs_come_from_the_registry() {
    let with = |cc: &str| BASE.replace("dst = \"b\"", &format!("dst = \"b\"\n{cc}"));
    // Every known name is listed, the new controllers included.
    let msg = error_of(&with("cc = \"htcpp\""));
    assert_mentions(
        &msg,
        &[
            "flows[0].cc",
            "htcpp",
            "newreno",
            "reno",
            "cubic",
            "htcp",
            "westwood",
        ],
    );
    // An unknown knob lists the controller's knobs with their ranges.
    let msg = error_of(&with("cc = \"htcp\"\ncc_params = { rtt_scalling = 0 }"));
    assert_mentions(
        &msg,
        &[
            "flows[0].cc_params",
            "rtt_scalling",
            "rtt_scaling",
            "bandwidth_switch",
            "0 or 1",
        ],
    );
    // A flag must be 0 or 1.
    let msg = error_of(&with("cc = \"htcp\"\ncc_params = { bandwidth_switch = 2 }"));
    assert_mentions(&msg, &["flows[0].cc_params", "bandwidth_switch", "out of range"]);
    // Westwood+ takes none; NewReno only its ns-3 emulation knob.
    let msg = error_of(&with("cc = \"westwood\"\ncc_params = { beta = 0.5 }"));
    assert_mentions(&msg, &["flows[0].cc_params", "beta", "accepts no parameters"]);
    let msg = error_of(&with("cc = \"reno\"\ncc_params = { beta = 0.5 }"));
    assert_mentions(
        &msg,
        &["flows[0].cc_params", "beta", "per_ack_increase", "0 or 1"],
    );
    // Non-finite and out-of-range values of a known knob.
    let msg = error_of(&with("cc = \"cubic\"\ncc_params = { beta = inf }"));
    assert_mentions(&msg, &["flows[0].cc_params", "beta", "finite"]);
    let msg = error_of(&with("cc = \"cubic\"\ncc_params = { c = 0 }"));
    assert_mentions(&msg, &["flows[0].cc_params", "\"c\"", "out of range", "beta"]);
    load(
        &with("cc = \"htcp\"\ncc_params = { rtt_scaling = 0, bandwidth_switch = 1 }"),
        "ok.toml",
    )
    .unwrap();
    load(&with("cc = \"westwood\""), "ok.toml").unwrap();
}

#[test]
fn receiver_window_controller_names_and_knobs_are_checked() {
    let with = |tcp: &str| BASE.replace("dst = \"b\"", &format!("dst = \"b\"\ntcp = {{ {tcp} }}"));
    // An unknown controller lists the known ones.
    let msg = error_of(&with("rwnd_controller = \"rtacc\""));
    assert_mentions(
        &msg,
        &[
            "bad.toml",
            "flows[0].tcp.rwnd_controller",
            "rtacc",
            "fixed",
            "autotuning",
            "drwa",
            "rtac",
        ],
    );
    // An unknown knob lists the controller's knobs with ranges.
    let msg = error_of(&with("rwnd_controller = \"drwa\", rwnd_params = { lamda = 3 }"));
    assert_mentions(
        &msg,
        &[
            "flows[0].tcp.rwnd_params",
            "lamda",
            "lambda",
            "alpha",
            "rmem_max_bytes",
        ],
    );
    // Out of range, and constraints between knobs.
    let msg = error_of(&with("rwnd_controller = \"rtac\", rwnd_params = { alpha = 1.5 }"));
    assert_mentions(
        &msg,
        &["flows[0].tcp.rwnd_params", "alpha", "out of range", "[0, 1)"],
    );
    let msg = error_of(&with(
        "rwnd_controller = \"rtac\", rwnd_params = { theta = 1.38 }",
    ));
    assert_mentions(&msg, &["flows[0].tcp.rwnd_params", "theta", "link_rate_bps"]);
    let msg = error_of(&with(
        "rwnd_controller = \"autotuning\", rwnd_params = { rmem_max_bytes = 2.5 }",
    ));
    assert_mentions(
        &msg,
        &["flows[0].tcp.rwnd_params", "rmem_max_bytes", "out of range"],
    );
    // The fixed window takes no knobs; rwnd_bytes is its window only.
    let msg = error_of(&with("rwnd_params = { lambda = 3 }"));
    assert_mentions(&msg, &["flows[0].tcp.rwnd_params", "fixed accepts no parameters"]);
    let msg = error_of(&with("rwnd_controller = \"drwa\", rwnd_bytes = 65535"));
    assert_mentions(&msg, &["flows[0].tcp.rwnd_bytes", "rmem_max_bytes"]);
    // [tcp] sets the default for every group.
    let msg = error_of(&BASE.replace("duration_s = 10", "duration_s = 10\n[tcp]\nrwnd_controller = 3"));
    assert_mentions(&msg, &["tcp.rwnd_controller"]);
    for ok in [
        "rwnd_controller = \"autotuning\", rwnd_params = { rmem_max_bytes = 2621440 }",
        "rwnd_controller = \"drwa\"",
        "rwnd_controller = \"rtac\", rwnd_params = { theta = 1.38, link_rate_bps = 40e6, delta_ms = 18 }",
        "rwnd_controller = \"rtac\", rwnd_params = { k = 3e-7 }",
        "rwnd_controller = \"fixed\", rwnd_bytes = 65535",
    ] {
        load(&with(ok), "ok.toml").unwrap_or_else(|e| panic!("{ok}: {e}"));
    }
}

const MPTCP_BASE: &str = r#"
duration_s = 10
[topology]
kind = "custom"
nodes = [{ name = "s" }, { name = "x" }, { name = "y" }, { name = "d" }, { name = "lone" }]
links = [
  { from = "s", to = "x", rate_bps = 1e6, delay_ms = 10 },
  { from = "x", to = "d", rate_bps = 1e6, delay_ms = 10 },
  { from = "s", to = "y", rate_bps = 1e6, delay_ms = 10 },
  { from = "y", to = "d", rate_bps = 1e6, delay_ms = 10 },
]
[[flows]]
kind = "mptcp"
src = "s"
dst = "d"
cc = "lia"
[flows.mptcp]
[[flows.mptcp.paths]]
via = ["x"]
[[flows.mptcp.paths]]
via = ["y"]
"#;

#[test]
fn the_mptcp_base_scenario_is_valid() {
    load(MPTCP_BASE, "ok.toml").unwrap();
}

#[test]
fn mptcp_unknown_path_node() {
    let msg = error_of(&MPTCP_BASE.replace("via = [\"y\"]", "via = [\"zz\"]"));
    assert_mentions(&msg, &["flows[0].mptcp.paths[1].via[0]", "unknown node \"zz\""]);
}

#[test]
fn mptcp_via_without_a_route() {
    let msg = error_of(&MPTCP_BASE.replace("via = [\"y\"]", "via = [\"lone\"]"));
    assert_mentions(&msg, &["flows[0].mptcp.paths[1].via", "no route"]);
}

#[test]
fn mptcp_without_paths() {
    let text = MPTCP_BASE
        .replace("[[flows.mptcp.paths]]\nvia = [\"x\"]\n", "")
        .replace("[[flows.mptcp.paths]]\nvia = [\"y\"]\n", "");
    assert_mentions(&error_of(&text), &["flows[0].mptcp.paths", "at least one path"]);
    let text = MPTCP_BASE.split("[flows.mptcp]").next().unwrap().to_string();
    assert_mentions(&error_of(&text), &["flows[0].mptcp", "needs an mptcp table"]);
}

#[test]
fn mptcp_table_on_a_tcp_group() {
    let msg = error_of(&MPTCP_BASE.replace("kind = \"mptcp\"", "kind = \"tcp\""));
    assert_mentions(&msg, &["flows[0].mptcp", "kind = \"mptcp\""]);
}

#[test]
fn mptcp_too_many_paths() {
    let many = "[[flows.mptcp.paths]]\nvia = [\"x\"]\n".repeat(256);
    let text = MPTCP_BASE.replace("[[flows.mptcp.paths]]\nvia = [\"y\"]\n", &many);
    assert_mentions(&error_of(&text), &["flows[0].mptcp.paths", "at most 255"]);
}

#[test]
fn mptcp_bad_scheduler_and_join_time() {
    let msg = error_of(&MPTCP_BASE.replace("[flows.mptcp]", "[flows.mptcp]\nscheduler = \"blest\""));
    assert_mentions(&msg, &["flows[0].mptcp.scheduler", "minrtt"]);
    let msg = error_of(&MPTCP_BASE.replace("via = [\"y\"]", "via = [\"y\"]\njoin_s = -1"));
    assert_mentions(&msg, &["flows[0].mptcp.paths[1].join_s", "non-negative"]);
    let msg = error_of(&MPTCP_BASE.replace("[flows.mptcp]", "[flows.mptcp]\nrecv_buffer_bytes = 10"));
    assert_mentions(
        &msg,
        &["flows[0].mptcp.recv_buffer_bytes", "at least one segment"],
    );
}

#[test]
fn mptcp_proxy_errors_name_their_keys() {
    let proxy = |extra: &str| format!("{MPTCP_BASE}[flows.mptcp.proxy]\nnode = \"x\"\n{extra}");
    load(&proxy("relay_bytes = 100000\n"), "ok.toml").unwrap();
    let msg = error_of(&proxy("relay = 1\n"));
    assert_mentions(&msg, &["flows[0].mptcp.proxy", "relay"]);
    let msg = error_of(&proxy("").replace("node = \"x\"", "node = \"nowhere\""));
    assert_mentions(&msg, &["flows[0].mptcp.proxy.node", "unknown node"]);
    let msg = error_of(&proxy("upstream_cc = \"fast\"\n"));
    assert_mentions(&msg, &["flows[0].mptcp.proxy.upstream_cc", "newreno"]);
    let msg = error_of(&proxy(
        "[flows.mptcp.proxy.throttle]\npath = \"lte\"\nrate_bps = 1e6\n",
    ));
    assert_mentions(&msg, &["flows[0].mptcp.proxy.throttle.path", "path0"]);
    let msg = error_of(&proxy("[flows.mptcp.proxy.throttle]\npath = 1\nrate_bps = 0\n"));
    assert_mentions(&msg, &["flows[0].mptcp.proxy.throttle.rate_bps", "positive"]);
    let msg = error_of(&proxy("").replace("via = [\"y\"]", "via = [\"y\"]\njoin_s = 1"));
    assert_mentions(&msg, &["flows[0].mptcp.paths[1].join_s", "join_s = 0"]);
}

#[test]
fn ap_buffer_names_the_key_and_the_accepted_values() {
    let wifi = |ap: &str| {
        format!(
            "duration_s = 1\n[topology]\nkind = \"wifi\"\nstations = 1\nrate = {{ constant_bps = 1e7 }}\nap = {ap}\n\
             [[flows]]\nsrc = \"server\"\ndst = \"sta0\"\n"
        )
    };
    for ok in ["shared", "per-station"] {
        load(&wifi(&format!("{{ buffer = \"{ok}\" }}")), "ok.toml").unwrap();
    }
    let msg = error_of(&wifi("{ buffer = \"per_station\" }"));
    assert_mentions(
        &msg,
        &["topology.ap.buffer", "per_station", "shared", "per-station"],
    );
    let msg = error_of(&wifi("{ buffer = 2 }"));
    assert_mentions(&msg, &["topology.ap.buffer", "shared", "per-station"]);
    // A station's own queue is refused with the key that sets it.
    let msg = error_of(&wifi(
        "{ buffer = \"per-station\" }\n[[topology.station]]\nqueue = { kind = \"droptail\", limit_packets = 5 }",
    ));
    assert_mentions(&msg, &["topology.station[0].queue", "ap.queue", "per-station"]);
}
