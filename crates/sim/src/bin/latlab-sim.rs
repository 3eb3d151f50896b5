//! `latlab-sim SCENARIO.toml`: run a scenario from Rust alone and print the
//! engine's figures. For profiling (perf, callgrind) without Python; users
//! want the `latlab` command.

use std::process::ExitCode;
use std::time::Instant;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let Some(path) = args.get(1) else {
        eprintln!("usage: latlab-sim SCENARIO.toml");
        return ExitCode::from(2);
    };
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: cannot read {path}: {e}");
            return ExitCode::from(2);
        }
    };
    let t0 = Instant::now();
    let mut sim = match latlab_sim::load(&text, path) {
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
    println!(
        "{}: {} flows, {} links; build {:.3} s; run {:.3} s wall for {:.1} s simulated; {} events ({:.2} M events/s); conservation {}",
        sim.name,
        sim.flows.len(),
        sim.links.len(),
        build_s,
        run_s,
        sim.duration_ns as f64 / 1e9,
        sim.events,
        sim.events as f64 / run_s / 1e6,
        if ok { "ok" } else { "VIOLATED" }
    );
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
