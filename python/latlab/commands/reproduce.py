"""``latlab reproduce NAME``: run one of the published studies end to end."""

from __future__ import annotations

from pathlib import Path

import click


def register(cli: click.Group) -> None:
    @cli.command("reproduce")
    @click.argument("name", required=False, metavar="NAME")
    @click.option("--list", "list_only", is_flag=True, help="List the studies latlab reproduces.")
    @click.option("--quick", is_flag=True, help="Shorter runs and fewer points: the same qualitative picture in minutes.")
    @click.option("-o", "--outdir", type=click.Path(file_okay=False, path_type=Path),
                  help="Where data, figures and the report go (default: out/reproduce/NAME).")
    @click.option("-j", "--jobs", type=click.IntRange(min=1), help="Parallel runs (default: all cores).")
    def reproduce(name: str | None, list_only: bool, quick: bool, outdir: Path | None, jobs: int | None) -> None:
        """Reproduce a published study: data (Parquet), figures (PNG) and a Markdown report.

        \b
        Example:
          latlab reproduce --list
          latlab reproduce efficiency --quick
        """
        from latlab import studies
        from latlab.cli import UserError

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
            raise UserError(f"unknown study {name!r}; expected one of: {', '.join(found) or '(none)'}")
        out = outdir or Path("out") / "reproduce" / name
        out.mkdir(parents=True, exist_ok=True)
        report = found[name].reproduce(out, quick=quick, jobs=jobs)
        click.echo(f"report: {report}")
