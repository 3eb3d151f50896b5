"""``latlab model ...``: the closed-form models on their own (no packet simulation)."""

from __future__ import annotations

import re
from pathlib import Path

import click

from latlab.errors import UserError

_SIZE_RE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([a-zA-Z]*)\s*$")
_UNITS = {
    "": 1,
    "b": 1,
    "k": 1e3,
    "kb": 1e3,
    "m": 1e6,
    "mb": 1e6,
    "g": 1e9,
    "gb": 1e9,
    "kib": 1024,
    "mib": 1024**2,
    "gib": 1024**3,
}


def parse_sizes(text: str) -> list[float]:
    """'10k,100k,1M' -> [1e4, 1e5, 1e6] (decimal units; KiB/MiB binary). ValueError with the bad item."""
    sizes = []
    for item in text.split(","):
        if not item.strip():
            continue
        if item.strip().startswith("-"):
            raise ValueError(f"flow sizes must be > 0 bytes, got {item.strip()}")
        m = _SIZE_RE.match(item)
        if not m or m.group(2).lower() not in _UNITS:
            raise ValueError(f"not a flow size: {item.strip()!r} (examples: 1500, 10k, 320KiB, 1M)")
        value = float(m.group(1)) * _UNITS[m.group(2).lower()]
        if value <= 0:
            raise ValueError(f"flow sizes must be > 0 bytes, got {item.strip()}")
        sizes.append(value)
    if not sizes:
        raise ValueError("no flow sizes given")
    return sizes


def parse_capacity(text: str) -> str | float:
    """'sampled' or a percentile ('p95', '95') -> the profile's capacity rule."""
    t = text.strip().lower()
    if t == "sampled":
        return "sampled"
    try:
        pct = float(t.removeprefix("p"))
    except ValueError:
        raise ValueError(
            f"--capacity must be 'sampled' or a percentile such as p95, got {text!r}"
        ) from None
    if not 0 < pct < 100:
        raise ValueError(f"--capacity percentile must lie strictly between 0 and 100, got {text!r}")
    return pct / 100.0


