"""``latlab reproduce NAME``: run one of the published studies end to end."""

from __future__ import annotations

from pathlib import Path

import click

from latlab.errors import UserError


def register(cli: click.Group) -> None:
    @cli.command("reproduce")
    @click.argument("name", required=False, metavar="NAME")
    @click.option("--list", "list_only", is_flag=True, help="List the studies latlab reproduces.")
    @click.option(
        "--quick",
        is_flag=True,
        help="Shorter runs and fewer points: the same qualitative picture in minutes.",
    )
    @click.option(
        "-o",
        "--outdir",
        type=click.Path(file_okay=False, path_type=Path),
        help="Where data, figures and the report go (default: out/reproduce/NAME).",
    )
    @click.option(
        "-j", "--jobs", type=click.IntRange(min=1), help="Parallel runs (default: all cores)."
    )
    @click.option(
        "--real",
        is_flag=True,
        help="Also run the study's real-network experiments (real Linux TCP over emulated paths; root). "
        "Studies with a real part: rtac, mptcp, countermeasures.",
    )
    @click.option(
        "--schemes",
        metavar="PATTERNS",
        help="Only the schemes whose names match these comma-separated patterns; a leading ~ "
        "leaves the matching ones out (e.g. '~*+ecn'). Studies that compare schemes: "
        "countermeasures.",
    )
    def reproduce(
        name: str | None,
        list_only: bool,
        quick: bool,
        outdir: Path | None,
        jobs: int | None,
        real: bool,
        schemes: str | None,
    ) -> None:
        """Reproduce a published study: data (Parquet), figures (PNG) and a Markdown report.

        \b
        Example:
          latlab reproduce --list
          latlab reproduce efficiency --quick
          sudo latlab reproduce rtac --quick --real
        """
        from latlab import studies

        found = studies.available()
        if list_only or name is None:
            if not found:
                click.echo("no studies are available in this build")
            for key, module in found.items():
                click.echo(f"{key:12s} {module.DESCRIPTION}")
            if name is None and not list_only:
                raise UserError("missing NAME; choose one of: " + ", ".join(found))
            return
        if name not in found:
            raise UserError(
                f"unknown study {name!r}; expected one of: {', '.join(found) or '(none)'}"
            )
        module = found[name]
        if real and not getattr(module, "SUPPORTS_REAL", False):
            with_real = [k for k, m in found.items() if getattr(m, "SUPPORTS_REAL", False)]
            raise UserError(
                f"--real: the {name} study has no real-network part; studies with one: "
                + (", ".join(with_real) or "(none)")
            )
        if schemes is not None and not getattr(module, "SUPPORTS_SCHEMES", False):
            with_schemes = [k for k, m in found.items() if getattr(m, "SUPPORTS_SCHEMES", False)]
            raise UserError(
                f"--schemes: the {name} study has no schemes to choose; studies with them: "
                + (", ".join(with_schemes) or "(none)")
            )
        out = outdir or Path("out") / "reproduce" / name
        out.mkdir(parents=True, exist_ok=True)
        from latlab.real.emulated import EmulationUnavailable

        try:
            if getattr(module, "SUPPORTS_SCHEMES", False):
                report = _with_schemes(module, out, quick, jobs, schemes, real)
            elif real:
                report = module.reproduce(out, quick=quick, jobs=jobs, real=True)
            else:
                report = module.reproduce(out, quick=quick, jobs=jobs)
        except EmulationUnavailable as e:
            raise UserError(f"--real: {e}") from None
        click.echo(f"report: {report}")


def _with_schemes(
    module: object, out: Path, quick: bool, jobs: int | None, schemes: str | None, real: bool
) -> Path:
    """A study run with a scheme filter: a bad filter or scheme is a usage error (exit 2), a
    failed run exits 1 (the finished runs are kept)."""
    from latlab.compare import CompareError, CompareFailed
    from latlab.errors import error_line

    extra = {"real": True} if real else {}
    try:
        return module.reproduce(out, quick=quick, jobs=jobs, schemes=schemes, **extra)  # type: ignore[attr-defined]
    except CompareError as e:
        raise UserError(str(e)) from None
    except CompareFailed as e:
        error_line(str(e))
        click.get_current_context().exit(1)
        raise AssertionError("unreachable") from None
