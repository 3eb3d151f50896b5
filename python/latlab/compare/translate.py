"""From a scheme to the scenarios that measure it: alone on the path, and against CUBIC.

A scheme's run alone has one flow group, ``scheme``, of ``flows`` flows
(starting in the first second); its run against CUBIC has one ``scheme``
flow and one ``cubic`` flow (the competitor: CUBIC with the path's TCP
settings, a fixed receive window, no ECN), both starting at 0 s through the
same bottleneck queue. The path's own flows are
dropped; its topology, TCP defaults and sampling are kept.

What each scheme key becomes (the scenario keys of crates/scenario):

* ``cc``, ``cc_params``: the group's ``cc`` and ``cc_params``;
* ``rwnd``, ``rwnd_params``: the group's ``tcp.rwnd_controller`` and
  ``tcp.rwnd_params`` (``fixed`` sets nothing: the path's receive window);
* ``pacing``: the group's ``tcp.pacing``;
* ``queue``: the table at the path's ``bottleneck`` (e.g. ``topology.queue``
  of a cellular path, every user's queue); a queue that names no
  ``limit_bytes``/``limit_packets`` keeps the path's buffer size, so schemes
  differ in discipline, not in buffer;
* ``edge_queue``: the table at each of the path's ``edge`` paths (e.g. the
  edge pacer at ``topology.edge_queue`` of an edge-dumbbell), for the scheme's
  run alone and its run against CUBIC alike;
* ``ecn = true``: ``tcp.ecn = true`` on the scheme's group, and ``ecn = true``
  in the bottleneck queue when it is one that marks (RED, CoDel, PIE,
  FQ-CoDel; RFC 3168 §5), whether the scheme set it or the path did.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from latlab import dotpath
from latlab.compare.spec import CompareError, CompareSpec, Scheme
from latlab.scenario import Scenario

ALONE = "alone"
VS_CUBIC = "vs_cubic"
ROLES = (ALONE, VS_CUBIC)
SCHEME_GROUP = "scheme"
COMPETITOR_GROUP = "cubic"
#: Queue kinds that mark ECT packets instead of dropping them when ``ecn = true``.
ECN_QUEUES = frozenset({"red", "codel", "pie", "fq_codel"})
#: A scheme's flows alone start at a uniform random time in the first second,
#: so that several of them do not start in lockstep.
START_S = {"uniform": [0.0, 1.0]}
#: Against CUBIC both flows start together: over a large buffer the flow that
#: starts first can hold most of it for the whole run, so a random order
#: would measure the order rather than the scheme.
COMPETITION_START_S = 0.0
LIMIT_KEYS = ("limit_bytes", "limit_packets")


def bottleneck_queue(scheme: Scheme, path_queue: Any) -> dict[str, Any] | None:
    """The queue table a scheme puts at the bottleneck (None: leave the path's as it is)."""
    if scheme.queue is None:
        queue = copy.deepcopy(path_queue) if isinstance(path_queue, dict) else None
    else:
        queue = copy.deepcopy(scheme.queue)
        if isinstance(path_queue, dict) and not any(k in queue for k in LIMIT_KEYS):
            queue.update({k: path_queue[k] for k in LIMIT_KEYS if k in path_queue})
    if queue is not None and scheme.ecn and queue.get("kind") in ECN_QUEUES:
        queue["ecn"] = True
    return queue


def tcp_table(scheme: Scheme) -> dict[str, Any]:
    """The scheme group's ``tcp`` overrides."""
    tcp: dict[str, Any] = {}
    if scheme.rwnd != "fixed":
        tcp["rwnd_controller"] = scheme.rwnd
    if scheme.rwnd_params:
        tcp["rwnd_params"] = dict(scheme.rwnd_params)
    if scheme.pacing is not None:
        tcp["pacing"] = scheme.pacing
    if scheme.ecn:
        tcp["ecn"] = True
    return tcp


def scheme_group(scheme: Scheme, spec: CompareSpec, count: int, start_s: Any) -> dict[str, Any]:
    group: dict[str, Any] = {
        "name": SCHEME_GROUP,
        "count": count,
        "src": spec.path.src,
        "dst": spec.path.dst,
        "cc": scheme.cc,
        "start_s": copy.deepcopy(start_s),
    }
    if scheme.cc_params:
        group["cc_params"] = dict(scheme.cc_params)
    tcp = tcp_table(scheme)
    if tcp:
        group["tcp"] = tcp
    return group


def competitor_group(spec: CompareSpec, first_index: int) -> dict[str, Any]:
    return {
        "name": COMPETITOR_GROUP,
        "count": 1,
        "first_index": first_index,
        "src": spec.path.src,
        "dst": spec.path.dst,
        "cc": "cubic",
        "start_s": COMPETITION_START_S,
    }


def scenario_data(spec: CompareSpec, scheme: Scheme, seed: int, role: str) -> dict[str, Any]:
    """The scenario (plain data) of one run: ``role`` is "alone" or "vs_cubic"."""
    if role not in ROLES:
        raise ValueError(f"role must be one of {', '.join(ROLES)}, got {role!r}")
    data = copy.deepcopy(spec.path.scenario)
    data.pop("flows", None)
    outputs = data.pop("outputs", None)
    if isinstance(outputs, dict) and "max_sampled_flows" in outputs:
        data["outputs"] = {"max_sampled_flows": outputs["max_sampled_flows"]}
    data.update(
        name=f"{spec.name}/{scheme.name}/{role}",
        seed=seed,
        duration_s=spec.duration_s,
        measure_from_s=spec.measure_from_s,
    )
    queue = bottleneck_queue(scheme, dotpath.get(data, spec.path.bottleneck, None))
    if queue is not None:
        dotpath.set_value(data, spec.path.bottleneck, queue)
        _drop_user_queues(data, spec.path.bottleneck)
    if scheme.edge_queue is not None:
        for where in spec.path.edge:
            dotpath.set_value(data, where, copy.deepcopy(scheme.edge_queue))
    if role == ALONE:
        data["flows"] = [scheme_group(scheme, spec, spec.flows, START_S)]
    else:
        data["flows"] = [
            scheme_group(scheme, spec, 1, COMPETITION_START_S),
            competitor_group(spec, first_index=1),
        ]
    return data


def _drop_user_queues(data: dict[str, Any], bottleneck: str) -> None:
    """A cellular path's users may set their own queue; the scheme's is every user's."""
    topology = data.get("topology", {})
    if bottleneck == "topology.queue" and topology.get("kind") == "cellular":
        for user in topology.get("user", []):
            if isinstance(user, dict):
                user.pop("queue", None)


def scenario(spec: CompareSpec, scheme: Scheme, seed: int, role: str) -> Scenario:
    """One run's Scenario; its source is the path's file, so relative trace paths resolve."""
    return Scenario.from_dict(scenario_data(spec, scheme, seed, role), source=spec.path.source)


# ----- checking ----------------------------------------------------------------


# Where a scenario key of a scheme's run came from, longest prefix first.
def _origins(spec: CompareSpec) -> list[tuple[str, str]]:
    edges = [(dotpath_display(e), "edge_queue") for e in spec.path.edge]
    return edges + [
        ("flows[0].tcp.rwnd_controller", "rwnd"),
        ("flows[0].tcp.rwnd_params", "rwnd_params"),
        ("flows[0].tcp.pacing", "pacing"),
        ("flows[0].tcp.ecn", "ecn"),
        ("flows[0].cc_params", "cc_params"),
        ("flows[0].cc", "cc"),
        (dotpath_display(spec.path.bottleneck) + ".ecn", "ecn"),
        (dotpath_display(spec.path.bottleneck), "queue"),
    ]


def dotpath_display(path: str) -> str:
    """A dotted path as the core writes it (``topology.links[0].queue``)."""
    keys = dotpath.parse(path)
    parts = [f"[{k}]" if isinstance(k, int) or k.isdigit() else k for k in keys]
    return ".".join(parts).replace(".[", "[")


def check(spec: CompareSpec) -> None:
    """Validate every scheme's two scenarios with the core, before anything runs.

    Raises CompareError naming the scheme key a problem comes from (or the
    path's, when it is not the scheme's doing).
    """
    from latlab.errors import ScenarioError

    seed = spec.seeds[0]
    for i, scheme in enumerate(spec.schemes):
        for role in ROLES:
            sc = scenario(spec, scheme, seed, role)
            try:
                sc.validate()
            except ScenarioError as e:
                raise CompareError(_blame(spec, i, role, str(e), sc.core_source)) from None


def _blame(spec: CompareSpec, i: int, role: str, message: str, source: str) -> str:
    # A line number would point into the generated text, not the user's file.
    what = re.sub(r" \(line \d+\)", "", message.removeprefix(f"{source}: "))
    run = "alone" if role == ALONE else "against CUBIC"
    for prefix, key in _origins(spec):
        if what.startswith(prefix):
            rest = what[len(prefix) :].lstrip(".")
            if key == "ecn" and "unknown field `ecn`" in rest:
                rest += "; this build of the simulator has no ECN keys yet"
            return (
                f"{spec.source}: schemes[{i}].{key}: {rest.lstrip(': ')} "
                f"(scheme {spec.schemes[i].name!r}: in its run {run}, the scenario key {prefix})"
            )
    return (
        f"{spec.source}: scheme {spec.schemes[i].name!r} on the path from {spec.path.source}: "
        f"its run {run} is not a valid scenario: {what}"
    )