def register(cli: click.Group) -> None:
    @cli.group("model")
    def model() -> None:
        """Closed-form models: short-flow completion time and protocol efficiency.

        \b
        Examples:
          latlab model profiles
          latlab model efficiency --profile 4G
          latlab model efficiency --samples my-measurements.csv --iw 30
        """

    @model.command("profiles")
    def profiles_cmd() -> None:
        """List the built-in network profiles and what they hold."""
        from rich.console import Console
        from rich.table import Table

        from latlab.models import profiles

        table = Table(title="network profiles (latlab/data/profiles)")
        for col in (
            "profile",
            "throughput (kbit/s)",
            "RTT (ms)",
            "capacity C",
            "loaded RTT (ms, 1 background flow)",
        ):
            table.add_column(col)
        for name in profiles.names():
            p = profiles.load(name)
            table.add_row(
                name,
                p.throughput_kbps.describe(),
                p.rtt_ms.describe(),
                p.capacity_description(),
                _loaded_summary(p),
            )
        Console().print(table)

    @model.command("efficiency")
    @click.option(
        "--profile",
        "profile_name",
        metavar="NAME",
        help="A built-in network profile (see 'latlab model profiles') or a profile TOML file.",
    )
    @click.option(
        "--samples",
        "samples_path",
        type=click.Path(path_type=Path),
        metavar="FILE",
        help="Your measurements: CSV with columns throughput_kbps, rtt_ms, one row per measurement.",
    )
    @click.option(
        "--loaded-samples",
        "loaded_path",
        type=click.Path(path_type=Path),
        metavar="FILE",
        help="With --samples and --flows > 1: CSV with column rtt_ms, the RTT a new flow sees "
        "while the other flows run.",
    )
    @click.option(
        "--iw",
        type=click.IntRange(min=1),
        default=10,
        show_default=True,
        help="Initial window (segments).",
    )
    @click.option(
        "--variant",
        type=click.Choice(["exact", "published"]),
        default="exact",
        show_default=True,
        help="The exact lossless model or the study's formula as published.",
    )
    @click.option(
        "--flows",
        "n_flows",
        type=click.IntRange(min=1),
        default=1,
        show_default=True,
        help="Concurrent flows sharing the link (2 = one background flow; needs a loaded RTT).",
    )
    @click.option("--tfo", is_flag=True, help="TCP Fast Open: data in the SYN, one RTT less.")
    @click.option(
        "--delayed-ack",
        is_flag=True,
        help="Receiver ACKs every 2 segments or after 40 ms (exact variant).",
    )
    @click.option(
        "--capacity",
        "capacity_text",
        metavar="RULE",
        help="How C comes from the throughput: 'sampled' (every draw) or a percentile such as p95 "
        "[default: the profile's rule; 'sampled' for --samples].",
    )
    @click.option(
        "--mss",
        "mss_bytes",
        type=click.IntRange(min=1),
        default=1448,
        show_default=True,
        help="Segment payload (bytes).",
    )
    @click.option(
        "--sizes",
        "sizes_text",
        metavar="LIST",
        help="Flow sizes, comma-separated (e.g. 10k,100k,1M; decimal units, KiB/MiB binary) "
        "[default: a log grid 1 KB - 10 MB].",
    )
    @click.option(
        "--per-decade",
        type=click.IntRange(min=1, max=100),
        default=4,
        show_default=True,
        help="Points per decade of the default size grid.",
    )
    @click.option(
        "-n",
        "--draws",
        "n_samples",
        type=click.IntRange(min=1),
        default=200_000,
        show_default=True,
        help="Monte-Carlo draws.",
    )
    @click.option(
        "--seed", type=click.IntRange(min=0), default=1, show_default=True, help="Random seed."
    )
    @click.option(
        "-o",
        "--output",
        type=click.Path(dir_okay=False, path_type=Path),
        help="The figure (PNG)  [default: out/model/efficiency-<profile>.png]",
    )
    @click.option(
        "--csv",
        "csv_path",
        type=click.Path(dir_okay=False, path_type=Path),
        help="Also write the table as CSV.",
    )
    def efficiency_cmd(
        profile_name: str | None,
        samples_path: Path | None,
        loaded_path: Path | None,
        iw: int,
        variant: str,
        n_flows: int,
        tfo: bool,
        delayed_ack: bool,
        capacity_text: str | None,
        mss_bytes: int,
        sizes_text: str | None,
        per_decade: int,
        n_samples: int,
        seed: int,
        output: Path | None,
        csv_path: Path | None,
    ) -> None:
        """Protocol efficiency of short TCP flows versus flow size (Monte-Carlo over a profile).

        Efficiency E = L_O / L_S: the ideal time (one RTT, then the full
        capacity) over TCP's completion time with slow start (handshake
        included). Prints mean and 5/50/95 percentiles per flow size and
        writes a figure.

        --samples FILE is a CSV with columns throughput_kbps (kbit/s) and
        rtt_ms (handshake RTT, ms), one row per measurement, with a header
        row naming them (any order, other columns ignored) or no header and
        exactly those two columns. Values must be > 0. Draws are smoothed
        with a Gaussian kernel of width s/sqrt(n).

        \b
        Examples:
          latlab model efficiency --profile 3.5G --variant published
          latlab model efficiency --profile 4G --flows 2          # one background flow
          latlab model efficiency --profile 4G --tfo --iw 30 --sizes 10k,100k,1M
          latlab model efficiency --samples my.csv -o my-efficiency.png
        """

        if (profile_name is None) == (samples_path is None):
            raise click.UsageError("give one of --profile NAME or --samples FILE")
        if loaded_path is not None and samples_path is None:
            raise click.UsageError(
                "--loaded-samples goes with --samples (built-in profiles carry their loaded RTT)"
            )
        try:
            _efficiency(
                profile_name,
                samples_path,
                loaded_path,
                iw,
                variant,
                n_flows,
                tfo,
                delayed_ack,
                capacity_text,
                mss_bytes,
                sizes_text,
                per_decade,
                n_samples,
                seed,
                output,
                csv_path,
            )
        except ValueError as e:  # ProfileError included: bad files, sizes, options
            raise UserError(str(e)) from None


