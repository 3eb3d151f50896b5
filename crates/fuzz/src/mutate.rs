//! Mutations. Scenario inputs are mostly grammar-aware: a corpus scenario is
//! parsed into its TOML value tree, a few nodes of the tree are changed
//! (numbers to edge values, types swapped, keys deleted, duplicated,
//! renamed or invented, enum strings and node references exchanged, arrays
//! shrunk and grown, subtrees spliced from another scenario), and the tree
//! is written back as TOML. The rest are raw byte mutations of a scenario's
//! text (bit flips, truncation, inserted tokens) and plain random bytes,
//! which exercise the TOML reader itself.

use crate::corpus::Seed;
use rand::seq::IndexedRandom;
use rand::{Rng, RngCore, SeedableRng};
use rand_pcg::Pcg64Mcg;
use toml::{Table, Value};

/// The RNG of input `index` in a run with `seed`: inputs are independent,
/// so any one can be regenerated without the ones before it.
pub fn input_rng(seed: u64, index: u64) -> Pcg64Mcg {
    // SplitMix64 finaliser over (seed, index): neighbouring indices get
    // unrelated streams.
    let mut z = seed
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(index.wrapping_mul(0xD1B5_4A32_D192_ED03))
        .wrapping_add(0x2545_F491_4F6C_DD1D);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    Pcg64Mcg::seed_from_u64(z ^ (z >> 31))
}

/// Every key of the scenario schema (scenario.rs), for inserted and renamed keys.
const SCHEMA_KEYS: &[&str] = &[
    "name",
    "seed",
    "duration_s",
    "sample_interval_ms",
    "measure_from_s",
    "tcp",
    "topology",
    "flows",
    "outputs",
    "preset",
    "mss_bytes",
    "header_bytes",
    "initial_window_segments",
    "recovery",
    "sack",
    "timestamps",
    "min_rto_ms",
    "initial_rto_ms",
    "delayed_ack",
    "delayed_ack_segments",
    "delayed_ack_timeout_ms",
    "rwnd_bytes",
    "pacing",
    "pacing_ss_factor",
    "pacing_ca_factor",
    "idle_restart",
    "kind",
    "limit_bytes",
    "limit_packets",
    "delay_ms",
    "min_th",
    "max_th",
    "max_p",
    "w_q",
    "gentle",
    "byte_mode",
    "mean_pkt_size_bytes",
    "wait",
    "target_ms",
    "interval_ms",
    "mtu_bytes",
    "pairs",
    "access_rate_bps",
    "access_delay_ms",
    "core_rate_bps",
    "core_delay_ms",
    "core_queue",
    "access_queue",
    "core_loss",
    "edges",
    "hosts_per_edge",
    "edge_rate_bps",
    "edge_delay_ms",
    "edge_queue",
    "nodes",
    "links",
    "from",
    "to",
    "rate_bps",
    "queue",
    "duplex",
    "loss",
    "reverse_rate_bps",
    "uniform",
    "exponential_mean",
    "at",
    "count",
    "first_index",
    "src",
    "dst",
    "cc",
    "cc_params",
    "udp",
    "tfrc",
    "closed_loop",
    "start_s",
    "size_bytes",
    "pattern",
    "hurst",
    "slot_ms",
    "variance_coef",
    "segment_bytes",
    "oscillation_reduction",
    "cd_thresh_ms",
    "base_period_rtts",
    "current_period_ms",
    "gradient_test",
    "receiver_clock_offset_ms",
    "pareto_mean_bytes",
    "pareto_shape",
    "file_bytes",
    "think_mean_s",
    "pcap",
    "max_sampled_flows",
    "c",
    "beta",
    "fast_convergence",
    "tcp_friendliness",
    "alpha_switch",
    "target_min_rtt",
    "whole_segments",
    "timeout_keeps_w_max",
    "lt_bw",
    "per_ack_increase",
    "gain",
    "base_history",
    "current_filter",
    "min_cwnd",
    "allowed_increase",
    "slow_start",
    "alpha",
    "gamma",
];

