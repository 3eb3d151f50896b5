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


# ----- experiments B–I: the study's findings from its figures -------------------------------------------------

#: C: "a per-flow goodput of 90 Kbps needs about 20 KB unpaced, 10 KB host-paced, just under 5 KB edge-paced".
C_TARGET_KBPS = 90.0
#: G and I read the study's curves at 6 KB, between the grid's 5 and 10 KB.
READ_AT_KB = 6.0
#: G: the aggregate throughput edge pacing reaches at about 4 KB with RED (host pacing needs about 10 KB).
G_TARGET_MBPS = 99.0


def _ref(
    key: str, quantity: str, value: float | None = None, unit: str = "", **kw: object
) -> Reference:
    return Reference(key, quantity, value, unit, **kw)  # type: ignore[arg-type]


FINDINGS: dict[str, Reference] = {
    r.key: r
    for r in (
        _ref(
            "B_host_100", "B: host vs edge pacing, 100 flows, 10–30 KB", words="host pacing ahead"
        ),
        _ref(
            "B_edge_1000",
            "B: edge vs host pacing, 1000 flows, every buffer",
            words="edge pacing ahead",
        ),
        _ref("C_tput_unpaced", "C: aggregate core throughput at 5 KB, unpaced", 77.0, "Mbps"),
        _ref("C_tput_host", "C: aggregate core throughput at 5 KB, host-paced", 90.0, "Mbps"),
        _ref("C_tput_edge", "C: aggregate core throughput at 5 KB, edge-paced", 98.0, "Mbps"),
        _ref("C_need_unpaced", "C: buffer for 90 Kbps per flow, unpaced", 20.0, "KB"),
        _ref("C_need_host", "C: buffer for 90 Kbps per flow, host-paced", 10.0, "KB"),
        _ref("C_need_edge", "C: buffer for 90 Kbps per flow, edge-paced", 5.0, "KB", relation="<"),
        _ref("D_edge", "D: per-user goodput at 10 KB, edge-paced", 155.0, "Kbps"),
        _ref("D_host", "D: per-user goodput at 10 KB, host-paced", 133.0, "Kbps"),
        _ref("D_edge_over_host", "D: edge pacing's lead over host pacing at 10 KB", 17.0, "%"),
        _ref(
            "F_little",
            "F: pacing's effect on aggregate goodput, core not the bottleneck",
            words="little",
        ),
        _ref("F_zero_loss", "F: core buffer needed for zero core loss", 10.0, "KB", relation="≤"),
        _ref("G_edge_99", "G: buffer at which edge pacing reaches 99 Mbps (RED)", 4.0, "KB"),
        _ref("G_host_99", "G: buffer at which host pacing reaches 99 Mbps (RED)", 10.0, "KB"),
        _ref("G_unpaced", "G: per-flow goodput at 6 KB, unpaced (RED)", 89.0, "Kbps"),
        _ref("G_host", "G: per-flow goodput at 6 KB, host-paced (RED)", 94.0, "Kbps"),
        _ref("G_edge", "G: per-flow goodput at 6 KB, edge-paced (RED)", 97.0, "Kbps"),
        _ref("H_5KB", "H: TCP goodput against d at 5 KB", words="rises, saturating near 10 ms"),
        _ref("H_50KB", "H: TCP goodput against d at 50 KB", words="falls as d grows"),
        _ref("H_1ms", "H: d = 1 ms at small buffers (≤ 5 KB)", words="ineffective (as unpaced)"),
        _ref(
            "H_long",
            "H: d = 100–200 ms at larger buffers (≥ 10 KB)",
            words="hurts (below d = 10 ms)",
        ),
        _ref("I_edge", "I: per-flow goodput at 6 KB, edge-paced (Poisson UDP)", 91.0, "Kbps"),
        _ref("I_host", "I: per-flow goodput at 6 KB, host-paced (Poisson UDP)", 85.0, "Kbps"),
        _ref("I_unpaced", "I: per-flow goodput at 6 KB, unpaced (Poisson UDP)", 82.0, "Kbps"),
        _ref(
            "I_saturation",
            "I: buffer at which TCP saturates (Poisson UDP)",
            words="edge ≈ 6 KB, host ≈ 10 KB, unpaced > 20 KB",
        ),
        _ref(
            "I_udp_loss",
            "I: UDP loss, edge-paced against unpaced at 5–30 KB (Poisson)",
            words="lower by orders of magnitude",
        ),
        _ref("I_udp_shape", "I: UDP loss against the buffer (Poisson)", words="not monotonic"),
        _ref(
            "I_lrd_peak",
            "I: edge-paced per-flow goodput against the buffer (fBm UDP)",
            words="peaks near 6 KB",
        ),
        _ref(
            "I_lrd_udp",
            "I: UDP loss, edge-paced against unpaced (fBm)",
            words="lower by up to an order of magnitude",
        ),
    )
}
