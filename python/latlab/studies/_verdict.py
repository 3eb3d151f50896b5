"""References, verdicts and the sentences that compare latlab with a study.

A study's reference points are data (:class:`Reference`, kept in one
``references.py`` per study); judging one against latlab's numbers gives a
:class:`Verdict`, which holds the rule and the outcome and renders every
sentence that compares with the study. Report templates print verdict
sentences and measured numbers only, so a report cannot claim an agreement
its own verdict does not support.

The rule for every report: a sentence that states a result, a comparison or
an agreement is rendered from a :class:`Verdict` (or from measured numbers
alone); a fixed sentence may describe the set-up, never the outcome.

Outcomes: ``"agrees"``, ``"partly"``, ``"differs"`` judge a measured number
against the study's; ``"input"`` marks a study figure that latlab's
simulation takes as an input (a configured delay, a rate it replays). An
input cannot agree with itself, so it is shown as "input", never counted as
an agreement, and :func:`worst` ignores it. Build one with
:func:`as_input`::

    v = as_input(REFERENCES["conversion_syn"], "3.0 ms (configured)",
                 how="the proxy's SYN conversion delay is set to the study's")
    v.label()     # "**input**"
    v.sentence()  # "... study ≈ 3 ms, latlab 3.0 ms (configured): an input
                  #  of latlab's simulation, not a result; the proxy's ..."

Rules never phrase the outcome ("agrees within ±5 %"): they state the
tolerance ("tolerance ±5 %"), so a rule beside a "differs" verdict does not
read as an agreement.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

Outcome = Literal["agrees", "partly", "differs", "input"]
#: Every outcome; the first three judge a measured number, "input" marks a study figure fed to the simulation.
OUTCOMES: tuple[Outcome, ...] = ("agrees", "partly", "differs", "input")
#: The outcomes of a judgement (an input is not judged).
JUDGED: tuple[Outcome, ...] = ("agrees", "partly", "differs")
#: The rule printed for an input.
INPUT_RULE = "an input of the simulation: not judged"


@dataclass(frozen=True)
class Paper:
    """The publication a study reproduces."""

    authors: str
    title: str
    venue: str

    def citation(self) -> str:
        return f"{self.authors}, *{self.title}*, {self.venue}"


@dataclass(frozen=True)
class Reference:
    """One reference point of a study: what it states, and the number behind the statement if it gives one.

    ``quantity`` names what is compared ("per-flow goodput at 5 KB, unpaced");
    ``relation`` and ``value`` give the study's figure ("≈" 82, ">" 15, or
    "" with a qualitative ``words`` such as "about a third"). ``fmt`` formats
    ``value`` (with ``scale`` applied first, e.g. 100 for a fraction printed
    in %).
    """

    key: str
    quantity: str
    value: float | None = None
    unit: str = ""
    relation: str = "≈"
    words: str = ""
    fmt: str = "{:g}"
    scale: float = 1.0

    def number(self) -> str:
        """The study's value as printed ("82 Kbps"); empty when the study gives none."""
        if self.value is None:
            return ""
        sep = "" if self.unit in ("", "×") else " "
        return f"{self.fmt.format(self.value * self.scale)}{sep}{self.unit}"

    def text(self) -> str:
        """The study's figure as the report prints it: "≈ 82 Kbps", "> 15 %", or its words ("about a third")."""
        if self.words or self.value is None:
            return self.words
        return f"{self.relation} {self.number()}".strip()


