"""The efficiency study's reference points: the paper and its findings as data.

The study's figures are plots; it states its findings in words (the
abstract: 4G's better latency and throughput nevertheless give lower
short-flow efficiency than 3.5G; with one background flow the 3.5G handshake
RTT shifts right and widens while 4G's barely changes). Its measured inputs
(Table I) are the profile files in ``latlab/data/profiles/``.
"""

from __future__ import annotations

from latlab.studies._verdict import Paper, Reference

PAPER = Paper(
    authors="J. Garcia, S. Alfredsson, A. Brunstrom",
    title="A Measurement Based Study of TCP Protocol Efficiency in Cellular Networks",
    venue="WiOpt 2014",
)

REFERENCES: dict[str, Reference] = {
    r.key: r
    for r in (
        Reference(
            "single_flow_order",
            "Short-flow efficiency, single flow, 4G against 3.5G",
            words="lower for 4G",
        ),
        Reference(
            "loaded_rtt_35g",
            "3.5G handshake RTT with one background flow",
            words="shifts right and widens",
        ),
        Reference(
            "loaded_rtt_4g", "4G handshake RTT with one background flow", words="barely changes"
        ),
    )
}
