"""Wireless example scenarios run from the CLI and draw their access-link figure."""

from pathlib import Path

import pytest
from click.testing import CliRunner

from latlab.cli import cli

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", ["cellular", "wifi"])
def test_example_runs_and_draws_access_links(core, tmp_path, name):
    out = tmp_path / name
    res = CliRunner().invoke(
        cli,
        ["run", str(REPO / "scenarios" / f"{name}.toml"), "--duration", "10", "-q", "-o", str(out)],
    )
    assert res.exit_code == 0, res.output
    import latlab

    results = latlab.Results.load(out)
    links = results.tables["access_links"]
    assert len(links) >= 2
    # Delivered never exceeds what the access link offered.
    assert (links["departures_bytes"] <= links["offered_bytes"]).all()
    png = out / "access.png"
    assert png.is_file() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_wired_run_draws_no_access_figure(core, tiny_toml, tmp_path):
    res = CliRunner().invoke(cli, ["run", str(tiny_toml), "-q", "-o", str(tmp_path / "w")])
    assert res.exit_code == 0, res.output
    assert not (tmp_path / "w" / "access.png").exists()
