//! Replay an emulation's packet log through this build's link code and say
//! whether every packet meets the same fate at the same time.
//!
//! `latlab-net emulate --packet-log` records, per packet read from a TUN
//! device, when it was read, what the emulated path did with it (delivered,
//! queue drop, lost) and when the model said it reaches the far end. Those
//! times depend only on the arrivals and the scenario's seeded streams, not
//! on the real clock, so feeding the recorded arrivals to a line built from
//! the same scenario must give the recorded fates and due times exactly.
//! Run on a log written by an older build, this checks that a change of the
//! link code kept the emulated queue's behaviour:
//!
//! ```text
//! cargo run --release -p latlab-net --example emulate_replay -- \
//!     scenarios/emulate-20mbit-50ms.toml OLD_RUN/packets.csv
//! ```
//!
//! Exit code 0 when every packet matches, 1 otherwise, 2 for bad input.

use std::collections::BTreeMap;
use std::process::ExitCode;

use latlab_link::{PacketRef, RouteEcn};
use latlab_net::emulate::config;
use latlab_net::emulate::line::{Line, Outcome};
use latlab_qdisc::Ecn;

#[derive(serde::Deserialize)]
struct Row {
    direction: String,
    bytes: u32,
    read_ns: u64,
    fate: String,
    due_ns: Option<u64>,
}

/// What happened to one packet: its fate and, if delivered, its due time.
type Fate = (String, Option<u64>);

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [scenario, log] = args.as_slice() else {
        eprintln!(
            "usage: emulate_replay SCENARIO.toml PACKETS.csv (a log of `latlab-net emulate --packet-log`)"
        );
        return ExitCode::from(2);
    };
    match replay(scenario, log) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("emulate_replay: {e}");
            ExitCode::from(2)
        }
    }
}

fn replay(scenario: &str, log: &str) -> Result<bool, String> {
    let mut reader = csv::Reader::from_path(log).map_err(|e| format!("{log}: {e}"))?;
    let mut rows: Vec<Row> = Vec::new();
    for r in reader.deserialize() {
        rows.push(r.map_err(|e| format!("{log}: {e}"))?);
    }
    let plan = config::load(std::path::Path::new(scenario), None, None)?;
    let mut all_match = true;
    for (name, line) in [("up", plan.up), ("down", plan.down)] {
        let mine: Vec<&Row> = rows.iter().filter(|r| r.direction == name).collect();
        all_match &= compare(name, line, &mine);
    }
    Ok(all_match)
}

/// Feed one direction's arrivals in read order; compare per arrival time
/// (packets read at the same nanosecond are compared as a set).
fn compare(name: &str, mut line: Line, rows: &[&Row]) -> bool {
    let mut order: Vec<usize> = (0..rows.len()).collect();
    order.sort_by_key(|&i| rows[i].read_ns);
    let mut out = Vec::new();
    for (k, &i) in order.iter().enumerate() {
        let t = rows[i].read_ns;
        line.advance(t, &mut out);
        let pkt = PacketRef {
            idx: k as u32,
            wire_bytes: rows[i].bytes,
            flow: 0,
            // The log keeps no ECN field: replayed as Not-ECT (a marking queue would drop them).
            route: RouteEcn::new(0, Ecn::NotEct),
        };
        line.arrive(t, pkt, &mut out);
    }
    line.advance(u64::MAX, &mut out);
    let mut replayed: Vec<Fate> = vec![("in flight".into(), None); rows.len()];
    for o in out {
        match o {
            Outcome::Delivered { pkt, due_ns } => {
                replayed[pkt.idx as usize] = ("delivered".into(), Some(due_ns))
            }
            Outcome::Dropped { pkt, cause, .. } => {
                let fate = match cause {
                    latlab_link::DropCause::Queue => "queue_drop",
                    latlab_link::DropCause::Lost => "lost",
                };
                replayed[pkt.idx as usize] = (fate.into(), None)
            }
            Outcome::Left { .. } => {}
        }
    }
    let mut by_time: BTreeMap<u64, (Vec<Fate>, Vec<Fate>)> = BTreeMap::new();
    for (k, &i) in order.iter().enumerate() {
        let e = by_time.entry(rows[i].read_ns).or_default();
        e.0.push((rows[i].fate.clone(), rows[i].due_ns));
        e.1.push(replayed[k].clone());
    }
    let mut mismatches = 0usize;
    for (t, (mut logged, mut again)) in by_time {
        logged.sort();
        again.sort();
        if logged != again {
            if mismatches < 5 {
                eprintln!("{name}: read at {t} ns: logged {logged:?}, replayed {again:?}");
            }
            mismatches += logged.iter().zip(&again).filter(|(a, b)| a != b).count().max(1);
        }
    }
    let count = |f: &str| rows.iter().filter(|r| r.fate == f).count();
    println!(
        "{name}: {} packets ({} delivered, {} queue drops, {} lost): {} differ",
        rows.len(),
        count("delivered"),
        count("queue_drop"),
        count("lost"),
        mismatches
    );
    mismatches == 0
}
