#!/usr/bin/env python3
"""Mutation check of BBR's named rules (issue 30): does each one-line change
to a rule in crates/proto/src/cc/bbr.rs make the BBR tests fail?

Each mutant below changes one constant or one condition of a rule that
tcp_bbr.c fixes (the PROBE_BW gain cycle, full-pipe detection, DRAIN,
PROBE_RTT, the gains, the pacing margin, long-term bandwidth sampling). The
script applies one mutant at a time to a copy of the workspace's crates
(the checkout is never touched), builds latlab-proto's tests and runs the
BBR tests: the unit tests in cc/bbr_tests.rs and the dialogue test
`bbr_goes_startup_drain_probe_bw_on_a_fixed_path`. A mutant is

  killed    the tests fail (what a mutation check wants),
  survived  they pass: a rule no test pins down, or an equivalent change,
  unviable  it does not compile (not counted).

Every mutant states what it expects; a survivor that is expected says why
(an equivalent mutant, or a rule out of the tests' reach). The exit status
is 1 when any outcome differs from its expectation, so the check repeats.

    python3 benches/mutation/bbr_mutants.py                # every mutant
    python3 benches/mutation/bbr_mutants.py --list         # names and rules only
    python3 benches/mutation/bbr_mutants.py --only cycle-probe-6/4 full-bw-cnt-2

Builds with the `release-tests` profile into target/bbr-mutants/ (its own,
kept between runs, so dependencies are compiled once); about 10-20 s a
mutant on a 2-core machine. Run it `nice`d on a shared machine.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BBR_RS = Path("crates/proto/src/cc/bbr.rs")
#: The BBR tests of latlab-proto's library: cc/bbr_tests.rs and the dialogue test.
TEST_FILTERS = ("cc::bbr::tests::", "bbr_goes_startup_drain_probe_bw_on_a_fixed_path")
CARGO_PROFILE = "release-tests"
#: A target directory of its own: cargo names a workspace crate's artifacts by its path within the workspace, so
#: the mutated copy and the checkout would overwrite each other's test binary in a shared one.
TARGET_DIR = REPO / "target" / "bbr-mutants"
#: One mutant's tests take well under a second; a mutant that makes one loop is stopped here (and counts as killed).
TEST_TIMEOUT_S = 30

KILLED = "killed"


@dataclass(frozen=True)
class Mutant:
    """Replace `old` (which must occur exactly once in bbr.rs) by `new`."""

    name: str
    rule: str
    old: str
    new: str
    #: KILLED, or why the mutant survives (equivalent, or outside the tests' reach).
    expect: str = KILLED


MUTANTS: tuple[Mutant, ...] = (
    # --- the PROBE_BW gain cycle (bbr_pacing_gain, bbr_is_next_cycle_phase, bbr_reset_probe_bw_mode)
    Mutant(
        "cycle-probe-6/4", "gain cycle: probe gain 5/4", "BBR_UNIT * 5 / 4,", "BBR_UNIT * 6 / 4,"
    ),
    Mutant("cycle-drain-1", "gain cycle: drain gain 3/4", "BBR_UNIT * 3 / 4,", "BBR_UNIT,"),
    Mutant(
        "cycle-drain-2/4", "gain cycle: drain gain 3/4", "BBR_UNIT * 3 / 4,", "BBR_UNIT * 2 / 4,"
    ),
    Mutant(
        "cycle-cruise-5/4",
        "gain cycle: the six cruise phases at gain 1",
        "    BBR_UNIT,\n];",
        "    BBR_UNIT * 5 / 4,\n];",
    ),
    Mutant(
        "cycle-rand-8",
        "gain cycle: start phase never 3/4",
        "CYCLE_RAND: usize = 7;",
        "CYCLE_RAND: usize = 8;",
    ),
    Mutant(
        "cycle-rand-6",
        "gain cycle: start phase any of 7",
        "CYCLE_RAND: usize = 7;",
        "CYCLE_RAND: usize = 6;",
    ),
    Mutant(
        "cycle-step-2",
        "gain cycle: phases in order",
        "self.cycle_idx = (self.cycle_idx + 1) % CYCLE_LEN;",
        "self.cycle_idx = (self.cycle_idx + 2) % CYCLE_LEN;",
    ),
    Mutant(
        "cycle-phase-half-rtt",
        "gain cycle: a phase lasts min_rtt",
        "self.cycle_stamp_ns) > self.min_rtt_ns;",
        "self.cycle_stamp_ns) > self.min_rtt_ns / 2;",
    ),
    Mutant(
        "cycle-probe-ignores-loss",
        "gain cycle: a loss ends the 5/4 phase",
        "(rs.losses_segs > 0 || inflight >=",
        "(false || inflight >=",
    ),
    Mutant(
        "cycle-probe-ignores-inflight",
        "gain cycle: the 5/4 phase waits for 5/4 BDP in flight",
        "return is_full_length && (rs.losses_segs",
        "return is_full_length || (rs.losses_segs",
    ),
    Mutant(
        "cycle-probe-target-bdp",
        "gain cycle: the 5/4 phase's target is 5/4 BDP",
        "inflight >= self.inflight(bw, self.pacing_gain)",
        "inflight >= self.inflight(bw, BBR_UNIT)",
    ),
    Mutant(
        "cycle-drain-full-length",
        "gain cycle: the 3/4 phase ends early at BDP",
        "is_full_length || inflight <= self.inflight(bw, BBR_UNIT)",
        "is_full_length",
    ),
    Mutant(
        "cycle-drain-at-5/4-bdp",
        "gain cycle: the 3/4 phase ends early at BDP",
        "is_full_length || inflight <= self.inflight(bw, BBR_UNIT)",
        "is_full_length || inflight <= self.inflight(bw, BBR_UNIT * 5 / 4)",
    ),
    Mutant(
        "cycle-policed-keeps-cycling",
        "gain cycle: gain 1 while lt_bw is in use",
        "BbrMode::ProbeBw if self.lt_use_bw => (BBR_UNIT, CWND_GAIN),",
        "",
    ),
    # --- full-pipe detection (bbr_check_full_bw_reached)
    Mutant(
        "full-bw-thresh-9/8", "full pipe: 25 % growth", "BBR_UNIT * 5 / 4;", "BBR_UNIT * 9 / 8;"
    ),
    Mutant(
        "full-bw-thresh-6/4", "full pipe: 25 % growth", "BBR_UNIT * 5 / 4;", "BBR_UNIT * 6 / 4;"
    ),
    Mutant(
        "full-bw-cnt-2", "full pipe: 3 rounds", "FULL_BW_CNT: u32 = 3;", "FULL_BW_CNT: u32 = 2;"
    ),
    Mutant(
        "full-bw-cnt-4", "full pipe: 3 rounds", "FULL_BW_CNT: u32 = 3;", "FULL_BW_CNT: u32 = 4;"
    ),
    Mutant(
        "full-bw-per-ack",
        "full pipe: counted once per round",
        "if self.full_bw_reached || !self.round_start || rs.is_app_limited {",
        "if self.full_bw_reached || rs.is_app_limited {",
    ),
    Mutant(
        "full-bw-app-limited",
        "full pipe: app-limited rounds do not count",
        "if self.full_bw_reached || !self.round_start || rs.is_app_limited {",
        "if self.full_bw_reached || !self.round_start {",
    ),
    Mutant(
        "full-bw-strict-growth",
        "full pipe: growth of exactly 25 % resets the count",
        "if self.max_bw() >= bw_thresh {",
        "if self.max_bw() > bw_thresh {",
    ),
    Mutant(
        "full-bw-keeps-first",
        "full pipe: full_bw follows each 25 % growth",
        "self.full_bw = self.max_bw();\n            self.full_bw_cnt = 0;",
        "self.full_bw_cnt = 0;",
    ),
    Mutant(
        "full-bw-count-kept",
        "full pipe: growth restarts the count",
        "self.full_bw = self.max_bw();\n            self.full_bw_cnt = 0;",
        "self.full_bw = self.max_bw();",
    ),
    Mutant(
        "full-bw-timeout-kept",
        "full pipe: a timeout restarts growth counting (bbr_set_state)",
        "self.full_bw = 0;\n            self.round_start = true;",
        "self.round_start = true;",
    ),
    # --- DRAIN (bbr_drain_gain, bbr_check_drain)
    Mutant(
        "drain-gain-1/2",
        "drain: gain 1/high_gain",
        "BBR_UNIT * 1000 / 2885;",
        "BBR_UNIT * 1000 / 2000;",
    ),
    Mutant(
        "drain-leaves-below-bdp",
        "drain: leave at inflight <= BDP",
        "self.packets_in_net_at_edt(self.conn.in_flight) <= self.inflight(self.max_bw(), BBR_UNIT)",
        "self.packets_in_net_at_edt(self.conn.in_flight) < self.inflight(self.max_bw(), BBR_UNIT)",
    ),
    Mutant(
        "drain-leaves-at-2-bdp",
        "drain: leave at inflight <= BDP",
        "self.packets_in_net_at_edt(self.conn.in_flight) <= self.inflight(self.max_bw(), BBR_UNIT)",
        "self.packets_in_net_at_edt(self.conn.in_flight) <= self.inflight(self.max_bw(), CWND_GAIN)",
    ),
    Mutant(
        "drain-ssthresh-2-bdp",
        "drain: ssthresh = BDP",
        "self.ssthresh = Some(self.inflight(self.max_bw(), BBR_UNIT));",
        "self.ssthresh = Some(self.inflight(self.max_bw(), CWND_GAIN));",
    ),
    # --- PROBE_RTT (bbr_probe_rtt_mode_ms, bbr_min_rtt_win_sec, bbr_update_min_rtt, bbr_check_probe_rtt_done)
    Mutant("probe-rtt-100ms", "probe_rtt: 200 ms", "200 * NS_PER_MS;", "100 * NS_PER_MS;"),
    Mutant("probe-rtt-300ms", "probe_rtt: 200 ms", "200 * NS_PER_MS;", "300 * NS_PER_MS;"),
    Mutant("min-rtt-win-5s", "probe_rtt: every 10 s", "10 * NS_PER_SEC;", "5 * NS_PER_SEC;"),
    Mutant("min-rtt-win-20s", "probe_rtt: every 10 s", "10 * NS_PER_SEC;", "20 * NS_PER_SEC;"),
    Mutant(
        "cwnd-min-5",
        "probe_rtt: cwnd 4 packets",
        "CWND_MIN_TARGET: u64 = 4;",
        "CWND_MIN_TARGET: u64 = 5;",
    ),
    Mutant(
        "probe-rtt-no-round",
        "probe_rtt: also a full round at 4 packets",
        "if self.probe_rtt_round_done {\n                    self.check_probe_rtt_done();",
        "{\n                    self.check_probe_rtt_done();",
    ),
    Mutant(
        "probe-rtt-no-restore",
        "probe_rtt: cwnd restored on exit",
        "self.conn.cwnd = self.conn.cwnd.max(self.prior_cwnd);",
        "",
    ),
    Mutant(
        "probe-rtt-no-refresh",
        "probe_rtt: min_rtt's stamp refreshed on exit",
        "self.min_rtt_stamp_ns = self.conn.now_ns;\n        self.conn.cwnd",
        "self.conn.cwnd",
    ),
    Mutant(
        "probe-rtt-gains-2",
        "probe_rtt: gains 1",
        "BbrMode::ProbeRtt => (BBR_UNIT, BBR_UNIT),",
        "BbrMode::ProbeRtt => (BBR_UNIT, CWND_GAIN),",
    ),
    # --- gains and pacing (bbr_high_gain, bbr_cwnd_gain, bbr_pacing_margin_percent)
    Mutant("high-gain-2", "startup: gain 2/ln 2", "BBR_UNIT * 2885 / 1000 + 1;", "BBR_UNIT * 2;"),
    Mutant(
        "cwnd-gain-3",
        "probe_bw: cwnd gain 2",
        "CWND_GAIN: u64 = BBR_UNIT * 2;",
        "CWND_GAIN: u64 = BBR_UNIT * 3;",
    ),
    Mutant(
        "cwnd-gain-1",
        "probe_bw: cwnd gain 2",
        "CWND_GAIN: u64 = BBR_UNIT * 2;",
        "CWND_GAIN: u64 = BBR_UNIT;",
    ),
    Mutant(
        "margin-0",
        "pacing: 1 % margin",
        "PACING_MARGIN_PERCENT: u64 = 1;",
        "PACING_MARGIN_PERCENT: u64 = 0;",
    ),
    Mutant(
        "margin-2",
        "pacing: 1 % margin",
        "PACING_MARGIN_PERCENT: u64 = 1;",
        "PACING_MARGIN_PERCENT: u64 = 2;",
    ),
    Mutant(
        "pacing-no-reinit-from-srtt",
        "pacing: the first srtt sets the initial rate again",
        "if !self.has_seen_rtt && self.conn.srtt_ns > 0 {",
        "if !self.has_seen_rtt && self.conn.srtt_ns < 0 {",
    ),
    Mutant(
        "pacing-lowered-in-startup",
        "pacing: never lowered before the pipe is full",
        "if self.full_bw_reached || rate > self.pacing_rate {",
        "if true {",
    ),
    # --- long-term bandwidth, policers (bbr_lt_bw_sampling, bbr_lt_bw_interval_done)
    Mutant(
        "lt-ratio-1/4",
        "lt_bw: intervals within 1/8",
        "LT_BW_RATIO: u64 = BBR_UNIT / 8;",
        "LT_BW_RATIO: u64 = BBR_UNIT / 4;",
    ),
    Mutant(
        "lt-ratio-1/16",
        "lt_bw: intervals within 1/8",
        "LT_BW_RATIO: u64 = BBR_UNIT / 8;",
        "LT_BW_RATIO: u64 = BBR_UNIT / 16;",
    ),
    Mutant(
        "lt-loss-64",
        "lt_bw: loss >= 20 %",
        "LT_LOSS_THRESH: u64 = 50;",
        "LT_LOSS_THRESH: u64 = 64;",
    ),
    Mutant(
        "lt-loss-40",
        "lt_bw: loss >= 20 %",
        "LT_LOSS_THRESH: u64 = 50;",
        "LT_LOSS_THRESH: u64 = 40;",
    ),
    Mutant(
        "lt-min-rtts-3",
        "lt_bw: intervals of 4+ rounds",
        "LT_INTVL_MIN_RTTS: u32 = 4;",
        "LT_INTVL_MIN_RTTS: u32 = 3;",
    ),
    Mutant(
        "lt-min-rtts-5",
        "lt_bw: intervals of 4+ rounds",
        "LT_INTVL_MIN_RTTS: u32 = 4;",
        "LT_INTVL_MIN_RTTS: u32 = 5;",
    ),
    Mutant(
        "lt-max-interval-2x",
        "lt_bw: intervals of at most 16 rounds",
        "if self.lt_rtt_cnt > 4 * LT_INTVL_MIN_RTTS {",
        "if self.lt_rtt_cnt > 2 * LT_INTVL_MIN_RTTS {",
    ),
    Mutant(
        "lt-max-rtts-64",
        "lt_bw: used for 48 rounds",
        "LT_BW_MAX_RTTS: u32 = 48;",
        "LT_BW_MAX_RTTS: u32 = 64;",
    ),
    Mutant(
        "lt-diff-40kbit",
        "lt_bw: or within 4 kbit/s",
        "LT_BW_DIFF_BYTES_PER_S: u64 = 4000 / 8;",
        "LT_BW_DIFF_BYTES_PER_S: u64 = 40_000 / 8;",
    ),
    Mutant(
        "lt-bw-not-averaged",
        "lt_bw: the two intervals' average",
        "self.lt_bw = (bw + self.lt_bw) / 2;",
        "self.lt_bw = bw;",
    ),
    Mutant(
        "lt-first-interval-compared",
        "lt_bw: the first interval is only the reference",
        "if self.lt_bw > 0 {",
        "if true {",
    ),
    Mutant(
        "lt-in-use-counts-acks",
        "lt_bw: used for 48 rounds, not ACKs",
        "if self.mode == BbrMode::ProbeBw && self.round_start {",
        "if self.mode == BbrMode::ProbeBw || self.round_start {",
    ),
    Mutant(
        "lt-loss-at-threshold",
        "lt_bw: loss of exactly 50/256 is lossy",
        "(lost << 8) < LT_LOSS_THRESH * delivered",
        "(lost << 8) <= LT_LOSS_THRESH * delivered",
    ),
    Mutant(
        "lt-one-ms-skipped",
        "lt_bw: an interval of 1 ms is measured",
        "if t_ms < 1 {",
        "if t_ms <= 1 {",
    ),
    Mutant(
        "lt-overlong-kept",
        "lt_bw: an interval too long for u32 µs restarts sampling",
        "u32::MAX as u64 / 1000",
        "u32::MAX as u64 * 1000",
    ),
    Mutant(
        "lt-timeout-not-a-loss",
        "lt_bw: a timeout is a loss (bbr_set_state)",
        "losses_segs: 1,",
        "losses_segs: 0,",
    ),
    Mutant(
        "lt-app-limited-kept",
        "lt_bw: an app-limited sample restarts sampling",
        "if rs.is_app_limited {\n            self.reset_lt_sampling();",
        "if false {\n            self.reset_lt_sampling();",
    ),
)


def apply(source: str, m: Mutant) -> str:
    """bbr.rs with the mutant applied; the anchor text must occur exactly once."""
    n = source.count(m.old)
    if n != 1:
        raise SystemExit(
            f"mutant {m.name}: its text occurs {n} times in {BBR_RS}, expected once: {m.old!r}"
        )
    return source.replace(m.old, m.new)


def cargo(
    workdir: Path, *args: str, timeout: float | None = None
) -> subprocess.CompletedProcess[str]:
    """`cargo test` of latlab-proto's library in its own process group, so that a timeout ends the test binary too."""
    cmd = [
        "cargo",
        "test",
        "--quiet",
        "--profile",
        CARGO_PROFILE,
        "-p",
        "latlab-proto",
        "--lib",
        *args,
    ]
    env = {
        **os.environ,
        "CARGO_TARGET_DIR": os.environ.get("CARGO_TARGET_DIR", str(TARGET_DIR)),
    }
    with subprocess.Popen(
        cmd,
        cwd=workdir,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    ) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def run_one(workdir: Path, source: str, m: Mutant | None) -> str:
    """killed / survived / unviable (or 'pass' / 'FAIL' for the unmutated baseline)."""
    (workdir / BBR_RS).write_text(source if m is None else apply(source, m))
    built = cargo(workdir, "--no-run")
    if built.returncode != 0:
        if m is None:
            raise SystemExit(f"the unmutated tests do not build:\n{built.stderr}")
        return "unviable"
    try:
        tested = cargo(workdir, "--", *TEST_FILTERS, timeout=TEST_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return KILLED if m is not None else "FAIL (timeout)"
    if m is None:
        return "pass" if tested.returncode == 0 else f"FAIL\n{tested.stdout[-3000:]}"
    return KILLED if tested.returncode != 0 else "survived"


def copy_workspace(dest: Path) -> None:
    """The workspace manifests and crates/, which cargo needs to load the workspace."""
    for name in ("Cargo.toml", "Cargo.lock", "rustfmt.toml"):
        shutil.copy2(REPO / name, dest / name)
    shutil.copytree(REPO / "crates", dest / "crates", ignore=shutil.ignore_patterns("target"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", nargs="+", metavar="NAME", help="run only these mutants")
    ap.add_argument("--list", action="store_true", help="print the mutants and exit")
    args = ap.parse_args()
    chosen = list(MUTANTS)
    if args.only:
        known = {m.name for m in MUTANTS}
        unknown = sorted(set(args.only) - known)
        if unknown:
            print(
                f"error: unknown mutant(s) {', '.join(unknown)}; --list names them", file=sys.stderr
            )
            return 2
        chosen = [m for m in MUTANTS if m.name in args.only]
    source = (REPO / BBR_RS).read_text()
    for m in chosen:
        apply(source, m)  # every anchor is checked before anything is built
    if args.list:
        for m in chosen:
            print(f"{m.name:30} {m.rule}")
        return 0
    with tempfile.TemporaryDirectory(prefix="bbr-mutants-") as tmp:
        work = Path(tmp)
        copy_workspace(work)
        t0 = time.monotonic()
        baseline = run_one(work, source, None)
        print(f"baseline (no mutation): {baseline} ({time.monotonic() - t0:.0f} s)", flush=True)
        if baseline != "pass":
            return 1
        return report([(m, timed(work, source, m)) for m in chosen])


def timed(work: Path, source: str, m: Mutant) -> str:
    t0 = time.monotonic()
    outcome = run_one(work, source, m)
    print(f"{m.name:30} {outcome:9} {time.monotonic() - t0:4.0f} s  {m.rule}", flush=True)
    return outcome


def report(results: list[tuple[Mutant, str]]) -> int:
    viable = [(m, o) for m, o in results if o != "unviable"]
    killed = sum(o == KILLED for _, o in viable)
    print(
        f"\nkilled {killed} of {len(viable)} viable mutants ({len(results) - len(viable)} unviable)"
    )
    unexpected = []
    for m, outcome in results:
        if outcome == "survived":
            why = m.expect if m.expect != KILLED else "NOT EXPECTED: a rule no test pins down"
            print(f"  survived {m.name}: {why}")
        if (outcome == KILLED) != (m.expect == KILLED) and outcome != "unviable":
            unexpected.append(m.name)
    if unexpected:
        print(f"outcomes differ from expectation: {', '.join(unexpected)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
