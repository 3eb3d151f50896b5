//! Fuzz targets: generate input `i`, run it, check the invariants. A
//! violated invariant is a panic, which the driver records like any other.

use crate::corpus::Seed;
use crate::mutate::{self, input_rng};
use latlab_net::wire::{self, DataPacket, FeedbackPacket, Packet, ReceiverReport};
use latlab_proto::tfrc::{DflowParams, TfrcConfig, TfrcData, TfrcFeedback, TfrcMode, MAX_NDUPACK};
use latlab_sim::scenario::{Scenario, Topology};
use rand::{Rng, RngCore};
use rand_pcg::Pcg64Mcg;
use std::path::{Path, PathBuf};

/// What became of one input (for the run's statistics).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Refused with an error value (parse or build).
    Rejected,
    /// Parsed; valid-looking but larger than the per-input budget, so not built.
    TooLarge,
    /// Built, but too large to run within the per-input budget.
    Built,
    /// Built and run for part of its duration.
    RanPartly,
    /// Built and run to its end; result tables made.
    RanToEnd,
}

/// Which parser or core a run fuzzes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Scenarios,
    Wire,
}

impl Target {
    pub fn name(self) -> &'static str {
        match self {
            Target::Scenarios => "scenarios",
            Target::Wire => "wire",
        }
    }
    /// Extension of saved inputs.
    pub fn ext(self) -> &'static str {
        match self {
            Target::Scenarios => "toml",
            Target::Wire => "bin",
        }
    }
}

/// Input `index` of a run with `seed`.
pub fn input(target: Target, corpus: &[Seed], seed: u64, index: u64) -> Vec<u8> {
    let mut rng = input_rng(seed, index);
    match target {
        Target::Scenarios => mutate::scenario_input(corpus, &mut rng),
        Target::Wire => wire_input(&mut rng),
    }
}

/// Run one input against its target.
pub fn exec(target: Target, input: &[u8], scratch: &Path) -> Outcome {
    match target {
        Target::Scenarios => exec_scenario(input, scratch),
        Target::Wire => exec_wire(input),
    }
}

// --- Scenarios -------------------------------------------------------------

/// Per-input budget, so that one input takes milliseconds: scenarios with
/// more hosts or flows than this are not built (unless they exceed the
/// core's own limits, which build must then refuse quickly) ...
const MAX_BUILD_HOSTS: u64 = 400;
const MAX_BUILD_FLOWS: u64 = 400;
/// ... nor LRD sources with more fGn slots than this over all flows ...
const MAX_BUILD_LRD_SLOTS: f64 = 1e6;
/// ... scenarios with more links or flows than this are built but not run ...
const MAX_RUN_LINKS: usize = 256;
const MAX_RUN_FLOWS: usize = 256;
/// ... and a run stops at this much simulated time ...
const MAX_RUN_NS: u64 = 50_000_000;
/// ... or once this many events were processed (checked every step).
const MAX_RUN_EVENTS: u64 = 30_000;
const RUN_STEP_NS: u64 = 100_000;

/// Whether a parsed scenario is too large for the per-input budget, yet
/// within the core's limits (beyond them, build must refuse it quickly).
fn too_large(sc: &Scenario) -> bool {
    use latlab_sim::build::MAX_FLOWS;
    use latlab_sim::topology::MAX_HOSTS;
    let hosts = match &sc.topology {
        Topology::Dumbbell(d) => d.pairs as u64,
        Topology::EdgeDumbbell(e) => e.edges as u64 * e.hosts_per_edge as u64,
        Topology::Cellular(c) => c.users as u64,
        Topology::Wifi(w) => w.stations as u64,
        Topology::Custom(c) => c.nodes.len() as u64,
    };
    let flows: u64 = sc.flows.iter().map(|g| g.count as u64).sum();
    let lrd_slots: f64 = sc
        .flows
        .iter()
        .filter_map(|g| {
            let u = g.udp.as_ref().filter(|u| u.pattern == "lrd")?;
            Some(g.count as f64 * sc.duration_s / (u.slot_ms.unwrap_or(10.0) / 1e3))
        })
        .sum();
    let beyond_core_limits = hosts > MAX_HOSTS || flows > MAX_FLOWS;
    !beyond_core_limits
        && (hosts > MAX_BUILD_HOSTS || flows > MAX_BUILD_FLOWS || !(lrd_slots <= MAX_BUILD_LRD_SLOTS))
}

