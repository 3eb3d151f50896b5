"""The ``latlab-net`` binary (crates/net): where it is and how to run it.

The real-network tools (``latlab media``, ``latlab emulate``, ``latlab
proxy``, ``latlab run --emulate``, the studies' real runs) all drive this one
Rust binary. It is looked up in ``$LATLAB_NET_BIN``, then in the source
tree's cargo target folder (``$CARGO_TARGET_DIR`` or ``target/release``),
then on ``PATH``.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path

from latlab.errors import UserError

BINARY = "latlab-net"
ENV_VAR = "LATLAB_NET_BIN"
BUILD_HINT = (
    f"build it with 'cargo build --release -p latlab-net' (or 'make build') in the latlab source tree, "
    f"or point {ENV_VAR} at it"
)


def repo_root() -> Path | None:
    """The source tree this package lives in (python/latlab/real/ -> the root), if it is one."""
    root = Path(__file__).resolve().parents[3]
    return root if (root / "Cargo.toml").is_file() else None


def _is_executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def find_binary() -> Path:
    """The ``latlab-net`` executable, or a UserError that says how to get one."""
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
        candidates.append(
            (base if base.is_absolute() or root is None else root / base) / "release" / BINARY
        )
    if root is not None:
        candidates.append(root / "target" / "release" / BINARY)
    for path in candidates:
        if _is_executable(path):
            return path
    on_path = shutil.which(BINARY)
    if on_path:
        return Path(on_path)
    looked = ", ".join(str(p) for p in candidates) or "(no source tree)"
    raise UserError(
        f"{BINARY} is not built (looked in ${ENV_VAR}, {looked} and PATH); {BUILD_HINT}"
    )


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
