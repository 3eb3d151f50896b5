"""The pacing study's reference points (experiment A: 1000 flows, core buffer swept), as data.

Every number the report prints as the study's comes from here: the headline
per-flow goodputs at 5 KB, edge pacing's lead over host pacing there, the
loss above 15 % at 2–3 KB (where pacing does not help), and the near-full
utilisation above ~20 KB (where pacing cannot help).
"""

from __future__ import annotations

from latlab.studies._verdict import Paper, Reference

PAPER = Paper(
    authors="V. Sivaraman, H. ElGindy, D. Moreland, D. Ostry",
    title="Packet Pacing in Small Buffer Optical Packet Switched Networks",
    venue="IEEE/ACM Transactions on Networking 17(4), 2009 (ns-2 simulations)",
)

#: The study's headline buffer (A at 5 KB), also re-run with other seeds for its spread.
HEADLINE_BUFFER_KB = 5.0
#: "At 2–3 KB loss exceeds 15 % and pacing does not help."
SMALL_BUFFERS_KB = (2.0, 3.0)
#: "Above ~20 KB the link is near 100 % utilised and pacing cannot help."
LARGE_FROM_KB = 20.0

_B = f"{HEADLINE_BUFFER_KB:g} KB"
_SMALL = f"{SMALL_BUFFERS_KB[0]:g}–{SMALL_BUFFERS_KB[-1]:g} KB"

REFERENCES: dict[str, Reference] = {
    r.key: r
    for r in (
        Reference("goodput_unpaced", f"per-flow goodput at {_B}, unpaced", 82.0, "Kbps"),
        Reference("goodput_host", f"per-flow goodput at {_B}, host-paced", 82.0, "Kbps"),
        Reference("goodput_edge", f"per-flow goodput at {_B}, edge-paced", 93.0, "Kbps"),
        Reference(
            "edge_over_host",
            f"edge pacing's gain over host pacing at {_B}",
            13.0,
            "%",
            relation=">",
        ),
        Reference(
            "host_over_unpaced", f"host pacing's gain over unpaced at {_B}", 0.0, "%", relation="≈"
        ),
        Reference("loss_small", f"core loss at {_SMALL}, every mode", 15.0, "%", relation=">"),
        Reference(
            "pacing_small",
            f"pacing's gain over unpaced at {_SMALL}",
            0.0,
            "%",
            relation="≈",
            words="none (pacing does not help)",
        ),
        Reference(
            "util_large",
            f"core utilisation at ≥ {LARGE_FROM_KB:g} KB, every mode",
            100.0,
            "%",
            relation="near",
        ),
        Reference(
            "pacing_large",
            f"pacing's gain over unpaced at ≥ {LARGE_FROM_KB:g} KB",
            0.0,
            "%",
            relation="≈",
            words="none (pacing cannot help)",
        ),
    )
}

#: The per-flow goodput reference of each mode.
GOODPUT_KEY = {
    "unpaced": "goodput_unpaced",
    "host-paced": "goodput_host",
    "edge-paced": "goodput_edge",
}
