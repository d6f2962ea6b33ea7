import tomllib
from pathlib import Path

import pytest

from minionsd import config
from minionsd.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]


def test_example_file_documents_every_key_with_its_default():
    example = tomllib.loads((REPO / "config" / "minions.example.toml").read_text())
    expected = {s: {n: k.default for n, k in keys.items()} for s, keys in config.SCHEMA.items()}
    assert example == expected


def test_init_template_is_valid_toml_with_nothing_set():
    assert tomllib.loads(config.example_toml(commented=True)) == {}


def test_defaults_match_spec_values():
    cfg = config.Config(Path("/nonexistent"), {}, None)
    assert cfg["engine.memory_retrieval_top_k"] == 8
    assert cfg["engine.memory_retrieval_min_score_ratio"] == 0.45
    assert cfg["engine.inbox_consolidate_threshold"] == 5
    assert cfg["engine.untrusted_fence_max_bytes"] == 65536
    assert cfg["llm.model"] == "claude-haiku-4-5"
    assert cfg["server.socket"] == ""
    assert cfg["features.memory_retrieval"] is True


def test_unknown_key_names_the_key_and_suggests(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text("[engine]\nmemory_retreival_top_k = 3\n")
    with pytest.raises(ConfigError) as err:
        config.load(path, {})
    assert "engine.memory_retreival_top_k" in err.value.detail
    assert "did you mean 'engine.memory_retrieval_top_k'" in err.value.detail


def test_unknown_section_and_bad_toml(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text("[engin]\nx = 1\n")
    with pytest.raises(ConfigError, match="did you mean 'engine'"):
        config.load(path, {})
    path.write_text("[engine\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        config.load(path, {})


@pytest.mark.parametrize(("key", "value"), [
    ("engine.memory_retrieval_top_k", "8"),
    ("engine.memory_retrieval_top_k", True),
    ("engine.memory_retrieval_top_k", 0),
    ("features.memory_retrieval", 1),
    ("llm.model", 3),
    ("engine.memory_retrieval_min_score_ratio", "0.4"),
    ("engine.memory_retrieval_min_score_ratio", True),
    ("engine.memory_retrieval_min_score_ratio", 1.5),
    ("engine.memory_retrieval_min_score_ratio", -0.1),
    ("engine.memory_retrieval_min_score_ratio", float("nan")),
])
def test_wrong_types_and_bounds_name_the_key(key, value):
    with pytest.raises(ConfigError) as err:
        config.check_value(key, value)
    assert key in err.value.detail
    assert err.value.key == key


def test_ratio_keys_take_numbers_from_0_to_1():
    key = "engine.memory_retrieval_min_score_ratio"
    assert config.check_value(key, 0.35) == 0.35
    assert config.check_value(key, 1) == 1.0 and isinstance(config.check_value(key, 1), float)
    assert config.check_value(key, 0) == 0.0
    with pytest.raises(ConfigError, match=r"must be <= 1\.0"):
        config.check_value(key, 2)


@pytest.mark.parametrize(("key", "value", "said"), [
    ("gateway.listen", "bad", "must be HOST:PORT"),
    ("gateway.listen", "127.0.0.1:0", "port 0 is out of range"),
    ("gateway.listen", ":8765", "must be HOST:PORT"),
    ("gateway.listen", "[]:8765", "must be HOST:PORT"),
    ("gateway.public_url", "memory.example.com", "http:// or https:// URL"),
    ("gateway.public_url", "ftp://memory.example.com", "http:// or https:// URL"),
    ("gateway.public_url", "https://", "http:// or https:// URL"),
    ("gateway.public_url", "https://memory.example.com/?a=1", "http:// or https:// URL"),
])
def test_gateway_addresses_are_checked_when_set(key, value, said):
    with pytest.raises(ConfigError) as err:
        config.check_value(key, value)
    assert key in err.value.detail and said in err.value.detail and repr(value) in \
        err.value.detail


@pytest.mark.parametrize(("key", "value"), [
    ("gateway.listen", "0.0.0.0:8799"), ("gateway.listen", "[::1]:8765"),
    ("gateway.listen", "memory.example.com:443"), ("gateway.public_url", ""),
    ("gateway.public_url", "https://memory.example.com"),
    ("gateway.public_url", "http://10.0.0.5:8765/minions/"),
])
def test_gateway_addresses_the_gateway_takes_are_accepted(key, value):
    assert config.check_value(key, value) == value


def test_agents_table(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('[agents.dallas]\nname = "Dallas"\n[agents.temp-1]\ntemporary = true\n')
    cfg = config.load(path, {})
    assert cfg.agents["dallas"] == {"name": "Dallas", "temporary": False}
    assert cfg.agents["temp-1"]["temporary"] is True
    with pytest.raises(ConfigError, match=r"agents\.dallas\.nmae"):
        config.check_value("agents.dallas.nmae", "x")
    with pytest.raises(ConfigError, match="invalid agent id"):
        config.check_value("agents.bad/id.name", "x")
    # config get shows a section, the agents table and one agent's entry, as it lists them.
    assert cfg.get("engine")["memory_retrieval_top_k"] == 8 and "llm" not in cfg.get("engine")
    assert cfg.get("agents")["dallas"] == {"name": "Dallas", "temporary": False}
    assert cfg.get("agents.temp-1") == {"name": "", "temporary": True}
    assert cfg.get("agents.dallas.name") == "Dallas"
    with pytest.raises(ConfigError, match=r"no agent 'bob' is configured"):
        cfg.get("agents.bob")
    with pytest.raises(ConfigError, match="invalid agent id"):
        cfg.get("agents.bad/id")


@pytest.mark.parametrize(("raw", "expected"), [
    ("1", True), ("true", True), ("ON", True), ("yes", True),
    ("0", False), ("false", False), ("off", False), ("No", False), ("maybe", None), ("", None),
])
def test_env_override_words(tmp_path, raw, expected):
    path = tmp_path / "config.toml"
    path.write_text("[features]\nmemory_retrieval = false\n")
    cfg = config.load(path, {config.ENV_RETRIEVAL: raw})
    assert cfg["features.memory_retrieval"] is (False if expected is None else expected)


def test_set_writes_atomically_and_keeps_other_keys(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('[llm]\nmodel = "x"\n\n[agents.ripley]\nname = "Ripley"\n')
    cfg = config.load(path, {})
    updated = cfg.set_in_file("engine.memory_retrieval_top_k", 3)
    assert updated["engine.memory_retrieval_top_k"] == 3
    tree = tomllib.loads(path.read_text())
    assert tree == {"llm": {"model": "x"}, "agents": {"ripley": {"name": "Ripley"}},
                    "engine": {"memory_retrieval_top_k": 3}}
    assert cfg["engine.memory_retrieval_top_k"] == 8  # the old object is unchanged
    assert list(tmp_path.iterdir()) == [path]  # no temp file left behind


def test_the_version_comes_from_the_package_metadata():
    from importlib.metadata import version

    import minionsd
    from minionsd.memory.app import App

    assert minionsd.__version__ == version("minionsd")
    assert App.__dataclass_fields__["version"].default == version("minionsd")


def test_trust_human_authors_is_a_list_of_names(tmp_path):
    path = tmp_path / "config.toml"
    assert config.Config(path, {}, None)["trust.human_authors"] == []
    path.write_text('[trust]\nhuman_authors = ["alice", "bob"]\n')
    assert config.load(path, {})["trust.human_authors"] == ["alice", "bob"]
    for bad in ('"alice"', '["alice", 3]', '[""]'):
        path.write_text(f"[trust]\nhuman_authors = {bad}\n")
        with pytest.raises(ConfigError) as err:
            config.load(path, {})
        assert "trust.human_authors" in err.value.detail