/// Strings worth trying under a key: its enum values, or node references.
fn strings_for(key: &str) -> &'static [&'static str] {
    match key {
        "kind" => &[
            "dumbbell",
            "edge-dumbbell",
            "custom",
            "droptail",
            "red",
            "codel",
            "fq_codel",
            "pie",
            "edge-pacer",
            "tcp",
            "udp",
            "tfrc",
            "dflow",
            "",
            "Dumbbell",
        ],
        "cc" => &["newreno", "reno", "cubic", "ledbat", "vegas", "bbr", ""],
        "recovery" => &["newreno", "sack", "fack", "rack", ""],
        "preset" => &["ns2", "linux", "windows", ""],
        "pattern" => &["cbr", "poisson", "lrd", "onoff"],
        "src" | "dst" | "from" | "to" | "name" => &[
            "s{i}", "d{i}", "s0", "d0", "left", "right", "c0", "c1", "ie0", "ee0", "{i}", "s{i}{i}", "a->b",
            "a b", "", "r0", "r1", "h0", "h1", "laptop", "server",
        ],
        "pcap" => &[
            "left->right",
            "right->left",
            "s0->left",
            "c0->c1",
            "a->b",
            "",
            "->",
        ],
        _ => &["", "0", "nan", "-1", "1e999", "x", "{i}", "ü"],
    }
}

/// Numbers at the edges: zero, negative, huge, tiny, just past a limit.
const INTERESTING_INTS: &[i64] = &[
    0,
    1,
    -1,
    2,
    7,
    255,
    256,
    1000,
    65_535,
    65_536,
    1_000_000,
    999_999_999,
    4_294_967_295,
    4_294_967_296,
    i64::MAX,
    i64::MIN,
    -999_999_999,
];
const INTERESTING_FLOATS: &[f64] = &[
    0.0,
    -0.0,
    0.5,
    1.0,
    -1.0,
    0.999_999,
    1e-9,
    1e-300,
    1e9,
    1e12,
    1e18,
    1e19,
    1e300,
    f64::MAX,
    f64::MIN_POSITIVE,
    f64::NAN,
    f64::INFINITY,
    f64::NEG_INFINITY,
    4_294_967_296.5,
];

/// Mutate a scenario: a corpus entry changed by the tree or byte mutators,
/// or random bytes. Deterministic in `rng`.
pub fn scenario_input(corpus: &[Seed], rng: &mut Pcg64Mcg) -> Vec<u8> {
    let seed = corpus.choose(rng).expect("non-empty corpus");
    match rng.random_range(0..100) {
        // Grammar-aware: mutate the tree, write TOML.
        0..=69 => {
            let mut tree = seed.tree.clone();
            // Half the inputs get a short duration, so runs reach their end
            // (and their result tables) within the fuzzer's time budget.
            if rng.random_bool(0.5) {
                let d = [0.001, 0.01, 0.05, 0.2][rng.random_range(0..4)];
                tree.insert("duration_s".into(), Value::Float(d));
                tree.remove("measure_from_s");
            }
            // Mostly one mutation: stacked ones are nearly always refused
            // at the first, and the point is to get past the parser too.
            let n = [1, 1, 1, 1, 1, 1, 2, 2, 3, 4][rng.random_range(0..10)];
            for _ in 0..n {
                mutate_tree(&mut tree, corpus, rng);
            }
            let text = toml::to_string(&tree).unwrap_or_else(|_| seed.text.clone());
            let mut bytes = text.into_bytes();
            if rng.random_bool(0.05) {
                mutate_bytes(&mut bytes, corpus, rng);
            }
            bytes
        }
        // Byte-level mutations of a scenario's text.
        70..=94 => {
            let mut bytes = seed.text.clone().into_bytes();
            let n = 1 + rng.random_range(0..6);
            for _ in 0..n {
                mutate_bytes(&mut bytes, corpus, rng);
            }
            bytes
        }
        // Random bytes.
        _ => random_bytes(rng, 512),
    }
}

