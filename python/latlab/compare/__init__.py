"""``latlab compare``: countermeasures side by side on one path.

A scheme file (TOML, see :mod:`latlab.compare.spec`) names a path (a
scenario file, or inline topology keys) and a list of schemes; a scheme is a
congestion controller, a receiver window control, a bottleneck queue, host
pacing and ECN. Every scheme runs at every seed twice: alone on the path,
and one flow of it against one CUBIC flow through the same bottleneck (for
its share). The result is a table (goodput, RTT percentiles, drops, share
against CUBIC), the throughput–delay plane and the RTT distributions::

    import latlab.compare

    table = latlab.compare.run("scenarios/compare/lte.toml", "out/compare", jobs=2)
    table[["scheme", "goodput_mean_bps", "rtt_p95_ms", "share_mean"]]

The pieces: :mod:`~latlab.compare.spec` (the file, parsed once),
:mod:`~latlab.compare.translate` (a scheme's scenarios),
:mod:`~latlab.compare.metrics` (the numbers, from the runs' tables),
:mod:`~latlab.compare.figures` and :mod:`~latlab.compare.runner`.
"""

from __future__ import annotations

from latlab.compare.runner import CompareFailed, run
from latlab.compare.spec import CompareError, CompareSpec, PathSpec, Scheme, from_dict, load

__all__ = [
    "run",
    "load",
    "from_dict",
    "CompareSpec",
    "PathSpec",
    "Scheme",
    "CompareError",
    "CompareFailed",
]