@dataclass(frozen=True)
class Verdict:
    """A reference point judged against latlab's numbers.

    ``measured`` is latlab's figure as printed; ``rule`` says in words how the
    outcome was decided (the tolerance); ``why`` explains a difference.
    """

    reference: Reference
    measured: str
    outcome: Outcome
    rule: str
    why: str = ""

    def __post_init__(self) -> None:
        if self.outcome not in OUTCOMES:
            raise ValueError(f"outcome: expected one of {OUTCOMES}, got {self.outcome!r}")

    @property
    def agrees(self) -> bool:
        return self.outcome == "agrees"

    @property
    def is_input(self) -> bool:
        return self.outcome == "input"

    def phrase(self) -> str:
        """A clause to end a sentence of measured numbers with: "as in the study", "unlike the study"."""
        return {
            "agrees": "as in the study",
            "partly": "only partly as in the study",
            "differs": "unlike the study",
            "input": "the study's figure taken as an input",
        }[self.outcome]

    def label(self) -> str:
        """The outcome as a table cell."""
        return f"**{self.outcome}**"

    def brief(self) -> str:
        """A short comparison for prose that already gives latlab's numbers: the outcome and the study's figure."""
        if self.is_input:
            out = f"{self.reference.quantity}: the study's figure ({self.reference.text()}) is an input of the simulation"
            return out[:1].upper() + out[1:] + "."
        out = f"{self.reference.quantity}: {self.phrase()} ({self.reference.text()})"
        return out[:1].upper() + out[1:] + "."

    def sentence(self) -> str:
        """The full comparison: the study's figure, latlab's, the rule and the outcome (and why, if it differs)."""
        study = self.reference.text()
        if self.is_input:
            out = (
                f"{self.reference.quantity}: study {study}, latlab {self.measured}: an input of latlab's "
                "simulation, not a result"
            )
            if self.why:
                out += f"; {self.why}"
            return out[:1].upper() + out[1:] + "."
        verb = {
            "agrees": "agrees with the study",
            "partly": "agrees only in part with the study",
            "differs": "differs from the study",
        }[self.outcome]
        out = f"{self.reference.quantity}: study {study}, latlab {self.measured} ({self.rule}): latlab {verb}"
        if self.why and self.outcome != "agrees":
            out += f"; {self.why}"
        return out[:1].upper() + out[1:] + "."


def as_input(reference: Reference, measured: str, how: str = "") -> Verdict:
    """A study figure that latlab's simulation takes as an input: shown as "input", never as an agreement.

    ``measured`` is what latlab used or measured back (e.g. "3.0 ms (configured)"); ``how`` says how the
    figure enters the simulation.
    """
    return Verdict(reference, measured, "input", INPUT_RULE, how)


def within(
    measured: float, ref: Reference, agree_rel: float, partly_rel: float | None = None
) -> tuple[Outcome, str]:
    """Outcome of a number against ``ref.value``: agrees within ±agree_rel, partly within ±partly_rel."""
    assert ref.value is not None
    if not math.isfinite(measured):
        return "differs", "no measurement"
    dev = measured / ref.value - 1
    rule = f"{100 * dev:+.0f} %; tolerance ±{100 * agree_rel:g} %"
    if partly_rel is not None:
        rule += f" (partly: ±{100 * partly_rel:g} %)"
    if abs(dev) <= agree_rel:
        return "agrees", rule
    if partly_rel is not None and abs(dev) <= partly_rel:
        return "partly", rule
    return "differs", rule


def count_outcomes(verdicts: Iterable[Verdict]) -> str:
    """ "5 agree, 2 partly, 1 differs" over a study's verdicts (", 2 inputs" when some figures are inputs)."""
    vs = list(verdicts)
    n = {o: sum(v.outcome == o for v in vs) for o in OUTCOMES}
    out = f"{n['agrees']} agree, {n['partly']} partly, {n['differs']} differ" + (
        "s" if n["differs"] == 1 else ""
    )
    if n["input"]:
        out += f", {n['input']} input" + ("s" if n["input"] != 1 else "") + " (not judged)"
    return out


def summary(verdicts: Iterable[Verdict]) -> str:
    """A report's opening: the outcome count, then one table row per verdict (reference, study, latlab, rule, verdict)."""
    from latlab.studies._markdown import table

    vs = list(verdicts)
    return f"**Verdicts**: {count_outcomes(vs)}.\n\n" + table(
        ["reference", "study", "latlab", "rule", "verdict"],
        [[v.reference.quantity, v.reference.text(), v.measured, v.rule, v.label()] for v in vs],
    )


def worst(verdicts: Iterable[Verdict]) -> Outcome:
    """The least favourable judged outcome among ``verdicts`` (agrees when there are none; inputs are ignored)."""
    order = {o: i for i, o in enumerate(JUDGED)}
    return max(
        (v.outcome for v in verdicts if not v.is_input), key=order.__getitem__, default="agrees"
    )