pub fn random_bytes(rng: &mut Pcg64Mcg, max_len: usize) -> Vec<u8> {
    let mut b = vec![0u8; rng.random_range(0..=max_len)];
    rng.fill_bytes(&mut b);
    b
}

/// Number of nodes (values) in a tree, in pre-order.
fn count(v: &Value) -> usize {
    1 + match v {
        Value::Array(a) => a.iter().map(count).sum(),
        Value::Table(t) => t.values().map(count).sum(),
        _ => 0,
    }
}

/// Apply `f` to the `target`-th node in pre-order, passing the key it sits
/// under (an array's elements sit under the array's key).
fn with_node<'k>(
    v: &mut Value,
    key: &'k str,
    target: &mut usize,
    f: &mut dyn FnMut(&mut Value, &str),
) -> bool {
    if *target == 0 {
        f(v, key);
        return true;
    }
    *target -= 1;
    match v {
        Value::Array(a) => a.iter_mut().any(|c| with_node(c, key, target, f)),
        Value::Table(t) => t.iter_mut().any(|(k, c)| with_node(c, k, target, f)),
        _ => false,
    }
}

/// Every (key, value) pair in a tree: splice donors.
fn subtrees<'a>(key: &'a str, v: &'a Value, out: &mut Vec<(&'a str, &'a Value)>) {
    out.push((key, v));
    match v {
        Value::Array(a) => a.iter().for_each(|c| subtrees(key, c, out)),
        Value::Table(t) => t.iter().for_each(|(k, c)| subtrees(k, c, out)),
        _ => {}
    }
}

fn interesting_scalar(rng: &mut Pcg64Mcg) -> Value {
    match rng.random_range(0..5) {
        0 | 1 => Value::Integer(*INTERESTING_INTS.choose(rng).unwrap()),
        2 | 3 => Value::Float(*INTERESTING_FLOATS.choose(rng).unwrap()),
        _ => match rng.random_range(0..4) {
            0 => Value::Boolean(rng.random()),
            1 => Value::String(strings_for("").choose(rng).unwrap().to_string()),
            2 => Value::Array(Vec::new()),
            _ => Value::Table(Table::new()),
        },
    }
}

fn mutate_tree(tree: &mut Table, corpus: &[Seed], rng: &mut Pcg64Mcg) {
    let mut root = Value::Table(std::mem::take(tree));
    let mut target = rng.random_range(0..count(&root));
    let donor = corpus.choose(rng).expect("non-empty corpus");
    let op = rng.random_range(0..100);
    with_node(&mut root, "", &mut target, &mut |v, key| {
        mutate_node(v, key, op, donor, rng)
    });
    match root {
        Value::Table(t) => *tree = t,
        // The root itself was replaced by a non-table: keep it as a key.
        other => {
            tree.insert("x".into(), other);
        }
    }
}