def _loaded_summary(p) -> str:  # noqa: ANN001 - Profile
    if p.loaded_rtt_ms is None:
        return "-"
    q = p.loaded_rtt_ms.quantile([0.05, 0.5, 0.95])
    return f"p5 {q[0]:.0f}, p50 {q[1]:.0f}, p95 {q[2]:.0f}"


def _efficiency(
    profile_name,
    samples_path,
    loaded_path,
    iw,
    variant,
    n_flows,
    tfo,
    delayed_ack,
    capacity_text,
    mss_bytes,
    sizes_text,
    per_decade,
    n_samples,
    seed,
    output,
    csv_path,
) -> None:  # noqa: ANN001
    import numpy as np
    from rich.console import Console
    from rich.table import Table

    from latlab.models import efficiency_plot, latency, montecarlo, profiles

    capacity = parse_capacity(capacity_text) if capacity_text is not None else None
    if profile_name is not None:
        prof = profiles.load(profile_name)
        if capacity is not None:
            prof = prof.with_(capacity=capacity)
    else:
        prof = profiles.from_csv(
            samples_path, loaded_path, capacity=capacity if capacity is not None else "sampled"
        )
    if n_flows > 1 and prof.loaded_rtt_ms is None:
        hint = " (give --loaded-samples FILE)" if samples_path is not None else ""
        raise ValueError(
            f"--flows {n_flows} needs the RTT a new flow sees under load, which profile "
            f"{prof.name} does not have{hint}"
        )
    if delayed_ack and variant != "exact":
        raise ValueError("--delayed-ack extends the exact model; use --variant exact")
    sizes = (
        np.asarray(parse_sizes(sizes_text))
        if sizes_text is not None
        else montecarlo.size_grid(per_decade=per_decade)
    )
    options = montecarlo.ModelOptions(
        iw=iw,
        variant=variant,
        tfo=tfo,
        mss_bytes=mss_bytes,
        delayed_ack=latency.DelayedAck() if delayed_ack else None,
    )
    console = Console()
    with console.status(f"Monte-Carlo over {n_samples:,} draws ..."):
        df = montecarlo.efficiency_vs_size(
            prof, sizes, n_flows=n_flows, n_samples=n_samples, options=options, seed=seed
        )

    traffic = "single flow" if n_flows == 1 else f"{n_flows} flows ({n_flows - 1} background)"
    title = f"{prof.name}: protocol efficiency, {traffic}; {options.label()}"
    table = Table(
        title=title, caption=f"{prof.capacity_description()}; {n_samples:,} draws, seed {seed}"
    )
    for col in ("size", "mean", "p5", "p50", "p95", "mean L_S"):
        table.add_column(col, justify="right")
    for _, row in df.iterrows():
        table.add_row(
            efficiency_plot.size_label(row["size_bytes"]),
            *(f"{100 * row[c]:.1f} %" for c in ("mean", "p5", "p50", "p95")),
            f"{row['fct_mean_s'] * 1e3:.1f} ms",
        )
    console.print(table)
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", prof.name)
    path = (
        output
        or Path("out")
        / "model"
        / f"efficiency-{safe}{'' if n_flows == 1 else f'-{n_flows}flows'}.png"
    )
    efficiency_plot.efficiency_figure({prof.name: df}, path, title)
    console.print(f"figure: {path}")
    if csv_path is not None:
        from latlab import _atomic

        _atomic.write_with(csv_path, lambda tmp: df.to_csv(tmp, index=False))
        console.print(f"table: {csv_path}")
