"""The RTAC study's reference points: the paper, and its figures and statements as data.

Single-flow throughput (Mbit/s) and average RTT (ms) per receiver and path
are numbers; the auto-tuning sweep and the competition results are stated
as ranges and words, judged by the rules in
:mod:`latlab.studies.rtac.verdicts`.
"""

from __future__ import annotations

from latlab.studies._verdict import Paper, Reference
from latlab.studies.rtac.cases import PATHS, RECEIVERS, STUDY_SENDERS

PAPER = Paper(
    authors="S. Im, C. Joo, T. Lee and S. Bahk",
    title="Receiver-side TCP countermeasure to bufferbloat in wireless access networks (RTAC)",
    venue="with DRWA (Jiang et al., ACM IMC 2012) and Linux auto-tuning as baselines; "
    "measurements on LTE and 802.11n phones",
)

#: The study's single-flow figures: (throughput Mbit/s, average RTT ms) per path and receiver.
SINGLE: dict[str, dict[str, tuple[float, float]]] = {
    "lte": {"autotuning": (55.0, 223.0), "drwa": (52.0, 89.0), "rtac": (51.0, 71.0)},
    "wifi": {"autotuning": (33.0, 148.0), "drwa": (29.0, 23.0), "rtac": (30.0, 27.0)},
}
#: In competition RTAC holds about this fraction of auto-tuning's throughput.
RTAC_SHARE = 0.95
#: The auto-tuning sweep's best tcp_rmem_max range (KB): LTE 400–800 KB; Wi-Fi "well under 200 KB".
BEST_RMEM_KB = {"lte": (400.0, 800.0), "wifi": (0.0, 200.0)}

#: Sender variants, three clients (one of each receiver): on Wi-Fi (direct competition) RTAC keeps more than this
#: share of Auto-tuning's throughput with every sender but Vegas, and DRWA keeps this range.
SENDER_RTAC_WIFI = 0.92
SENDER_DRWA_WIFI = (0.15, 0.37)
#: The sender the study singles out: low throughput on LTE whatever the receiver (its base-RTT estimate), less loss
#: on Wi-Fi; in the three-client LTE case all receivers are low with it.
VEGAS = "vegas"

_PATH_WORD = {"lte": "LTE", "wifi": "Wi-Fi"}
#: The competition settings judged: (experiment, path) → words.
COMPETITION = {
    ("pair", "wifi"): "Wi-Fi direct competition",
    ("pair", "lte"): "LTE indirect competition",
    ("three", "wifi"): "Wi-Fi, three clients",
    ("three", "lte"): "LTE, three clients",
}


def _refs() -> list[Reference]:
    out: list[Reference] = []
    for path in PATHS:
        for receiver, (mbps, ms) in SINGLE[path].items():
            who = f"{_PATH_WORD[path]} single flow, {RECEIVERS[receiver]}"
            out.append(
                Reference(f"single_{path}_{receiver}_tput", f"{who}: throughput", mbps, "Mbps")
            )
            out.append(Reference(f"single_{path}_{receiver}_rtt", f"{who}: RTT", ms, "ms"))
    lo, hi = BEST_RMEM_KB["lte"]
    out.append(
        Reference("rmem_lte", "LTE auto-tuning: best tcp_rmem_max", words=f"{lo:g}–{hi:g} KB")
    )
    out.append(
        Reference(
            "rmem_wifi",
            "Wi-Fi auto-tuning: best tcp_rmem_max",
            words=f"well under {BEST_RMEM_KB['wifi'][1]:g} KB",
        )
    )
    for path in PATHS:
        out.append(
            Reference(
                f"rmem_tradeoff_{path}",
                f"{_PATH_WORD[path]} auto-tuning against tcp_rmem_max",
                words="too small underutilises, too large bloats",
            )
        )
    for (experiment, path), words in COMPETITION.items():
        out.append(
            Reference(
                f"{experiment}_{path}_rtac",
                f"{words}: RTAC's throughput / Auto-tuning's",
                RTAC_SHARE,
                "%",
                relation="≈",
                fmt="{:.0f}",
                scale=100,
            )
        )
        out.append(
            Reference(
                f"{experiment}_{path}_drwa", f"{words}: DRWA beside Auto-tuning", words="starves"
            )
        )
    out += _sender_refs()
    return out


def _sender_refs() -> list[Reference]:
    """The sender-variant findings: three clients on each path per sender, and Vegas alone."""
    out: list[Reference] = []
    lo, hi = SENDER_DRWA_WIFI
    for sender, name in STUDY_SENDERS.items():
        if sender == VEGAS:
            continue
        out += [
            Reference(
                f"senders_wifi_rtac_{sender}",
                f"Wi-Fi, three clients, {name} sender: RTAC's throughput / Auto-tuning's",
                SENDER_RTAC_WIFI,
                "%",
                relation=">",
                fmt="{:.0f}",
                scale=100,
            ),
            Reference(
                f"senders_wifi_drwa_{sender}",
                f"Wi-Fi, three clients, {name} sender: DRWA's throughput / Auto-tuning's",
                words=f"{100 * lo:.0f}–{100 * hi:.0f} %",
            ),
            Reference(
                f"senders_lte_rtac_{sender}",
                f"LTE, three clients, {name} sender: RTAC's throughput / Auto-tuning's",
                words="similar",
            ),
            Reference(
                f"senders_lte_drwa_{sender}",
                f"LTE, three clients, {name} sender: DRWA's throughput / Auto-tuning's",
                words="much less",
            ),
        ]
    vegas = STUDY_SENDERS[VEGAS]
    out += [
        Reference(
            "senders_lte_vegas",
            f"LTE, three clients, {vegas} sender: every receiver's throughput",
            words="low for all receivers",
        ),
        Reference(
            "senders_single_lte_vegas",
            f"LTE single flow, {vegas} sender: throughput against CUBIC's",
            words="low whatever the receiver",
        ),
        Reference(
            "senders_single_wifi_vegas",
            f"Wi-Fi single flow, {vegas} sender: shortfall against CUBIC, beside LTE's",
            words="smaller than on LTE",
        ),
    ]
    return out


REFERENCES: dict[str, Reference] = {r.key: r for r in _refs()}
