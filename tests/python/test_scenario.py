"""Scenario: loading, dotted get/set, copies, TOML round trip, validation plumbing."""

import tomllib

import numpy as np
import pytest

from conftest import TINY_TOML
from latlab import Scenario, ScenarioError, builtin


def test_from_toml_keeps_source_and_text(tiny_toml):
    sc = Scenario.from_toml(tiny_toml)
    assert sc.source == str(tiny_toml)
    assert sc.name == "tiny" and sc.seed == 3 and sc.duration_s == 2.0
    assert sc.to_toml() == TINY_TOML  # unedited: the file as written
    assert not sc.modified and sc.core_source == str(tiny_toml)


def test_defaults_follow_the_schema():
    sc = Scenario({"duration_s": 1})
    assert sc.name == "scenario" and sc.seed == 1


def test_get_set_dotted():
    sc = Scenario.from_toml_str(TINY_TOML)
    assert sc.get("flows.0.cc") == "newreno"
    assert sc["topology.core_queue.limit_bytes"] == 30000
    assert sc.set("flows.0.cc", "cubic") is sc
    assert sc.get("flows[0].cc") == "cubic"
    sc["topology.core_queue.limit_bytes"] = 10000
    assert sc.get("topology.core_queue.limit_bytes") == 10000
    assert sc.modified and sc.core_source == "<string> (modified)"


def test_set_none_removes_key():
    sc = Scenario.from_toml_str(TINY_TOML).set("flows.0.size_bytes", 5000)
    assert sc.get("flows.0.size_bytes") == 5000
    sc.set("flows.0.size_bytes", None)
    assert sc.get("flows.0.size_bytes", "absent") == "absent"


def test_set_unwraps_numpy_and_tuples():
    sc = Scenario.from_toml_str(TINY_TOML)
    sc.set("seed", np.int64(7)).set("topology.access_delay_ms", (np.float64(1.0), 2))
    assert type(sc.get("seed")) is int
    assert sc.get("topology.access_delay_ms") == [1.0, 2]
    assert tomllib.loads(sc.to_toml())["seed"] == 7


def test_set_rejects_unstorable_values():
    with pytest.raises(TypeError, match="flows.0.cc"):
        Scenario.from_toml_str(TINY_TOML).set("flows.0.cc", object())


def test_get_returns_copies():
    sc = Scenario.from_toml_str(TINY_TOML)
    flows = sc.get("flows")
    flows[0]["cc"] = "cubic"
    assert sc.get("flows.0.cc") == "newreno"


def test_with_returns_an_edited_copy():
    sc = Scenario.from_toml_str(TINY_TOML, source="x.toml")
    new = sc.with_({"flows.0.cc": "cubic"}, seed=9, topology__core_rate_bps=5e6)
    assert (new.seed, new.get("flows.0.cc"), new.get("topology.core_rate_bps")) == (9, "cubic", 5e6)
    assert (sc.seed, sc.get("flows.0.cc")) == (3, "newreno")
    assert new.source == "x.toml" and new.core_source == "x.toml (modified)"
    assert sc.replace(seed=9).seed == 9


def test_toml_round_trip():
    sc = Scenario.from_toml_str(TINY_TOML).with_(seed=4)
    text = sc.to_toml()
    assert tomllib.loads(text) == sc.to_dict()
    assert Scenario.from_toml_str(text) == sc


def test_from_dict_copies_its_input():
    d = tomllib.loads(TINY_TOML)
    sc = Scenario.from_dict(d)
    d["flows"][0]["cc"] = "cubic"
    assert sc.get("flows.0.cc") == "newreno"
    assert Scenario(sc.to_dict()) == sc


def test_invalid_toml_is_a_scenario_error():
    with pytest.raises(ScenarioError, match=r"^bad.toml: invalid TOML"):
        Scenario.from_toml_str("name = ", source="bad.toml")


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        Scenario.from_toml(tmp_path / "nope.toml")


def test_save(tmp_path):
    sc = Scenario.from_toml_str(TINY_TOML).with_(seed=11)
    path = sc.save(tmp_path / "sub" / "s.toml")
    assert Scenario.from_toml(path) == sc


def test_builtins_parse():
    names = builtin.names()
    assert "default" in names and "bench/dumbbell-1000" in names
    for name in names:
        sc = Scenario.builtin(name)
        assert sc.source == f"<builtin:{name}>"
        assert sc.duration_s and sc.duration_s > 0
    assert builtin.bench_names() == [
        "cellular-100",
        "dumbbell-10",
        "dumbbell-1000-bbr",
        "dumbbell-1000",
        "pacing-baseline",
    ]
    assert builtin.description("default")


def test_validate_calls_core_with_the_source_name(fake_core, monkeypatch):
    calls = []
    monkeypatch.setattr(fake_core, "validate", lambda text, source: calls.append((text, source)))
    sc = Scenario.from_toml_str(TINY_TOML, source="file.toml")
    assert sc.validate() is sc
    sc.with_(seed=2).validate()
    assert calls[0] == (TINY_TOML, "file.toml")
    assert calls[1][1] == "file.toml (modified)"


def test_validate_raises_scenario_error(fake_core):
    with pytest.raises(ScenarioError, match="bogus"):
        Scenario.from_toml_str("bogus = 1\n" + TINY_TOML, source="f.toml").validate()