fn mutate_node(v: &mut Value, key: &str, op: u32, donor: &Seed, rng: &mut Pcg64Mcg) {
    match (op, &mut *v) {
        // Splice a subtree of another scenario, preferably one under the same key.
        (0..=9, _) => {
            let mut all = Vec::new();
            for (k, c) in donor.tree.iter() {
                subtrees(k, c, &mut all);
            }
            let same: Vec<_> = all.iter().filter(|(k, _)| *k == key).collect();
            let pick = if !same.is_empty() && rng.random_bool(0.8) {
                same.choose(rng).map(|(_, c)| (*c).clone())
            } else {
                all.choose(rng).map(|(_, c)| (*c).clone())
            };
            if let Some(c) = pick {
                *v = c;
            }
        }
        (_, Value::Integer(i)) => {
            *i = match rng.random_range(0..6) {
                0 => *INTERESTING_INTS.choose(rng).unwrap(),
                1 => i.wrapping_neg(),
                2 => i.wrapping_mul(1 << rng.random_range(1..40)),
                3 => i.wrapping_add(rng.random_range(-3..=3)),
                4 => *i / 1000,
                _ => {
                    // Swap to a float (fractional where an integer is expected).
                    *v = Value::Float(*i as f64 + 0.5);
                    return;
                }
            }
        }
        (_, Value::Float(f)) => {
            *f = match rng.random_range(0..6) {
                0 | 1 => *INTERESTING_FLOATS.choose(rng).unwrap(),
                2 => -*f,
                3 => *f * 10f64.powi(rng.random_range(-12..=12)),
                4 => {
                    *v = Value::Integer(*f as i64);
                    return;
                }
                _ => {
                    *v = Value::String(format!("{f}"));
                    return;
                }
            }
        }
        (_, Value::String(s)) => {
            *s = match rng.random_range(0..5) {
                0..=2 => strings_for(key).choose(rng).unwrap().to_string(),
                3 => format!("{s}{s}"),
                _ => s.chars().rev().collect(),
            }
        }
        (_, Value::Array(a)) => match rng.random_range(0..7) {
            0 if !a.is_empty() => {
                let i = rng.random_range(0..a.len());
                a.remove(i);
            }
            1 if !a.is_empty() => {
                let i = rng.random_range(0..a.len());
                let c = a[i].clone();
                for _ in 0..rng.random_range(1..4) {
                    a.push(c.clone());
                }
            }
            2 => a.clear(),
            3 => a.reverse(),
            4 => a.push(interesting_scalar(rng)),
            5 if !a.is_empty() => a.truncate(1),
            _ => *v = interesting_scalar(rng),
        },
        (_, Value::Table(t)) => match rng.random_range(0..6) {
            0 if !t.is_empty() => {
                let k = t.keys().nth(rng.random_range(0..t.len())).unwrap().clone();
                t.remove(&k);
            }
            1 => {
                // An unknown key, or a known key out of place.
                let k = if rng.random_bool(0.3) {
                    "unknown_key".to_string()
                } else {
                    SCHEMA_KEYS.choose(rng).unwrap().to_string()
                };
                t.insert(k, interesting_scalar(rng));
            }
            2 if !t.is_empty() => {
                // Rename a key (the value stays).
                let k = t.keys().nth(rng.random_range(0..t.len())).unwrap().clone();
                let c = t.remove(&k).unwrap();
                t.insert(SCHEMA_KEYS.choose(rng).unwrap().to_string(), c);
            }
            3 if !t.is_empty() => {
                // Duplicate a value under another key of the same table.
                let k = t.keys().nth(rng.random_range(0..t.len())).unwrap().clone();
                let c = t[&k].clone();
                t.insert(format!("{k}2"), c);
            }
            _ => *v = interesting_scalar(rng),
        },
        (_, Value::Boolean(b)) => {
            if rng.random_bool(0.5) {
                *b = !*b;
            } else {
                *v = interesting_scalar(rng);
            }
        }
        (_, Value::Datetime(_)) => *v = interesting_scalar(rng),
    }
}

/// Tokens of TOML's grammar and of the schema, for inserted bytes.
const TOKENS: &[&str] = &[
    "=",
    "[",
    "]",
    "[[",
    "]]",
    "{",
    "}",
    ",",
    "\"",
    "'",
    "\n",
    "#",
    ".",
    "\"\"\"",
    "nan",
    "inf",
    "-",
    "+",
    "0x",
    "1e999",
    "\n[[flows]]\n",
    "\n[topology]\n",
    "kind = ",
    "{i}",
    "\\u0000",
    "\\",
    "99999999999999999999",
];

