"""latlab: a laboratory for transport-layer latency.

A deterministic packet-level simulator (Rust core, ``latlab._core``) with a
Python front door::

    import latlab
    sc = latlab.Scenario.from_toml("scenarios/red-custom.toml")
    res = latlab.run(sc.with_(seed=7), progress=True)
    res.flows[["flow_id", "cc", "goodput_bps"]]

Attributes are imported lazily (PEP 562) so that ``import latlab`` and the
``latlab`` command start fast, and so that ``latlab.bench.measure`` can run a
benchmark without pandas or matplotlib inflating its peak memory.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from latlab.errors import ConservationWarning, CoreNotBuiltError, ScenarioError, SimulationError
    from latlab.results import Results
    from latlab.scenario import Scenario
    from latlab.simulate import run

__all__ = [
    "Scenario",
    "Results",
    "run",
    "plot",
    "compare",
    "ScenarioError",
    "SimulationError",
    "CoreNotBuiltError",
    "ConservationWarning",
    "__version__",
]

# attribute -> (module, name in module); name None means the module itself.
_LAZY: dict[str, tuple[str, str | None]] = {
    "Scenario": ("latlab.scenario", "Scenario"),
    "Results": ("latlab.results", "Results"),
    "run": ("latlab.simulate", "run"),
    "plot": ("latlab.plot", None),
    "compare": ("latlab.compare", None),
    "ScenarioError": ("latlab.errors", "ScenarioError"),
    "SimulationError": ("latlab.errors", "SimulationError"),
    "CoreNotBuiltError": ("latlab.errors", "CoreNotBuiltError"),
    "ConservationWarning": ("latlab.errors", "ConservationWarning"),
    "__version__": ("latlab._version", "__version__"),
}


def __getattr__(name: str) -> Any:
    try:
        module_name, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'latlab' has no attribute {name!r}") from None
    module = importlib.import_module(module_name)
    value = module if attr is None else getattr(module, attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
