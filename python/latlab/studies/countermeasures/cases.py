"""The study's paths and schemes (``study.toml``), as one :class:`~latlab.compare.CompareSpec` per path.

``study.toml`` holds the data: each ``[paths.NAME]`` table is a compare scheme
file without its schemes, and ``[[schemes]]`` lists every countermeasure once
(``paths`` limits one to some paths; a path's ``scheme_params`` adds keys to a
named scheme there). :func:`specs` joins them and hands each path's file to
:func:`latlab.compare.from_dict`, so the study runs schemes exactly as
``latlab compare`` does.

A scheme filter (``--schemes``) is a comma-separated list of shell patterns
over scheme names: a pattern picks the schemes it matches, a pattern with a
leading ``~`` leaves them out (``~*+ecn`` runs every scheme but the ECN ones).
"""

from __future__ import annotations

import copy
import fnmatch
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from latlab.compare import CompareError, CompareSpec, from_dict

STUDY_TOML = Path(__file__).with_name("study.toml")
BASELINE = "cubic+droptail"
#: Keys of a study scheme that are the study's, not compare's.
STUDY_SCHEME_KEYS = ("paths", "role")
#: Keys of a path table that are the study's, not compare's.
STUDY_PATH_KEYS = ("title", "about", "scheme_params", "bottleneck_link")
#: What each role of a scheme is, for the report.
ROLES = {
    "baseline": "the baseline",
    "receiver": "receiver window control",
    "sender": "sender congestion control",
    "queue": "queue discipline at the bottleneck",
    "edge": "the edge pacer",
}


class StudyError(CompareError):
    """A bad study option (e.g. a scheme filter that selects nothing): a usage error, exit code 2."""


@dataclass(frozen=True)
class PathCase:
    """One path of the study: its compare spec (with the schemes that run there) and its words."""

    name: str
    title: str
    about: str
    spec: CompareSpec
    roles: dict[str, str]
    #: The name of the bottleneck link ("from->to") whose queue the traces are read from.
    bottleneck_link: str


def load_study(path: Path = STUDY_TOML) -> dict[str, Any]:
    return tomllib.loads(path.read_text(encoding="utf-8"))


def parse_filter(text: str | None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``"a*,~*+ecn"`` -> (("a*",), ("*+ecn",)); None or "" picks every scheme."""
    if not text:
        return (), ()
    parts = [p.strip() for p in text.split(",")]
    if any(not p or p == "~" for p in parts):
        raise StudyError(
            f"--schemes: expected comma-separated scheme name patterns (a leading ~ leaves "
            f"schemes out, e.g. '~*+ecn'), got {text!r}"
        )
    return (
        tuple(p for p in parts if not p.startswith("~")),
        tuple(p[1:] for p in parts if p.startswith("~")),
    )


def selected(name: str, keep: Sequence[str], drop: Sequence[str]) -> bool:
    if keep and not any(fnmatch.fnmatchcase(name, p) for p in keep):
        return False
    return not any(fnmatch.fnmatchcase(name, p) for p in drop)


def specs(schemes: str | None = None, source: Path | None = None) -> list[PathCase]:
    """One PathCase per path of ``source`` (default: the study's ``study.toml``), with the
    schemes the filter keeps (StudyError if it keeps none)."""
    source = STUDY_TOML if source is None else Path(source)
    study = load_study(source)
    keep, drop = parse_filter(schemes)
    names = [s["name"] for s in study["schemes"]]
    unmatched = [p for p in keep if not any(fnmatch.fnmatchcase(n, p) for n in names)]
    if unmatched:
        raise StudyError(
            f"--schemes: {unmatched[0]!r} matches no scheme; the study's schemes are "
            + ", ".join(names)
        )
    cases = []
    for name, path in study["paths"].items():
        chosen = [
            s
            for s in study["schemes"]
            if name in s.get("paths", [name]) and selected(s["name"], keep, drop)
        ]
        if not chosen:
            continue
        data = {k: copy.deepcopy(v) for k, v in path.items() if k not in STUDY_PATH_KEYS}
        data["name"] = f"countermeasures-{name}"
        extra = path.get("scheme_params", {})
        data["schemes"] = [
            {
                **{k: copy.deepcopy(v) for k, v in s.items() if k not in STUDY_SCHEME_KEYS},
                **copy.deepcopy(extra.get(s["name"], {})),
            }
            for s in chosen
        ]
        spec = from_dict(data, source=str(source), base_dir=source.parent, default_name=name)
        cases.append(
            PathCase(
                name=name,
                title=path.get("title", name),
                about=path.get("about", ""),
                spec=spec,
                roles={s["name"]: s.get("role", "") for s in chosen},
                bottleneck_link=path["bottleneck_link"],
            )
        )
    if not cases:
        raise StudyError(f"--schemes: {schemes!r} leaves no scheme to run")
    return cases
