//! The fuzzer's smoke run, part of `make test`: a fixed seed, so the same
//! 10^4 scenario inputs, 10^5 datagrams and 10^4 traces every time, none of
//! which may panic. (Full runs: `latlab-fuzz scenarios --inputs 1000000`,
//! see benches/README.md.)

use latlab_fuzz::corpus;
use latlab_fuzz::driver::{self, run_in_process};
use latlab_fuzz::targets::{self, Target};

fn assert_clean(target: Target, inputs: u64) -> latlab_fuzz::driver::Stats {
    let seeds = target.corpus(&corpus::repo_root()).unwrap();
    let (stats, found) = run_in_process(target, &seeds, 1, 0, inputs, None, &mut |_| {});
    println!("{}: {stats}", target.name());
    for f in &found {
        eprintln!(
            "input {} panicked at {}: {}\n{}",
            f.index,
            f.location,
            f.message,
            String::from_utf8_lossy(&targets::input(target, &seeds, 1, f.index))
        );
    }
    assert!(found.is_empty(), "{} inputs panicked", found.len());
    assert_eq!(stats.inputs, inputs);
    // An input that needs more than a fuzz worker may have aborts there; in
    // process it only costs memory and time. (A cell of 3,276,800 users
    // once took 10 GB and 30 s here before its error; every input here now
    // needs under 20 MB.)
    let peak = driver::peak_rss_mb();
    assert!(
        peak < driver::DEFAULT_MEM_LIMIT_MB,
        "{}: this process reached {peak} MiB, over a fuzz worker's {} MiB",
        target.name(),
        driver::DEFAULT_MEM_LIMIT_MB
    );
    stats
}

#[test]
fn ten_thousand_scenarios_never_panic() {
    let stats = assert_clean(Target::Scenarios, 10_000);
    // The mutator must get past the parser: a fuzzer whose inputs are all
    // refused tests nothing but the refusal.
    assert!(
        stats.ran_to_end > 200,
        "only {} inputs ran to their end",
        stats.ran_to_end
    );
    assert!(stats.ran_partly > 200, "only {} inputs ran", stats.ran_partly);
    assert!(
        stats.rejected > 1_000,
        "only {} inputs were refused",
        stats.rejected
    );
}

#[test]
fn a_hundred_thousand_datagrams_never_panic_and_round_trip() {
    let stats = assert_clean(Target::Wire, 100_000);
    assert!(stats.ran_to_end > 10_000 && stats.rejected > 10_000, "{stats}");
}

#[test]
fn ten_thousand_traces_never_panic_and_keep_their_invariants() {
    let stats = assert_clean(Target::Traces, 10_000);
    // Both sides must be reached: traces that parse (and get the schedule
    // checks) and traces refused with an error.
    assert!(stats.ran_to_end > 3_000 && stats.rejected > 3_000, "{stats}");
}

#[test]
fn the_trace_corpus_holds_slices_of_the_shipped_traces() {
    let seeds = corpus::load_traces(&corpus::repo_root()).unwrap();
    for expected in [
        "python/latlab/data/traces/lte-steady.trace[0..2000]",
        "python/latlab/data/traces/wifi-weak.trace[0..1]",
    ] {
        assert!(seeds.iter().any(|s| s.name == expected), "{expected} missing");
    }
    // Every slice is a valid trace as it stands.
    for s in &seeds {
        latlab_link::TraceSchedule::parse(&s.text, &s.name).unwrap_or_else(|e| panic!("{e}"));
    }
}

#[test]
fn an_input_is_a_function_of_seed_and_index() {
    for i in [0, 1, 977, 123_456] {
        for target in [Target::Scenarios, Target::Wire, Target::Traces] {
            let seeds = target.corpus(&corpus::repo_root()).unwrap();
            assert_eq!(
                targets::input(target, &seeds, 7, i),
                targets::input(target, &seeds, 7, i)
            );
        }
    }
    let seeds = corpus::load(&corpus::repo_root()).unwrap();
    assert_ne!(
        targets::input(Target::Scenarios, &seeds, 7, 1),
        targets::input(Target::Scenarios, &seeds, 8, 1)
    );
}

#[test]
fn the_corpus_holds_the_shipped_scenarios() {
    let seeds = corpus::load(&corpus::repo_root()).unwrap();
    let names: Vec<&str> = seeds.iter().map(|s| s.name.as_str()).collect();
    for expected in [
        "scenarios/codel-uplink.toml",
        "python/latlab/scenarios/default.toml",
    ] {
        assert!(names.contains(&expected), "{expected} missing from {names:?}");
    }
    // Every shipped scenario is valid as it stands.
    for s in seeds.iter().filter(|s| !s.name.starts_with("random")) {
        latlab_sim::parse(&s.text, &s.name).unwrap_or_else(|e| panic!("{e}"));
    }
}
