"""Study reports cannot contradict themselves: comparison sentences come from verdicts, and every number a report
gives as the study's comes from the study's references table."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from latlab.studies._verdict import Reference, Verdict, as_input, count_outcomes, within, worst

AGREEMENT = re.compile(
    r"as in the study|agrees with the study|matches the study|reproduces the study", re.I
)


# ----- the Verdict type ---------------------------------------------------------------------------


def test_a_differing_verdict_never_says_as_in_the_study():
    ref = Reference("x", "per-flow goodput at 5 KB", 82.0, "Kbps")
    outcome, rule = within(60.0, ref, 0.05, 0.10)
    v = Verdict(ref, "60.0 Kbps", outcome, rule, why="a reason")
    assert v.outcome == "differs"
    for text in (v.sentence(), v.brief(), v.phrase()):
        assert not re.search(r"(?<!partly )as in the study", text, re.I)
    assert "differs" in v.sentence() and "≈ 82 Kbps" in v.sentence() and "60.0 Kbps" in v.sentence()
    assert "a reason" in v.sentence()
    assert v.label() == "**differs**"


def test_outcomes_follow_the_rule():
    ref = Reference("x", "q", 100.0, "Kbps")
    assert within(104.0, ref, 0.05, 0.10)[0] == "agrees"
    assert within(92.0, ref, 0.05, 0.10)[0] == "partly"
    assert within(80.0, ref, 0.05, 0.10)[0] == "differs"
    assert within(float("nan"), ref, 0.05)[0] == "differs"
    agree = Verdict(ref, "104 Kbps", "agrees", "rule")
    assert "as in the study" in agree.brief() and "agrees with the study" in agree.sentence()
    with pytest.raises(ValueError):
        Verdict(ref, "1", "maybe", "rule")  # type: ignore[arg-type]


def test_an_input_is_shown_as_input_never_as_agreement():
    ref = Reference("syn", "conversion delay of a SYN", 3.0, "ms")
    v = as_input(ref, "3.0 ms (configured)", how="the proxy's SYN delay is set to the study's")
    assert v.outcome == "input" and v.label() == "**input**" and not v.agrees
    for text in (v.sentence(), v.brief(), v.phrase()):
        assert not re.search(r"agree|as in the study|unlike the study|differ", text, re.I), text
    assert "input" in v.sentence() and "3.0 ms (configured)" in v.sentence()
    assert "the proxy's SYN delay" in v.sentence()
    judged = Verdict(ref, "9 ms", "differs", "rule")
    assert worst([v]) == "agrees" and worst([v, judged]) == "differs"
    assert count_outcomes([v, judged]) == "0 agree, 0 partly, 1 differs, 1 input (not judged)"


def test_a_rule_states_the_tolerance_not_the_outcome():
    ref = Reference("x", "q", 100.0, "Kbps")
    for value in (50.0, 100.0):
        assert "agree" not in within(value, ref, 0.05, 0.10)[1]


def test_no_fixed_agreement_prose_in_study_templates():
    """Only latlab.studies._verdict may phrase an agreement; report templates must go through a verdict."""
    root = Path(__file__).resolve().parents[2] / "python" / "latlab" / "studies"
    for path in root.rglob("*.py"):
        if path.name == "_verdict.py":
            continue
        text = path.read_text(encoding="utf-8")
        assert not AGREEMENT.search(text), (
            f"{path.relative_to(root)} phrases an agreement outside a verdict"
        )


# ----- pacing: a report rendered from synthetic metrics ------------------------------------------------


def _pacing_table(goodput: dict[str, float], loss: float = 0.09) -> pd.DataFrame:
    from latlab.studies.pacing.cases import FULL, MODES, Run

    rows = []
    for b in FULL.buffers_kb:
        for i, m in enumerate(MODES):
            r = Run("A", m, float(b))
            k = goodput[m] * (0.6 + 0.4 * min(b, 20) / 20) / (0.6 + 0.4 * 5 / 20)
            rows.append(
                {
                    **r.params,
                    "run_id": f"{m}-{b}",
                    "status": "ok",
                    "per_flow_kbps": k,
                    "tcp_goodput_mbps": k * 1000 / 1e3,
                    "core_utilisation": min(0.999, 0.7 + 0.015 * b),
                    "core_loss": loss + 0.001 * i,
                    "timeouts_per_flow": 10.0,
                    "fast_recoveries_per_flow": 5.0,
                    "wall_s": 10.0,
                    "sim_wall_s": 10.0,
                    "finished_at": "2026-01-01T00:00:00+00:00",
                }
            )
    return pd.DataFrame(rows)


def _render_pacing(table: pd.DataFrame) -> str:
    from latlab.studies.pacing.cases import FULL
    from latlab.studies.pacing.report import render

    return render(table, dataclasses.replace(FULL, experiments=("A",)), False, 2, 60.0, {})


def test_pacing_report_from_synthetic_metrics_uses_the_verdicts():
    # Synthetic goodputs far from the study's: every goodput verdict must differ, and no sentence may agree.
    text = _render_pacing(_pacing_table({"unpaced": 61.0, "host-paced": 62.0, "edge-paced": 63.0}))
    assert "**differs**" in text
    for line in text.splitlines():
        if "Kbps" in line and "per-flow goodput at 5 KB" in line and line.startswith("*"):
            assert "differs from the study" in line
            assert "as in the study" not in line.lower()


def test_every_study_number_in_the_pacing_report_comes_from_the_references(monkeypatch):
    from latlab.studies.pacing import references

    changed = {
        k: (dataclasses.replace(r, value=r.value + 7.25) if r.value else r)
        for k, r in references.REFERENCES.items()
    }
    monkeypatch.setattr(references, "REFERENCES", changed)
    import latlab.studies.pacing.report as report
    import latlab.studies.pacing.verdicts as verdicts

    monkeypatch.setattr(verdicts, "REFERENCES", changed)
    monkeypatch.setattr(report, "REFERENCES", changed)
    text = _render_pacing(_pacing_table({"unpaced": 85.0, "host-paced": 86.0, "edge-paced": 94.0}))
    for r in changed.values():
        if r.value:
            assert r.text() in text, r.key  # the changed value is what the report prints
    # the original numbers are gone from every "study" cell and sentence
    assert (
        "≈ 82 Kbps" not in text
        and "≈ 93 Kbps" not in text
        and "> 13 %" not in text
        and "> 15 %" not in text
    )
    assert "≈ 89.25 Kbps" in text and "≈ 100.25 Kbps" in text


# ----- DFlow: verdicts and case texts from synthetic runs ----------------------------------------------


def _dflow_runs(ledbat_ratio: float, newreno_ratio: float) -> pd.DataFrame:
    from latlab.studies.dflow.cases import FULL_QUEUE_DELAY_S, PRIMARY

    rows = []
    for seed in (1, 2, 3):
        base = {
            "variant": PRIMARY,
            "seed": seed,
            "status": "ok",
            "base_period_rtts": 10000.0,
            "duration_s": 300.0,
            "measure_from_s": 60.0,
            "drops_total": 10,
            "rival_retransmits": 0,
            "rival_timeouts": 1,
            "dflow_loss_events": 0,
            "dflow_delay_events": 100,
            "tfrc_loss_events": 0,
            "jain_all": 0.9,
            "wall_s": 1.0,
            "first_to_start": "dflow",
            "dflow_own_delay_ms": 30.0,
            "utilisation": 0.95,
            "delay_p95_ms": 60.0,
            "delay_max_ms": 90.0,
            "goodput_bps": 2e6,
        }
        rows.append(
            {
                **base,
                "case": "dflow",
                "delay_mean_ms": 20.0,
                "below_target": 0.8,
                "drops_window": 0,
                "jain_dflow": 0.99,
                "dflow_rate_bps": 3.6e5,
                "tfrc_rate_bps": np.nan,
                "rival_rate_bps": np.nan,
            }
        )
        rows.append(
            {
                **base,
                "case": "tfrc",
                "delay_mean_ms": 0.9 * FULL_QUEUE_DELAY_S * 1e3,
                "below_target": 0.0,
                "drops_window": 500,
                "jain_dflow": np.nan,
                "dflow_rate_bps": np.nan,
                "tfrc_rate_bps": 4e5,
                "rival_rate_bps": np.nan,
                "tfrc_loss_events": 400,
                "utilisation": 1.0,
            }
        )
        for case, ratio in (("ledbat", ledbat_ratio), ("vegas", 1.0), ("newreno", newreno_ratio)):
            rows.append(
                {
                    **base,
                    "case": case,
                    "delay_mean_ms": 45.0,
                    "below_target": 0.6,
                    "drops_window": 0,
                    "jain_dflow": np.nan,
                    "dflow_rate_bps": 1e6 * ratio,
                    "tfrc_rate_bps": np.nan,
                    "rival_rate_bps": 1e6,
                }
            )
    return pd.DataFrame(rows)


def test_dflow_verdicts_and_texts_follow_the_numbers():
    from latlab.studies.dflow.report import _case_texts
    from latlab.studies.dflow.verdicts import verdicts

    bad = _dflow_runs(ledbat_ratio=0.01, newreno_ratio=0.5)
    vs = verdicts(bad)
    assert vs["ledbat_share"].outcome == "differs" and vs["newreno_share"].outcome == "differs"
    assert vs["vegas_share"].outcome == "agrees"
    texts = _case_texts(bad, pd.DataFrame(), vs)
    for case in ("ledbat", "newreno"):
        assert "unlike the study" in texts[case] and not re.search(
            r"(?<!partly )as in the study", texts[case]
        )
    assert "DFlow's rate against Vegas: as in the study" in texts["vegas"]

    good = _dflow_runs(ledbat_ratio=1 / 3, newreno_ratio=0.001)
    vs = verdicts(good)
    assert vs["ledbat_share"].outcome == "agrees" and vs["newreno_share"].outcome == "agrees"
    assert "as in the study" in _case_texts(good, pd.DataFrame(), vs)["newreno"]


# ----- efficiency: the single-flow ordering --------------------------------------------------------------


def test_efficiency_ordering_verdict_differs_when_4g_is_ahead():
    from latlab.studies.efficiency import verdicts
    from latlab.studies.efficiency.cases import NOTE_SIZES, REFERENCE_SIZE

    sizes = sorted(list(NOTE_SIZES) + [REFERENCE_SIZE])
    rows = [
        {"profile": p, "n_flows": 1, "variant": "published", "size_bytes": s, "mean": m}
        for s in sizes
        for p, m in (("3.5G", 0.3), ("4G", 0.5))
    ]
    v = verdicts.single_flow_order(pd.DataFrame(rows), lambda s: f"{s} B")
    assert v.outcome == "differs" and "differs from the study" in v.sentence()
    rows = [dict(r, mean=0.6 - r["mean"]) for r in rows]  # 4G 0.1, 3.5G 0.3
    assert verdicts.single_flow_order(pd.DataFrame(rows), str).outcome == "agrees"
    loaded = verdicts.loaded_rtt(
        {"3.5G": (49, 50, 70), "4G": (36, 40, 43)}, {"3.5G": (50, 52, 71), "4G": (80, 120, 200)}
    )
    assert (
        loaded["loaded_rtt_35g"].outcome == "differs"
        and loaded["loaded_rtt_4g"].outcome == "differs"
    )
