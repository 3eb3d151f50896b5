"""scenarios/mptcp.toml through latlab.run: the MPTCP tables, their consistency, the plot."""

from pathlib import Path

from click.testing import CliRunner

from latlab.cli import cli

REPO = Path(__file__).resolve().parents[2]
SCENARIO = REPO / "scenarios" / "mptcp.toml"


def test_mptcp_example_fills_the_mptcp_tables(core, tmp_path):
    import latlab

    res = latlab.run(SCENARIO, outdir=tmp_path / "mp")
    assert res.conservation_ok
    flows = res.flows
    mp = flows[flows["kind"] == "mptcp"]
    assert len(mp) == 1
    fid = int(mp["flow_id"].iloc[0])

    sub = res.subflows
    assert list(sub["path"]) == ["wired", "wifi"]
    assert sub["joined"].all()
    assert (sub["join_after_ns"] == [0, 500_000_000]).all()
    # Every subflow carried data; the connection's acknowledged bytes are
    # its subflows' (retransmissions summed the same way).
    assert (sub["bytes_acked"] > 0).all()
    assert int(mp["bytes_acked"].iloc[0]) == int(sub["bytes_acked"].sum())
    assert int(mp["retransmitted_segments"].iloc[0]) == int(sub["retransmitted_segments"].sum())
    # The wired path has the lower RTT and more capacity: it carries more.
    wired, wifi = sub.set_index("path").loc["wired"], sub.set_index("path").loc["wifi"]
    assert wired["bytes_acked"] > wifi["bytes_acked"]
    assert wired["srtt_ns"] < wifi["srtt_ns"]

    conn = res.mptcp
    assert len(conn) == 1 and int(conn["flow_id"].iloc[0]) == fid
    row = conn.iloc[0]
    assert row["bytes_delivered"] == mp["bytes_delivered"].iloc[0]
    assert abs(row["goodput_bps"] - mp["goodput_bps"].iloc[0]) < 1e-6
    # Data from the short path waits behind data on the long one.
    assert row["hol_blocked_ns"] > 0 and row["buffer_occupancy_max_bytes"] > 0
    assert row["buffer_occupancy_max_bytes"] <= row["recv_buffer_bytes"]

    # Samples: cumulative acknowledged bytes never fall; rates from their
    # differences add up to about the data level's.
    ss = res.subflow_samples
    for _, g in ss.groupby("subflow"):
        assert g["bytes_acked"].is_monotonic_increasing
    ms = res.mptcp_samples
    assert ms["bytes_delivered"].is_monotonic_increasing
    assert (ms["buffer_occupancy_bytes"] <= row["recv_buffer_bytes"]).all()

    # The tables are written and load back.
    back = latlab.Results.load(tmp_path / "mp")
    assert len(back.subflows) == 2 and len(back.mptcp_samples) == len(ms)


def test_mptcp_run_draws_the_subflow_figure(core, tmp_path):
    out = tmp_path / "cli"
    res = CliRunner().invoke(cli, ["run", str(SCENARIO), "--duration", "10", "-q", "-o", str(out)])
    assert res.exit_code == 0, res.output
    png = out / "subflows.png"
    assert png.is_file() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_run_without_mptcp_has_no_mptcp_tables(core, tiny_toml, tmp_path):
    import latlab

    res = latlab.run(tiny_toml)
    assert "subflows" not in res.tables and len(res.subflows) == 0
    assert list(res.mptcp.columns)[:2] == ["flow_id", "paths"]