pub fn mutate_bytes(b: &mut Vec<u8>, corpus: &[Seed], rng: &mut Pcg64Mcg) {
    let len = b.len();
    let at = |rng: &mut Pcg64Mcg| rng.random_range(0..=len);
    match rng.random_range(0..8) {
        0 if len > 0 => {
            let i = rng.random_range(0..len);
            b[i] ^= 1 << rng.random_range(0..8);
        }
        1 if len > 0 => {
            let i = rng.random_range(0..len);
            b[i] = rng.random();
        }
        2 => {
            let i = at(rng);
            b.truncate(i);
        }
        3 if len > 0 => {
            let (i, j) = (at(rng), at(rng));
            let (i, j) = (i.min(j), i.max(j).min(i + 64));
            b.drain(i..j);
        }
        4 if len > 0 => {
            // Duplicate a chunk (repeated keys and tables).
            let (i, j) = (at(rng), at(rng));
            let (i, j) = (i.min(j), i.max(j).min(i + 256));
            let chunk: Vec<u8> = b[i..j].to_vec();
            let k = at(rng);
            b.splice(k..k, chunk);
        }
        5 => {
            // Splice another scenario's text in.
            let other = corpus.choose(rng).unwrap().text.as_bytes();
            let (i, j) = (
                rng.random_range(0..=other.len()),
                rng.random_range(0..=other.len()),
            );
            let (i, j) = (i.min(j), i.max(j));
            let k = at(rng);
            b.splice(k..k, other[i..j].iter().copied());
        }
        _ => {
            let t = TOKENS.choose(rng).unwrap().as_bytes();
            let k = at(rng);
            b.splice(k..k, t.iter().copied());
        }
    }
}

// --- Mahimahi traces -----------------------------------------------------------

/// Timestamps at the edges: around the largest one whose nanoseconds fit a
/// u64 (18 446 744 073 709 ms), around u64::MAX and past it, and with
/// leading zeros or a sign.
const TRACE_NUMBERS: &[&str] = &[
    "0",
    "00",
    "007",
    "1",
    "-1",
    "+1",
    "4294967295",
    "4294967296",
    "18446744073709",
    "18446744073710",
    "9223372036854775807",
    "18446744073709551614",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999",
    "1e3",
    "1.5",
    "0x10",
    "١",
];

/// A valid trace: `len` non-decreasing timestamps, mostly small (so the
/// reference expansion in targets.rs applies), sometimes huge.
pub fn generated_trace(rng: &mut Pcg64Mcg) -> Vec<u8> {
    let len = [1, 1, 2, 3, 5, 10, 40, 200][rng.random_range(0..8)];
    let max_step: u64 = [0, 1, 3, 50, 1_000_000, 1 << 40][rng.random_range(0..6)];
    let mut t: u64 = if rng.random_bool(0.3) {
        0
    } else {
        rng.random_range(0..=3)
    };
    let mut out = String::new();
    for i in 0..len {
        if i > 0 || rng.random_bool(0.5) {
            t = t.saturating_add(rng.random_range(0..=max_step));
        }
        out.push_str(&t.to_string());
        out.push('\n');
    }
    out.into_bytes()
}

/// Mutate a trace: a corpus slice or a generated trace changed by line-level
/// and byte-level mutators, or random bytes. Deterministic in `rng`.
pub fn trace_input(corpus: &[Seed], rng: &mut Pcg64Mcg) -> Vec<u8> {
    let base = if rng.random_bool(0.5) {
        corpus
            .choose(rng)
            .expect("non-empty corpus")
            .text
            .clone()
            .into_bytes()
    } else {
        generated_trace(rng)
    };
    match rng.random_range(0..100) {
        // Unchanged: valid traces reach the schedule checks.
        0..=24 => base,
        25..=84 => {
            let text = String::from_utf8(base).expect("corpus traces are text");
            let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
            let mut final_newline = text.ends_with('\n');
            let n = [1, 1, 1, 2, 3][rng.random_range(0..5)];
            for _ in 0..n {
                mutate_trace_lines(&mut lines, &mut final_newline, rng);
            }
            // Line ends: LF, or CRLF on some or all lines.
            let crlf = [0.0, 0.0, 0.0, 1.0, 0.3][rng.random_range(0..5)];
            let mut out = String::new();
            for (i, l) in lines.iter().enumerate() {
                out.push_str(l);
                if i + 1 < lines.len() || final_newline {
                    out.push_str(if rng.random_bool(crlf) { "\r\n" } else { "\n" });
                }
            }
            out.into_bytes()
        }
        85..=96 => {
            let mut b = base;
            for _ in 0..1 + rng.random_range(0..4) {
                let len = b.len();
                match rng.random_range(0..4) {
                    0 if len > 0 => {
                        let i = rng.random_range(0..len);
                        b[i] ^= 1 << rng.random_range(0..8);
                    }
                    1 if len > 0 => {
                        let i = rng.random_range(0..len);
                        b[i] = *b"0123456789\n\r -+ \t\0".choose(rng).expect("non-empty");
                    }
                    2 => b.truncate(rng.random_range(0..=len)),
                    _ => {
                        let i = rng.random_range(0..=len);
                        b.insert(i, rng.random());
                    }
                }
            }
            b
        }
        _ => random_bytes(rng, 64),
    }
}

