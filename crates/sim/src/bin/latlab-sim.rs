//! `latlab-sim SCENARIO.toml`: run a scenario from Rust alone and print the
//! engine's figures. For profiling (perf, callgrind) without Python; users
//! want the `latlab` command.

use latlab_sim::budget::MemoryLimit;
use std::process::ExitCode;
use std::time::Instant;

fn main() -> ExitCode {
    const USAGE: &str = "usage: latlab-sim SCENARIO.toml [--max-memory BYTES]";
    let args: Vec<String> = std::env::args().collect();
    let Some(path) = args.get(1).filter(|a| !a.starts_with("--")) else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let limit = match args.get(2..).unwrap_or_default() {
        [] => MemoryLimit::Machine,
        [flag, v] if flag == "--max-memory" => match v.parse::<u64>() {
            Ok(b) if b > 0 => MemoryLimit::Bytes(b),
            _ => {
                eprintln!("error: --max-memory: expected a positive number of bytes, got {v:?}");
                return ExitCode::from(2);
            }
        },
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: cannot read {path}: {e}");
            return ExitCode::from(2);
        }
    };
    let t0 = Instant::now();
    let loaded = latlab_sim::parse(&text, path)
        .and_then(|sc| latlab_sim::assemble::build_with_limit(&sc, path, None, limit));
    let mut sim = match loaded {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let build_s = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    sim.run();
    let run_s = t1.elapsed().as_secs_f64();
    let ok = sim.conservation_ok();
    // Packets forwarded over links, summed over hops: the work per packet.
    let packet_hops: u64 = sim.links.iter().map(|l| l.counters.departures_pkts).sum();
    println!(
        "{}: {} flows, {} links; build {:.3} s; run {:.3} s wall for {:.1} s simulated; {} events ({:.2} M events/s); {} packet-hops ({:.0} ns wall each); conservation {}",
        sim.name,
        sim.flows.len(),
        sim.links.len(),
        build_s,
        run_s,
        sim.duration_ns as f64 / 1e9,
        sim.events,
        sim.events as f64 / run_s / 1e6,
        packet_hops,
        run_s * 1e9 / packet_hops.max(1) as f64,
        if ok { "ok" } else { "VIOLATED" }
    );
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
