"""Where the package finds the latlab-net binary."""

from __future__ import annotations

from pathlib import Path

import pytest

import latlab
from latlab.real import netbin

REPO = Path(__file__).resolve().parents[2]


def test_the_source_tree_is_found_from_the_package() -> None:
    if not Path(latlab.__file__).resolve().is_relative_to(REPO):
        pytest.skip("latlab is installed outside this source tree")
    assert netbin.repo_root() == REPO


def test_the_cargo_target_folder_is_searched(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.delenv(netbin.ENV_VAR, raising=False)
    monkeypatch.setenv("CARGO_TARGET_DIR", str(tmp_path))
    exe = tmp_path / "release" / "latlab-net"
    exe.parent.mkdir()
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    assert netbin.find_binary() == exe
