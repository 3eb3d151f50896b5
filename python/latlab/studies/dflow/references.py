"""The DFlow study's reference points: the paper, and its qualitative statements as data.

The draft states its results in words, not numbers; where a statement has a
number behind it (the 50 ms target, "a third") the number is here, and the
rules in :mod:`latlab.studies.dflow.verdicts` judge latlab against it.
"""

from __future__ import annotations

from latlab.studies._verdict import Paper, Reference
from latlab.studies.dflow.cases import CASES, TARGET_MS

PAPER = Paper(
    authors="P. O'Hanlon and K. Carlberg",
    title="DFlow: Low latency congestion control",
    venue="IETF Internet-Draft draft-ohanlon-rmcat-dflow (RMCAT), with ns-2 simulations",
)

_N_DFLOW, _N_TFRC = CASES["dflow"].dflows, CASES["tfrc"].tfrcs

REFERENCES: dict[str, Reference] = {
    r.key: r
    for r in (
        Reference(
            "dflow_delay",
            f"{_N_DFLOW} DFlow: queueing delay",
            TARGET_MS,
            "ms",
            relation="mostly below the target of",
        ),
        Reference("dflow_losses", f"{_N_DFLOW} DFlow: losses", words="very few"),
        Reference("dflow_fairness", f"{_N_DFLOW} DFlow: sharing among DFlows", words="fair"),
        Reference("tfrc_delay", f"{_N_TFRC} TFRC: queueing delay", words="at the full-queue level"),
        Reference(
            "tfrc_losses", f"{_N_TFRC} TFRC: losses", words=f"far more than {_N_DFLOW} DFlow"
        ),
        Reference(
            "tfrc_throughput",
            f"{_N_TFRC} TFRC: throughput",
            words=f"slightly higher than {_N_DFLOW} DFlow",
        ),
        Reference(
            "ledbat_share",
            "DFlow's rate against LEDBAT",
            1 / 3,
            relation="≈",
            words="about a third of LEDBAT's",
        ),
        Reference(
            "vegas_share", "DFlow's rate against Vegas", 1.0, relation="≈", words="close to Vegas's"
        ),
        Reference("newreno_share", "DFlow's rate against NewReno", words="near zero"),
    )
}
