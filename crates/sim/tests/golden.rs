//! Golden digests: every results table of a fixed set of scenarios, hashed.
//!
//! A refactor of the engine, the TCP machines or the queues must leave these
//! byte-identical. A change that alters results on purpose regenerates the
//! file with `LATLAB_GOLDEN_UPDATE=1 cargo test --release -p latlab-sim --test
//! integration golden::` and says in its commit which digests moved and why.
//!
//! The set: the shipped example scenarios, the built-in default, every
//! congestion controller under every recovery variant (with and without
//! pacing, delayed ACKs and timestamps), a zero-window receiver, and the
//! 24 random scenarios of the property tests.

use crate::common;

use latlab_sim::assemble::build;
use latlab_sim::parse;
use latlab_sim::tables::to_ipc_stream;
use std::collections::BTreeMap;
use std::path::PathBuf;

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// FNV-1a, 64 bit: stable across Rust versions, unlike `DefaultHasher`.
fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// A small dumbbell exercising one controller/recovery combination.
fn matrix_scenario(cc: &str, recovery: &str, variant: u32) -> String {
    let (preset, pacing, dack, ts, queue) = match variant {
        0 => ("ns2", false, false, false, "{ kind = \"droptail\", limit_bytes = 30000 }"),
        1 => ("linux", true, true, true, "{ kind = \"droptail\", limit_packets = 20 }"),
        _ => (
            "linux",
            false,
            true,
            false,
            "{ kind = \"red\", limit_packets = 40, min_th = 10, max_th = 30, max_p = 0.1, w_q = 0.002, gentle = true }",
        ),
    };
    format!(
        r#"
name = "m-{cc}-{recovery}-{variant}"
seed = {seed}
duration_s = 15
sample_interval_ms = 200
measure_from_s = 2
[tcp]
preset = "{preset}"
recovery = "{recovery}"
pacing = {pacing}
delayed_ack = {dack}
timestamps = {ts}
[topology]
kind = "dumbbell"
pairs = 4
access_rate_bps = 50e6
access_delay_ms = [1, 8]
core_rate_bps = 8e6
core_delay_ms = 20
core_queue = {queue}
[[flows]]
name = "bulk"
count = 3
src = "s{{i}}"
dst = "d{{i}}"
cc = "{cc}"
start_s = {{ uniform = [0, 1] }}
[[flows]]
name = "finite"
count = 1
first_index = 3
src = "s{{i}}"
dst = "d{{i}}"
cc = "{cc}"
size_bytes = 400000
start_s = 3.5
"#,
        seed = 11 + variant,
    )
}

/// A receiver whose window is smaller than a segment at times: persist
/// timer and window probes.
const SMALL_WINDOW: &str = r#"
name = "small-window"
seed = 3
duration_s = 10
sample_interval_ms = 100
[tcp]
preset = "linux"
rwnd_bytes = 1000
[topology]
kind = "dumbbell"
pairs = 2
access_rate_bps = 10e6
access_delay_ms = 5
core_rate_bps = 2e6
core_delay_ms = 10
core_queue = { kind = "droptail", limit_packets = 10 }
[[flows]]
count = 2
src = "s{i}"
dst = "d{i}"
cc = "cubic"
start_s = 0
"#;

/// (case name, TOML, source name). Shipped files are loaded under their
/// path, so that relative trace paths resolve against their folder.
fn cases() -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    let root = repo_root();
    let mut shipped: Vec<PathBuf> = std::fs::read_dir(root.join("scenarios"))
        .expect("scenarios/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    shipped.push(root.join("python/latlab/scenarios/default.toml"));
    shipped.push(root.join("python/latlab/scenarios/bench/dumbbell-10.toml"));
    shipped.sort();
    for p in shipped {
        let name = p.file_stem().unwrap().to_string_lossy().into_owned();
        let source = p.display().to_string();
        out.push((
            format!("file-{name}"),
            std::fs::read_to_string(&p).unwrap(),
            source,
        ));
    }
    for cc in ["newreno", "cubic", "vegas", "ledbat"] {
        for recovery in ["newreno", "sack", "fack"] {
            for variant in 0..3 {
                let name = format!("m-{cc}-{recovery}-{variant}");
                out.push((name.clone(), matrix_scenario(cc, recovery, variant), name));
            }
        }
    }
    out.push(("small-window".into(), SMALL_WINDOW.into(), "small-window".into()));
    for case in 0..24 {
        let name = format!("random-{case}");
        out.push((name.clone(), common::random_scenario(case), name));
    }
    out
}

fn digests() -> BTreeMap<String, String> {
    let mut map = BTreeMap::new();
    let scratch = std::env::temp_dir().join(format!("latlab-golden-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).unwrap();
    for (name, toml, source) in cases() {
        // pcap files requested by a scenario go to a scratch folder, not the tree.
        let sc = parse(&toml, &source).unwrap_or_else(|e| panic!("{name}: {e}"));
        let mut sim = build(&sc, &source, Some(&scratch)).unwrap_or_else(|e| panic!("{name}: {e}"));
        sim.run();
        assert!(sim.conservation_ok(), "{name}: conservation violated");
        for (table, batch) in sim.tables() {
            let bytes = to_ipc_stream(&batch).unwrap();
            map.insert(format!("{name} {table}"), format!("{:016x}", fnv1a64(&bytes)));
        }
    }
    let _ = std::fs::remove_dir_all(&scratch);
    map
}

#[test]
fn results_match_the_golden_digests() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/digests.txt");
    let now = digests();
    if std::env::var_os("LATLAB_GOLDEN_UPDATE").is_some() {
        let text: String = now.iter().map(|(k, v)| format!("{k} {v}\n")).collect();
        std::fs::write(&path, text).unwrap();
        return;
    }
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (LATLAB_GOLDEN_UPDATE=1 writes it)", path.display()));
    let want: BTreeMap<String, String> = text
        .lines()
        .filter_map(|l| l.rsplit_once(' ').map(|(k, v)| (k.to_string(), v.to_string())))
        .collect();
    let mut moved = Vec::new();
    for (k, v) in &want {
        match now.get(k) {
            Some(got) if got == v => {}
            Some(got) => moved.push(format!("{k}: {v} -> {got}")),
            None => moved.push(format!("{k}: missing")),
        }
    }
    for k in now.keys().filter(|k| !want.contains_key(*k)) {
        moved.push(format!("{k}: new (not in the golden file)"));
    }
    assert!(
        moved.is_empty(),
        "{} of {} digests differ:\n{}",
        moved.len(),
        want.len(),
        moved.join("\n")
    );
}