/// Parse, build and run a scenario. pcap outputs go to `scratch`.
pub fn exec_scenario(input: &[u8], scratch: &Path) -> Outcome {
    let text = String::from_utf8_lossy(input);
    let mut sc = match latlab_sim::parse(&text, "fuzz.toml") {
        Ok(sc) => sc,
        Err(e) => {
            check_error(&e);
            return Outcome::Rejected;
        }
    };
    if too_large(&sc) {
        return Outcome::TooLarge;
    }
    // A pcap name is a link name, from node names the fuzzer invents:
    // keep the capture files inside the scratch folder.
    sc.outputs
        .pcap
        .retain(|n| !n.contains('/') && !n.contains('\\') && !n.contains(".."));
    let mut sim = match latlab_sim::build::build(&sc, "fuzz.toml", Some(scratch)) {
        Ok(sim) => sim,
        Err(e) => {
            check_error(&e);
            return Outcome::Rejected;
        }
    };
    if sim.links.len() > MAX_RUN_LINKS || sim.flows.len() > MAX_RUN_FLOWS {
        return Outcome::Built;
    }
    let horizon = sim.duration_ns.min(MAX_RUN_NS);
    let mut t = 0;
    while t < horizon && sim.events <= MAX_RUN_EVENTS {
        t = (t + RUN_STEP_NS).min(horizon);
        sim.run_until(t);
    }
    // Conservation holds at any time, not only at the end (sim.rs).
    if !sim.conservation_ok() {
        panic!(
            "packet conservation violated at t = {} ns: {:?}",
            sim.now_ns,
            sim.conservation()
                .into_iter()
                .filter(|c| !c.ok)
                .collect::<Vec<_>>()
        );
    }
    if !sim.finished {
        return Outcome::RanPartly;
    }
    for (name, batch) in sim.tables() {
        latlab_sim::tables::to_ipc_stream(&batch)
            .unwrap_or_else(|e| panic!("table {name} does not serialise: {e}"));
    }
    Outcome::RanToEnd
}

/// An error on user input must say something (and format without panicking).
fn check_error(e: &latlab_sim::ScenarioError) {
    let shown = e.to_string();
    assert!(!e.message.trim().is_empty(), "empty error message: {shown:?}");
}

/// A per-process scratch folder for pcap outputs.
pub fn scratch_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("latlab-fuzz-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    dir
}

// --- Media wire parser -------------------------------------------------------

/// A valid data or feedback packet with random fields, and what parsing
/// its encoding must give back.
fn valid_packet(rng: &mut Pcg64Mcg) -> Packet {
    if rng.random_bool(0.5) {
        let len = if rng.random_bool(0.9) {
            rng.random_range(wire::DATA_HEADER_LEN..=2_000)
        } else {
            rng.random_range(wire::DATA_HEADER_LEN..=wire::MAX_PACKET_BYTES)
        };
        let mode = if rng.random_bool(0.5) {
            TfrcMode::Tfrc
        } else {
            TfrcMode::DFlow(DflowParams {
                base_period_rtts: rng.random_range(1.0..=10_000.0),
                current_period_ns: rng.random_range(1..=60_000_000_000),
                cd_thresh_ns: rng.random_range(1..=10_000_000_000),
                gradient_test: rng.random(),
            })
        };
        Packet::Data(DataPacket {
            session_id: rng.random(),
            data: TfrcData {
                seq: rng.random(),
                send_ts_ns: rng.random(),
                rtt_ns: rng.random(),
                payload_bytes: len as u32,
            },
            // What the parser reconstructs: the wire carries only these fields.
            config: TfrcConfig {
                mode,
                segment_bytes: len as u32,
                ndupack: rng.random_range(1..=MAX_NDUPACK),
                ..TfrcConfig::default()
            },
        })
    } else {
        Packet::Feedback(FeedbackPacket {
            session_id: rng.random(),
            feedback: TfrcFeedback {
                t_recvdata_ns: rng.random(),
                t_delay_ns: rng.random(),
                x_recv_bps: if rng.random_bool(0.1) {
                    0.0
                } else {
                    rng.random_range(0.0..1e12)
                },
                p: [0.0, 1.0, rng.random_range(0.0..=1.0)][rng.random_range(0..3)],
            },
            report: ReceiverReport {
                packets_received: rng.random(),
                packets_lost: rng.random(),
                queueing_delay_ns: rng.random(),
                delay_events: rng.random(),
                malformed: rng.random(),
            },
        })
    }
}

