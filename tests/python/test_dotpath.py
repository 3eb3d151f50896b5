"""Dotted key paths: both index spellings, creation of tables, clear errors."""

import pytest

from latlab import dotpath


@pytest.fixture
def data():
    return {
        "flows": [{"cc": "newreno", "tcp": {}}, {"cc": "cubic"}],
        "topology": {"links": [{"rate_bps": 1.0}]},
    }


@pytest.mark.parametrize(
    "path, keys",
    [
        ("a", ["a"]),
        ("flows.0.cc", ["flows", "0", "cc"]),
        ("topology.links[2].rate_bps", ["topology", "links", 2, "rate_bps"]),
        ("flows[-1]", ["flows", -1]),
    ],
)
def test_parse(path, keys):
    assert dotpath.parse(path) == keys


@pytest.mark.parametrize("path", ["", ".a", "a.", "a..b", "a[x]", "a[0]b"])
def test_parse_rejects_malformed(path):
    with pytest.raises(KeyError):
        dotpath.parse(path)


def test_get_both_spellings(data):
    assert dotpath.get(data, "flows.1.cc") == "cubic"
    assert dotpath.get(data, "flows[1].cc") == "cubic"
    assert dotpath.get(data, "flows[-1].cc") == "cubic"
    assert dotpath.get(data, "topology.links[0].rate_bps") == 1.0


def test_get_missing_names_the_path(data):
    with pytest.raises(KeyError, match=r"flows\[5\]: index out of range"):
        dotpath.get(data, "flows.5.cc")
    with pytest.raises(KeyError, match="no such key"):
        dotpath.get(data, "topology.kind")
    with pytest.raises(KeyError, match="expected an integer index"):
        dotpath.get(data, "flows.first")
    assert dotpath.get(data, "topology.kind", None) is None


def test_set_creates_tables_but_not_list_items(data):
    dotpath.set_value(data, "flows.0.tcp.pacing", True)
    assert data["flows"][0]["tcp"] == {"pacing": True}
    dotpath.set_value(data, "outputs.max_sampled_flows", 5)
    assert data["outputs"] == {"max_sampled_flows": 5}
    with pytest.raises(KeyError):
        dotpath.set_value(data, "flows.2.cc", "cubic")
    with pytest.raises(KeyError):
        dotpath.set_value(data, "extra.0.x", 1)
    assert "extra" not in data  # a failed set leaves no half-made tables


def test_delete(data):
    dotpath.delete(data, "flows.0.cc")
    assert "cc" not in data["flows"][0]
    dotpath.delete(data, "flows.0.nothing")  # missing is fine by default
    with pytest.raises(KeyError):
        dotpath.delete(data, "flows.0.nothing", missing_ok=False)


def test_format_path():
    assert dotpath.format_path(["topology", "links", 2, "rate_bps"]) == "topology.links[2].rate_bps"
