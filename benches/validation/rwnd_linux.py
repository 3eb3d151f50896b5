#!/usr/bin/env python3
"""Receiver-window control on real Linux TCP over an emulated bloated path, beside the same path simulated.

The experiments live in latlab.studies.rtac.real (``latlab reproduce rtac
--real`` runs them too and puts them in the study's report): a Linux CUBIC
sender downloads to ``latlab-net recv`` (auto-tuning, DRWA, RTAC at each θ)
through ``latlab emulate scenarios/emulate-bloated.toml`` (30 Mbit/s, 40 ms
RTT, a 1000-packet buffer, and the study's θ again through a 400-packet
one), each receiver alone and beside an auto-tuning receiver; every run is
simulated on the same file too, and a simulated sweep of the buffer shows
where RTAC at the study's θ keeps its share.

    sudo .venv/bin/python benches/validation/rwnd_linux.py [--seconds 20] [--competition-seconds 300] \\
        [--theta 1.38 2.5] [--repeats 2] [--buffer-packets 1000] [--shallow-buffer-packets 400] \\
        [--markdown docs/validation/rwnd-linux.md --jsonl docs/validation/rwnd-linux.jsonl]

Needs root, /dev/net/tun, `ip`, a built `latlab-net` (make build) and the kernel's cubic.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from latlab.real import tcpmem
from latlab.studies.rtac import real


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seconds", type=float, default=20.0, help="length of each download, s (20)")
    p.add_argument("--warmup", type=float, default=5.0, help="seconds left out of the averages (5)")
    p.add_argument(
        "--competition-seconds",
        type=float,
        default=real.RealSettings.competition_seconds,
        help="length of each competition run, s (%(default)g: two CUBIC flows take minutes to even out)",
    )
    p.add_argument(
        "--competition-warmup",
        type=float,
        default=real.RealSettings.competition_warmup_s,
        help="seconds of a competition run left out of the averages (%(default)g)",
    )
    p.add_argument(
        "--theta",
        type=float,
        nargs="+",
        default=list(real.THETAS),
        help="RTAC operating points θ = RTT*/RTT_min (default: %(default)s)",
    )
    p.add_argument(
        "--repeats",
        type=int,
        default=real.RealSettings.repeats,
        metavar="N",
        help="runs of each competition case, for the share's mean and range (default: %(default)s)",
    )
    p.add_argument(
        "--buffer-packets",
        type=int,
        default=real.BUFFER_PACKETS,
        metavar="N",
        help="the path's DropTail buffer, packets (default: %(default)s, ten BDPs)",
    )
    p.add_argument(
        "--shallow-buffer-packets",
        type=int,
        default=real.SHALLOW_BUFFER_PACKETS,
        metavar="N",
        help="a second buffer on which the study's θ = 1.38 runs again (default: %(default)s; 0: none)",
    )
    p.add_argument(
        "--realtime",
        type=int,
        default=10,
        metavar="PRIO",
        help="the emulator's SCHED_FIFO priority, so other jobs do not delay packets (10; 0: off)",
    )
    p.add_argument(
        "--binary", default=None, help="latlab-net (default: target/release/latlab-net or on PATH)"
    )
    p.add_argument("--markdown", default=None, help="write the results as a Markdown page here")
    p.add_argument(
        "--jsonl", default=None, help="write every row (real and simulated) to this JSON-lines file"
    )
    p.add_argument(
        "--from-jsonl", default=None, help="render --markdown from rows written before; run nothing"
    )
    p.add_argument(
        "--produced-by",
        default=None,
        help="with --from-jsonl: the command that wrote those rows, if not this script "
        "(e.g. 'latlab reproduce rtac --real', whose real.jsonl has the same rows)",
    )
    args = p.parse_args(argv)
    if args.seconds <= args.warmup + 2:
        p.error("--seconds must exceed --warmup by more than 2 s")
    if args.competition_seconds <= args.competition_warmup + 2:
        p.error("--competition-seconds must exceed --competition-warmup by more than 2 s")
    if any(t <= 1 for t in args.theta):
        p.error("--theta: every θ must be above 1 (θ = RTT*/RTT_min)")
    if args.repeats < 1:
        p.error("--repeats must be at least 1")
    if args.buffer_packets < 1 or args.shallow_buffer_packets < 0:
        p.error(
            "--buffer-packets must be at least 1 and --shallow-buffer-packets at least 0 (0: none)"
        )
    return args


def settings_of(args: argparse.Namespace) -> real.RealSettings:
    return real.RealSettings(
        seconds=args.seconds,
        warmup_s=args.warmup,
        competition_seconds=args.competition_seconds,
        competition_warmup_s=args.competition_warmup,
        thetas=tuple(args.theta),
        realtime=args.realtime,
        repeats=args.repeats,
        buffer_packets=args.buffer_packets,
        shallow_buffer_packets=args.shallow_buffer_packets or None,
    )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    settings = settings_of(args)
    words = list(sys.argv[1:] if argv is None else argv)
    for flag in (
        "--from-jsonl",
        "--produced-by",
    ):  # the page names the command that ran, not the re-rendering
        if flag in words:
            i = words.index(flag)
            del words[i : i + 2]
    command = args.produced_by or "python benches/validation/rwnd_linux.py " + " ".join(words)
    if args.from_jsonl:
        rows = real.load_rows(Path(args.from_jsonl))
    else:
        reason = real.unavailable_reason()
        if reason:
            print(f"rwnd_linux: skipped: {reason}", file=sys.stderr)
            return 2
        tcpmem.require_fit("rwnd_linux")
        out = Path(args.jsonl).parent if args.jsonl else Path("out/rwnd_linux")
        rows = real.run_real(
            settings, out, exe=args.binary, on_row=lambda r: print(json.dumps(r), flush=True)
        )
        if args.jsonl:
            (out / "real.jsonl").replace(args.jsonl)
        print(f"rwnd_linux: measured with {tcpmem.describe()}", file=sys.stderr)
    if args.markdown:
        page = "# Receiver-window control on real Linux TCP\n\n" + real.render(
            rows, settings, command
        )
        Path(args.markdown).write_text(page, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
