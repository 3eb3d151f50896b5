//! `latlab-fuzz`: fuzz the scenario core, the media wire parser, or the
//! Mahimahi trace parser and schedule.
//!
//!   latlab-fuzz scenarios --inputs 1000000 --seed 1
//!   latlab-fuzz wire --inputs 10000000 --seed 1
//!   latlab-fuzz traces --inputs 1000000 --seed 1
//!   latlab-fuzz replay fuzz-findings/panic-scenarios-s1-i42.toml
//!
//! Defects (panics, aborts, hangs) are saved to `--findings` with their
//! message; the exit status is 1 if there were any.

use clap::{Parser, Subcommand, ValueEnum};
use latlab_fuzz::corpus;
use latlab_fuzz::driver::{self, RunOptions};
use latlab_fuzz::targets::{self, Target};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

#[derive(Parser)]
#[command(
    name = "latlab-fuzz",
    about = "Mutation fuzzer for latlab's scenario core, media wire parser and trace parser"
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Clone, Copy, ValueEnum)]
enum TargetArg {
    Scenarios,
    Wire,
    Traces,
}

impl From<TargetArg> for Target {
    fn from(t: TargetArg) -> Target {
        match t {
            TargetArg::Scenarios => Target::Scenarios,
            TargetArg::Wire => Target::Wire,
            TargetArg::Traces => Target::Traces,
        }
    }
}

#[derive(clap::Args)]
struct RunArgs {
    /// Inputs to run.
    #[arg(long, default_value_t = 100_000)]
    inputs: u64,
    /// Seed of the run; input i is a function of (seed, i).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Folder for the inputs that crash, hang or abort.
    #[arg(long, default_value = "fuzz-findings")]
    findings: PathBuf,
    /// An input running longer than this (wall-clock seconds) is a hang.
    #[arg(long, default_value_t = 10.0)]
    hang_s: f64,
    /// Address-space limit of the worker, MiB.
    #[arg(long, default_value_t = driver::DEFAULT_MEM_LIMIT_MB)]
    mem_limit_mb: u64,
    /// Repository root holding scenarios/, python/latlab/scenarios/ and
    /// python/latlab/data/traces/.
    #[arg(long)]
    root: Option<PathBuf>,
}

#[derive(Subcommand)]
enum Cmd {
    /// Mutated scenarios against parse, build and a bounded run.
    Scenarios(RunArgs),
    /// Mutated and random datagrams against the media wire parser.
    Wire(RunArgs),
    /// Mutated Mahimahi traces against the trace parser and schedule.
    Traces(RunArgs),
    /// Run one saved input and print what happens.
    Replay {
        file: PathBuf,
        /// Target of the input (default: from its extension).
        #[arg(long, value_enum)]
        target: Option<TargetArg>,
    },
    /// Internal: the supervised worker process.
    #[command(hide = true)]
    Worker {
        #[arg(long, value_enum)]
        target: TargetArg,
        #[arg(long)]
        seed: u64,
        #[arg(long)]
        from: u64,
        #[arg(long)]
        to: u64,
        #[arg(long)]
        findings: PathBuf,
        #[arg(long)]
        index_file: PathBuf,
        #[arg(long)]
        mem_limit_mb: u64,
        #[arg(long)]
        root: PathBuf,
    },
}

fn run(target: Target, a: RunArgs) -> Result<bool, String> {
    let root = a.root.unwrap_or_else(corpus::repo_root);
    let seeds = target.corpus(&root)?;
    let opts = RunOptions {
        target,
        seed: a.seed,
        inputs: a.inputs,
        findings: a.findings,
        hang_s: a.hang_s,
        mem_limit_mb: a.mem_limit_mb,
        root,
    };
    eprintln!(
        "latlab-fuzz {}: {} inputs, seed {}, corpus of {} seeds",
        target.name(),
        opts.inputs,
        opts.seed,
        seeds.len()
    );
    let t0 = Instant::now();
    let (stats, found) = driver::supervise(&opts, &seeds).map_err(|e| e.to_string())?;
    let wall = t0.elapsed().as_secs_f64();
    println!("latlab-fuzz {}: {stats}", target.name());
    println!(
        "latlab-fuzz {}: {:.1} s wall, {:.0} inputs/s, seed {}",
        target.name(),
        wall,
        stats.inputs as f64 / wall,
        opts.seed
    );
    let mut by_place: std::collections::BTreeMap<(String, &str), (u64, u64, String)> = Default::default();
    for f in &found {
        let e = by_place
            .entry((f.location.clone(), f.kind))
            .or_insert((0, f.index, f.message.clone()));
        e.0 += 1;
    }
    for ((location, kind), (n, first, message)) in &by_place {
        println!("  {kind} x{n} at {location} (first: input {first}): {message}");
    }
    if !found.is_empty() {
        println!("inputs saved in {}", opts.findings.display());
    }
    Ok(found.is_empty())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Cmd::Scenarios(a) => run(Target::Scenarios, a),
        Cmd::Wire(a) => run(Target::Wire, a),
        Cmd::Traces(a) => run(Target::Traces, a),
        Cmd::Replay { file, target } => {
            let target =
                target
                    .map(Target::from)
                    .unwrap_or_else(|| match file.extension().and_then(|e| e.to_str()) {
                        Some("bin") => Target::Wire,
                        Some("trace") => Target::Traces,
                        _ => Target::Scenarios,
                    });
            match std::fs::read(&file) {
                Err(e) => Err(format!("{}: {e}", file.display())),
                Ok(input) => {
                    let scratch = targets::scratch_dir();
                    let t0 = Instant::now();
                    // Default hook: the panic prints in full.
                    let outcome = targets::exec(target, &input, &scratch);
                    println!("{outcome:?} in {:.3} s", t0.elapsed().as_secs_f64());
                    let _ = std::fs::remove_dir_all(&scratch);
                    Ok(true)
                }
            }
        }
        Cmd::Worker {
            target,
            seed,
            from,
            to,
            findings,
            index_file,
            mem_limit_mb,
            root,
        } => Target::from(target).corpus(&root).and_then(|seeds| {
            driver::worker(
                target.into(),
                &seeds,
                seed,
                from,
                to,
                &findings,
                &index_file,
                mem_limit_mb,
            )
            .map(|()| true)
            .map_err(|e| e.to_string())
        }),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("latlab-fuzz: {e}");
            ExitCode::from(2)
        }
    }
}
