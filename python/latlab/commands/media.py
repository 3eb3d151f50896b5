"""``latlab media send|recv``: the media transport over real UDP sockets.

TFRC (RFC 5348) or DFlow, the same state machines the simulator runs, driven
in real time by the Rust binary ``latlab-net`` (crates/net). These commands
find that binary and run it with the arguments as given, so
``latlab media send --help`` shows the binary's own options. The one option
added here, ``--parquet``, also writes the ``--record`` CSV as Parquet
beside it when the run ends.

The binary is looked up in ``$LATLAB_NET_BIN``, then in the source tree's
cargo target folder (``$CARGO_TARGET_DIR`` or ``target/release``), then on
``PATH``.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path

import click

BINARY = "latlab-net"
ENV_VAR = "LATLAB_NET_BIN"
BUILD_HINT = (
    f"build it with 'cargo build --release -p latlab-net' (or 'make build') in the latlab source tree, "
    f"or point {ENV_VAR} at it"
)


def repo_root() -> Path | None:
    """The source tree this package lives in (python/latlab/commands/ -> the root), if it is one."""
    root = Path(__file__).resolve().parents[3]
    return root if (root / "Cargo.toml").is_file() else None


def _is_executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def find_binary() -> Path:
    """The ``latlab-net`` executable, or a UserError that says how to get one."""
    from latlab.cli import UserError

    env = os.environ.get(ENV_VAR, "")
    if env:
        path = Path(env).expanduser()
        if not _is_executable(path):
            raise UserError(f"{ENV_VAR}={env} is not an executable file")
        return path
    candidates: list[Path] = []
    target_dir = os.environ.get("CARGO_TARGET_DIR", "")
    root = repo_root()
    if target_dir:
        base = Path(target_dir)
        candidates.append((base if base.is_absolute() or root is None else root / base) / "release" / BINARY)
    if root is not None:
        candidates.append(root / "target" / "release" / BINARY)
    for path in candidates:
        if _is_executable(path):
            return path
    on_path = shutil.which(BINARY)
    if on_path:
        return Path(on_path)
    looked = ", ".join(str(p) for p in candidates) or "(no source tree)"
    raise UserError(f"{BINARY} is not built (looked in ${ENV_VAR}, {looked} and PATH); {BUILD_HINT}")


def record_path(args: tuple[str, ...]) -> Path | None:
    """The value of ``--record FILE`` or ``--record=FILE`` among the pass-through arguments."""
    found = None
    for i, arg in enumerate(args):
        if arg == "--record" and i + 1 < len(args):
            found = Path(args[i + 1])
        elif arg.startswith("--record="):
            found = Path(arg.split("=", 1)[1])
    return found


def run_binary(argv: list[str]) -> int:
    """Run the binary in the foreground and return its exit code.

    Ctrl-C reaches the binary directly (it is in the terminal's foreground
    process group) and makes it stop cleanly and write its summary, so this
    process ignores SIGINT meanwhile; a SIGTERM sent to this process is
    passed on.
    """
    proc = subprocess.Popen(argv)

    def forward(signum: int, _frame: object) -> None:
        proc.send_signal(signum)

    old_int = signal.signal(signal.SIGINT, signal.SIG_IGN)
    old_term = signal.signal(signal.SIGTERM, forward)
    try:
        return proc.wait()
    finally:
        signal.signal(signal.SIGINT, old_int)
        signal.signal(signal.SIGTERM, old_term)


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
    @click.option("--parquet", is_flag=True, help="Also write the --record CSV as Parquet beside it.")
    @click.argument("args", nargs=-1, type=click.UNPROCESSED)
    @click.pass_context
    def command(ctx: click.Context, parquet: bool, args: tuple[str, ...]) -> None:
        from latlab.cli import UserError

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
