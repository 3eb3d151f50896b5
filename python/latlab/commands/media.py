"""``latlab media send|recv``: the media transport over real UDP sockets.

TFRC (RFC 5348) or DFlow, the same state machines the simulator runs, driven
in real time by the Rust binary ``latlab-net`` (crates/net). These commands
find that binary and run it with the arguments as given, so
``latlab media send --help`` shows the binary's own options. The one option
added here, ``--parquet``, also writes the ``--record`` CSV as Parquet
beside it when the run ends.

The binary is looked up as ``latlab.real.netbin`` says: ``$LATLAB_NET_BIN``,
then the source tree's cargo target folder (``$CARGO_TARGET_DIR`` or
``target/release``), then ``PATH``.
"""

from __future__ import annotations

from pathlib import Path

import click

from latlab.errors import UserError
from latlab.real.netbin import BUILD_HINT, find_binary, run_binary


def record_path(args: tuple[str, ...]) -> Path | None:
    """The value of ``--record FILE`` or ``--record=FILE`` among the pass-through arguments."""
    found = None
    for i, arg in enumerate(args):
        if arg == "--record" and i + 1 < len(args):
            found = Path(args[i + 1])
        elif arg.startswith("--record="):
            found = Path(arg.split("=", 1)[1])
    return found


def to_parquet(csv_path: Path) -> Path:
    """Write ``csv_path`` as Parquet beside it (same name, .parquet)."""
    import pandas as pd

    out = csv_path.with_suffix(".parquet")
    pd.read_csv(csv_path).to_parquet(out, index=False)
    return out


def _command(role: str, summary: str) -> click.Command:
    @click.command(
        role,
        help=summary,
        add_help_option=False,
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    )
    @click.option(
        "--parquet", is_flag=True, help="Also write the --record CSV as Parquet beside it."
    )
    @click.argument("args", nargs=-1, type=click.UNPROCESSED)
    @click.pass_context
    def command(ctx: click.Context, parquet: bool, args: tuple[str, ...]) -> None:

        binary = find_binary()
        record = record_path(args)
        if parquet and record is None:
            raise UserError("--parquet needs --record FILE (the CSV to convert)")
        try:
            code = run_binary([str(binary), "media", role, *args])
        except OSError as e:
            raise UserError(f"cannot run {binary}: {e.strerror or e}; {BUILD_HINT}") from e
        if code == 0 and parquet and record is not None and record.is_file():
            click.echo(f"parquet: {to_parquet(record)}")
        ctx.exit(code if code >= 0 else 128 - code)

    return command


def register(cli: click.Group) -> None:
    @cli.group("media")
    def media() -> None:
        """Media congestion control over real UDP: TFRC (RFC 5348) or DFlow.

        Runs latlab-net (crates/net): the same TFRC/DFlow state machines as
        the simulator, paced in real time. Every option is the binary's; see
        'latlab media send --help' and 'latlab media recv --help'. One more
        option, --parquet, also writes the --record CSV as Parquet.

        \b
        Example (two terminals, or two network namespaces):
          latlab media recv --listen 0.0.0.0:5000 --record recv.csv --warmup-s 5
          latlab media send --to 10.0.0.2:5000 --mode dflow --duration-s 30 --record send.csv
        """

    media.add_command(
        _command(
            "send",
            "Send a media-like stream (constant packet size, always data) paced by TFRC or DFlow.\n\n"
            "Arguments go to 'latlab-net media send'; '--help' shows them.",
        )
    )
    media.add_command(
        _command(
            "recv",
            "Receive a media stream, send feedback, record rate, one-way delay and loss.\n\n"
            "Arguments go to 'latlab-net media recv'; '--help' shows them.",
        )
    )