fn encode(pkt: &Packet) -> Vec<u8> {
    let mut buf = vec![0u8; wire::MAX_PACKET_BYTES];
    let n = match pkt {
        Packet::Data(d) => wire::encode_data(d, &mut buf),
        Packet::Feedback(f) => wire::encode_feedback(f, &mut buf),
    }
    .unwrap_or_else(|e| panic!("a valid packet does not encode: {e:?} ({pkt:?})"));
    buf.truncate(n);
    buf
}

/// Input: a byte prefix says how to read the rest. `0`: a valid packet's
/// encoding that must round-trip; anything else: arbitrary bytes.
fn wire_input(rng: &mut Pcg64Mcg) -> Vec<u8> {
    let choice = rng.random_range(0..100);
    if choice < 30 {
        let mut b = vec![0u8];
        b.extend(encode(&valid_packet(rng)));
        return b;
    }
    let mut b = if choice < 90 {
        encode(&valid_packet(rng))
    } else {
        mutate::random_bytes(rng, 128)
    };
    for _ in 0..1 + rng.random_range(0..4) {
        let len = b.len();
        match rng.random_range(0..7) {
            0 if len > 0 => {
                let i = rng.random_range(0..len);
                b[i] ^= 1 << rng.random_range(0..8);
            }
            // A field of the header set to a byte at its edges.
            1 if len > 0 => {
                let i = rng.random_range(0..len.min(wire::FEEDBACK_LEN));
                b[i] = [0, 1, 2, 0x7f, 0x80, 0xfe, 0xff][rng.random_range(0..7)];
            }
            2 => b.truncate(rng.random_range(0..=len)),
            3 => b.extend(std::iter::repeat_n(0, rng.random_range(1..64))),
            // An 8-byte field to all ones (u64::MAX, NaN as a float).
            4 if len >= 8 => {
                let i = rng.random_range(0..=len - 8) & !7;
                b[i..i + 8].fill(0xff);
            }
            5 if len > 0 => {
                let i = rng.random_range(0..len);
                b[i] = rng.random();
            }
            _ => {
                let mut tail = vec![0u8; rng.random_range(0..16)];
                rng.fill_bytes(&mut tail);
                b.extend(tail);
            }
        }
    }
    let mut out = vec![1u8];
    out.extend(b);
    out
}

/// Parse the datagram; a packet that parses must re-encode to a datagram
/// that parses to the same packet; a valid packet must round-trip exactly.
pub fn exec_wire(input: &[u8]) -> Outcome {
    let Some((&mode, datagram)) = input.split_first() else {
        return Outcome::Rejected;
    };
    let parsed = wire::parse(datagram);
    if mode == 0 {
        let pkt = parsed.unwrap_or_else(|e| panic!("a valid encoding does not parse: {e:?}"));
        let again = encode(&pkt);
        assert_eq!(again, datagram, "decode(encode(x)) is not x");
        return Outcome::RanToEnd;
    }
    match parsed {
        Err(e) => {
            // The kind the endpoints count it under must exist for every error.
            let _ = e.kind();
            Outcome::Rejected
        }
        Ok(pkt) => {
            let bytes = encode(&pkt);
            if let Packet::Data(_) = pkt {
                assert_eq!(bytes.len(), datagram.len(), "re-encoded length differs");
            }
            let again = wire::parse(&bytes)
                .unwrap_or_else(|e| panic!("a re-encoded packet does not parse: {e:?} ({pkt:?})"));
            assert_eq!(again, pkt, "parse(encode(parse(b))) differs from parse(b)");
            Outcome::RanToEnd
        }
    }
}