fn mutate_trace_lines(lines: &mut Vec<String>, final_newline: &mut bool, rng: &mut Pcg64Mcg) {
    let len = lines.len();
    let pick = |rng: &mut Pcg64Mcg| rng.random_range(0..len);
    match rng.random_range(0..13) {
        0 if len > 0 => {
            lines.remove(pick(rng));
        }
        1 if len > 0 => {
            let i = pick(rng);
            let l = lines[i].clone();
            for _ in 0..rng.random_range(1..4) {
                lines.insert(i, l.clone());
            }
        }
        2 if len > 1 => {
            let (i, j) = (pick(rng), pick(rng));
            lines.swap(i, j);
        }
        // A timestamp below its predecessor.
        3 if len > 1 => {
            let i = rng.random_range(1..len);
            let prev: u64 = lines[i - 1].trim().parse().unwrap_or(1);
            lines[i] = prev.saturating_sub(rng.random_range(1..=3)).to_string();
        }
        // An edge number in place of a line, or appended (the period).
        4 => {
            let v = TRACE_NUMBERS.choose(rng).unwrap().to_string();
            if len > 0 && rng.random_bool(0.5) {
                lines[pick(rng)] = v;
            } else {
                lines.push(v);
            }
        }
        // Leading zeros, a sign, spaces or a tab around a number.
        5 if len > 0 => {
            let i = pick(rng);
            let deco = ["0", "000", "+", "-", " ", "\t"].choose(rng).unwrap();
            lines[i] = if rng.random_bool(0.7) {
                format!("{deco}{}", lines[i])
            } else {
                format!("{}{deco}", lines[i])
            };
        }
        6 => {
            let i = rng.random_range(0..=len);
            lines.insert(i, String::new());
        }
        7 => *final_newline = !*final_newline,
        // A zero last timestamp (the period), or all zeros.
        8 if len > 0 => {
            if rng.random_bool(0.8) {
                lines[len - 1] = "0".into();
            } else {
                lines.iter_mut().for_each(|l| *l = "0".into());
            }
        }
        9 => lines.truncate(rng.random_range(0..=len)),
        // Every timestamp scaled up (huge periods, opportunities far apart).
        10 if len > 0 => {
            let f: u64 = [1_000, 1 << 20, 1 << 40, 1_000_000_000_000][rng.random_range(0..4)];
            for l in lines.iter_mut() {
                if let Ok(v) = l.parse::<u64>() {
                    *l = v.saturating_mul(f).to_string();
                }
            }
        }
        // A bare CR inside a line.
        11 if len > 0 => {
            let i = pick(rng);
            lines[i].push('\r');
        }
        _ => {
            // A shifted copy of the trace appended: a longer, valid trace.
            let last: u64 = lines.last().and_then(|l| l.parse().ok()).unwrap_or(0);
            let copy: Vec<String> = lines
                .iter()
                .filter_map(|l| l.parse::<u64>().ok())
                .map(|v| v.saturating_add(last).to_string())
                .collect();
            lines.extend(copy);
        }
    }
}
