"""Configuration: the schema of every key, its default, loading, validation and atomic writes.

`config.toml` holds only what the user set; the effective config is the defaults overlaid by
the file, then by the `MINIONS_FEATURE_MEMORYRETRIEVAL` environment override. This is the only
module (with the entry points) that reads `os.environ`. Keys are dotted (`engine.top_k`);
`agents.<id>.name|temporary` is the one open-ended table.
"""

from __future__ import annotations

import copy
import os
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import structlog
import tomli_w

from minionsd.errors import ConfigError, InvalidState
from minionsd.fileio import atomic_write_through, check_regular

log = structlog.get_logger()

ENV_RETRIEVAL = "MINIONS_FEATURE_MEMORYRETRIEVAL"
_TRUE_WORDS = {"1", "true", "on", "yes"}
_FALSE_WORDS = {"0", "false", "off", "no"}
# engine.memory_retrieval_min_score_ratio's default, measured with scripts/eval.py
# (docs/retrieval.md, "Evaluation").
MIN_SCORE_RATIO = 0.45


@dataclass(frozen=True)
class Key:
    default: Any
    type: type
    doc: str
    minimum: int | float | None = None
    maximum: int | float | None = None
    # What is wrong with a value of the right type, or None (a format the type cannot say).
    check: Callable[[Any], str | None] | None = None


def split_host_port(value: str) -> tuple[str, int]:
    """`host:port` or `[v6]:port` -> (host, port); a ValueError says what is wrong."""
    host, sep, port = value.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit():
        raise ValueError("must be HOST:PORT, e.g. 127.0.0.1:8765")
    if not 0 < int(port) < 65536:
        raise ValueError(f"port {int(port)} is out of range (1 to 65535)")
    return host, int(port)


def _listen_problem(value: str) -> str | None:
    try:
        split_host_port(value)
    except ValueError as exc:
        return str(exc)
    return None


def _url_problem(value: str) -> str | None:
    """Empty, or an http(s) URL with a host and nothing after its path."""
    if not value:
        return None
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query \
            or parts.fragment:
        return "must be the http:// or https:// URL clients use, e.g. https://memory.example.com"
    return None


def _int(default: int, doc: str, minimum: int = 0) -> Key:
    return Key(default, int, doc, minimum)


def _ratio(default: float, doc: str) -> Key:
    """A float in 0..1 (an integer 0 or 1 is accepted and stored as a float)."""
    return Key(default, float, doc, 0.0, 1.0)


SCHEMA: dict[str, dict[str, Key]] = {
    "features": {
        "memory_retrieval": Key(True, bool, "Task-aware Relevant Memory in prompts."),
    },
    "engine": {
        "memory_retrieval_shadow_mode": Key(
            False, bool, "Compute and record retrieval, but prompts keep the legacy pair."
        ),
        "memory_retrieval_top_k": _int(8, "Most records in a Relevant Memory pack.", 1),
        "memory_retrieval_max_bytes": _int(8192, "Most UTF-8 bytes of a rendered pack.", 256),
        "memory_retrieval_candidate_limit": _int(50, "FTS5 candidate pool size.", 1),
        "memory_retrieval_min_score_ratio": _ratio(
            MIN_SCORE_RATIO, "The score floor, as a share of the best record's score: below it "
            "only a close run or a rare code the task names is packed."),
        "inbox_consolidate_threshold": _int(5, "Eligible notes that trigger a batch.", 1),
        "memory_episodic_capture": Key(False, bool, "Store task outcomes as episodic records."),
        "auto_consolidate_memory": Key(True, bool, "Consolidate when the threshold is reached."),
        "agent_memory_max_entries": _int(300, "Entries kept per agent notebook.", 1),
        "agent_memory_summary_enabled": Key(False, bool, "Summarise old notebook entries."),
        "agent_memory_summary_threshold": _int(30, "Entries beyond which to summarise.", 1),
        "agent_memory_summary_days": _int(30, "Only entries older than this are summarised.", 1),
        "untrusted_fence_max_bytes": _int(65536, "Most UTF-8 bytes inside one fence.", 256),
        "pinned_max_code_units": _int(4096, "Pinned context cap in UTF-16 code units.", 1),
        "team_notes_max_bytes": _int(8192, "Team Notes section cap in UTF-8 bytes.", 256),
        "personal_memory_max_bytes": _int(8192, "Personal Memory cap in UTF-8 bytes.", 256),
        "consolidation_max_batch": _int(50, "Most notes in one batch.", 1),
        "notes_max_bytes": _int(50000, "notes.md bound; older sections move to history.", 1024),
        "inbox_settle_ms": _int(500, "A note must be unchanged this long to be eligible."),
        "inbox_max_wait_s": _int(
            120, "Consolidate below the threshold once the oldest note waited this long; 0 = never."
        ),
        "inbox_max_note_bytes": _int(1048576, "Bigger inbox files are quarantined.", 1),
        "rescan_interval_s": _int(60, "Periodic inbox rescan behind the watcher.", 1),
        "kb_sweep_interval_s": _int(86400, "How often the KB sweep runs.", 60),
        "kb_sweep_llm": Key(False, bool, "Allow LLM passes in the KB sweep."),
        "archive_max_files": _int(2000, "Oldest archived notes beyond this are deleted.", 1),
    },
    "llm": {
        "model": Key("claude-haiku-4-5", str, "Model for digests and summaries."),
        "api_key_env": Key("ANTHROPIC_API_KEY", str, "Env var holding the API key."),
        "base_url": Key("", str, "Messages API base URL; empty = the SDK default."),
        "timeout_s": _int(30, "Per-request timeout in seconds.", 1),
        "max_retries": _int(2, "SDK retries on transient errors."),
    },
    "server": {
        "socket": Key("", str, "Socket path; empty = <home>/engine/minionsd.sock."),
        "max_request_bytes": _int(1048576, "Longest accepted request line.", 1024),
    },
    "gateway": {
        "listen": Key("127.0.0.1:8765", str,
                      "host:port of `minionsctl serve`; not loopback needs TLS or behind_proxy.",
                      check=_listen_problem),
        "public_url": Key("", str, "The URL clients use (behind a proxy); empty = from listen.",
                          check=_url_problem),
        "tls_cert": Key("", str, "PEM certificate; with tls_key the gateway speaks HTTPS."),
        "tls_key": Key("", str, "PEM private key of tls_cert."),
        "behind_proxy": Key(False, bool, "TLS ends at a reverse proxy; trust its X-Forwarded-*."),
        "allowed_hosts": Key([], list, "Host headers accepted besides listen and public_url."),
        "allowed_origins": Key([], list, "Browser Origins accepted besides public_url's own."),
        "rate_per_s": _int(20, "Per token: sustained requests per second.", 1),
        "rate_burst": _int(40, "Per token: requests allowed in a burst.", 1),
        "session_hours": _int(12, "Web view sign-in lifetime in hours.", 1),
        "read_timeout_s": Key(30, int, "A client must send its whole request within this.",
                              1, 30),
    },
    "trust": {
        "human_authors": Key(
            [], list, "Authors whose notes get human trust; empty = the daemon user's login."
        ),
    },
}
AGENT_SCHEMA: dict[str, Key] = {
    "name": Key("", str, "Display name."),
    "temporary": Key(False, bool, "Temporary agents get no personal notebook."),
}


def defaults() -> dict[str, Any]:
    return {
        section: {name: copy.deepcopy(key.default) for name, key in keys.items()}
        for section, keys in SCHEMA.items()
    } | {"agents": {}}


def all_keys() -> list[str]:
    return [f"{s}.{n}" for s, keys in SCHEMA.items() for n in keys]


def _suggest(name: str, choices: list[str]) -> str:
    import difflib  # only for a mistyped key: the daemon's start-up does not pay for it

    close = difflib.get_close_matches(name, choices, n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


def lookup_key(dotted: str) -> Key:
    """Return the schema entry for a dotted key, or raise ConfigError with a suggestion."""
    parts = dotted.split(".")
    if len(parts) == 3 and parts[0] == "agents":
        if not valid_agent_id(parts[1]):
            raise ConfigError(f"invalid agent id in key '{dotted}'", key=dotted)
        if parts[2] in AGENT_SCHEMA:
            return AGENT_SCHEMA[parts[2]]
        raise ConfigError(
            f"unknown key '{dotted}'{_suggest(parts[2], list(AGENT_SCHEMA))}", key=dotted
        )
    if len(parts) == 2 and parts[0] in SCHEMA and parts[1] in SCHEMA[parts[0]]:
        return SCHEMA[parts[0]][parts[1]]
    raise ConfigError(f"unknown key '{dotted}'{_suggest(dotted, all_keys())}", key=dotted)


def valid_agent_id(agent_id: str) -> bool:
    return (
        0 < len(agent_id) <= 64
        and agent_id[0].isalnum()
        and all(c.isalnum() or c in "-_." for c in agent_id)
        and agent_id.isascii()
    )


def check_value(dotted: str, value: Any) -> Any:
    """Validate one value against its key's type and bounds; return it normalised."""
    key = lookup_key(dotted)
    if key.type is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif key.type is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        value = float(value) if ok else value
        if ok and value != value:  # NaN: no bound holds for it
            raise ConfigError(f"'{dotted}' must be a number, got NaN", key=dotted)
    else:
        ok = isinstance(value, key.type)
    if not ok:
        raise ConfigError(
            f"'{dotted}' must be {key.type.__name__}, got {type(value).__name__}", key=dotted
        )
    if key.type is list and not all(isinstance(item, str) and item for item in value):
        raise ConfigError(f"'{dotted}' must be a list of non-empty strings", key=dotted)
    if key.minimum is not None and value < key.minimum:
        raise ConfigError(f"'{dotted}' must be >= {key.minimum}, got {value}", key=dotted)
    if key.maximum is not None and value > key.maximum:
        raise ConfigError(f"'{dotted}' must be <= {key.maximum}, got {value}", key=dotted)
    problem = key.check(value) if key.check is not None else None
    if problem is not None:
        raise ConfigError(f"'{dotted}' {problem}, got {value!r}", key=dotted)
    return value


def validate_tree(tree: Mapping[str, Any]) -> None:
    """Check a parsed config.toml: every key known, every value of the right type."""
    for section, body in tree.items():
        if section not in SCHEMA and section != "agents":
            raise ConfigError(
                f"unknown section '{section}'{_suggest(section, [*SCHEMA, 'agents'])}",
                key=section,
            )
        if not isinstance(body, Mapping):
            raise ConfigError(f"'{section}' must be a table", key=section)
        for name, value in body.items():
            if section == "agents":
                if not valid_agent_id(name):
                    raise ConfigError(f"invalid agent id 'agents.{name}'", key=f"agents.{name}")
                if not isinstance(value, Mapping):
                    raise ConfigError(f"'agents.{name}' must be a table", key=f"agents.{name}")
                for field, fvalue in value.items():
                    check_value(f"agents.{name}.{field}", fvalue)
            else:
                check_value(f"{section}.{name}", value)


def parse_bool_env(raw: str) -> bool | None:
    word = raw.strip().lower()
    if word in _TRUE_WORDS:
        return True
    if word in _FALSE_WORDS:
        return False
    return None


class Config:
    """The effective configuration of one home: file values over defaults, env on top."""

    def __init__(self, path: Path, file_tree: dict[str, Any], env_retrieval: bool | None):
        self.path = path
        self.file_tree = file_tree
        self.env_retrieval = env_retrieval
        self.values = self._effective()

    def _effective(self) -> dict[str, Any]:
        merged = defaults()
        for section, body in self.file_tree.items():
            if section == "agents":
                for agent_id, fields in body.items():
                    merged["agents"][agent_id] = {
                        name: key.default for name, key in AGENT_SCHEMA.items()
                    } | dict(fields)
            else:
                merged[section].update(body)
        if self.env_retrieval is not None:
            merged["features"]["memory_retrieval"] = self.env_retrieval
        return merged

    def get(self, dotted: str) -> Any:
        parts = dotted.split(".")
        if dotted in SCHEMA:  # a whole section, as config get lists it
            return copy.deepcopy(self.values[dotted])
        if parts[0] == "agents" and len(parts) <= 2:  # the table, or one agent's
            if len(parts) == 1:
                return copy.deepcopy(self.values["agents"])
            if not valid_agent_id(parts[1]):
                raise ConfigError(f"invalid agent id in key '{dotted}'", key=dotted)
            if parts[1] not in self.values["agents"]:
                raise ConfigError(f"no agent '{parts[1]}' is configured (config.toml has no "
                                  f"[agents.{parts[1]}] table)", key=dotted)
            return copy.deepcopy(self.values["agents"][parts[1]])
        lookup_key(dotted)
        node: Any = self.values
        for part in parts:
            if not isinstance(node, dict) or part not in node:
                return None
            node = node[part]
        return node

    def __getitem__(self, dotted: str) -> Any:
        return self.get(dotted)

    def configured(self) -> dict[str, Any]:
        """What config.get shows: the effective values (file over defaults)."""
        return copy.deepcopy(self.values)

    @property
    def agents(self) -> dict[str, dict[str, Any]]:
        return self.values["agents"]

    def with_value(self, dotted: str, value: Any) -> Config:
        """A new Config with one key changed in the file tree (not yet written)."""
        tree = copy.deepcopy(self.file_tree)
        _set_in_tree(tree, dotted, check_value(dotted, value))
        return Config(self.path, tree, self.env_retrieval)

    def set_in_file(self, dotted: str, value: Any) -> Config:
        """Write one key into config.toml as the file is on disk now, so keys edited there by
        hand since the last load are kept (they still wait for a SIGHUP or a restart), and
        return the running config with that one key changed. A file on disk that is not valid
        is refused with InvalidState, and nothing is written."""
        value = check_value(dotted, value)
        try:
            on_disk = read_file_tree(self.path)
        except ConfigError as exc:
            raise InvalidState(
                f"config.toml was not changed: the file on disk is not valid ({exc.detail}); "
                "fix it by hand, then set the key again", key=dotted) from None
        _set_in_tree(on_disk, dotted, value)
        atomic_write_through(self.path, tomli_w.dumps(on_disk))
        return self.with_value(dotted, value)


def _set_in_tree(tree: dict[str, Any], dotted: str, value: Any) -> None:
    node = tree
    parts = dotted.split(".")
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = value


def read_file_tree(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        check_regular(path)  # a FIFO would block the read (at SIGHUP on the event loop)
        tree = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    validate_tree(tree)
    return tree


def env_retrieval_override(environ: Mapping[str, str] | None = None) -> bool | None:
    environ = os.environ if environ is None else environ
    raw = environ.get(ENV_RETRIEVAL)
    if raw is None:
        return None
    parsed = parse_bool_env(raw)
    if parsed is None:
        log.warning("config.env_ignored", var=ENV_RETRIEVAL, value=raw,
                    expected="1/true/on/yes or 0/false/off/no")
    return parsed


def load(path: Path, environ: Mapping[str, str] | None = None) -> Config:
    return Config(path, read_file_tree(path), env_retrieval_override(environ))


def example_toml(commented: bool = True) -> str:
    """Every key with its default and a one-line explanation.

    `minionsctl init` writes the commented form (nothing set, so defaults can still change
    with upgrades); config/minions.example.toml is the uncommented form, checked by a test.
    """
    mark = "# " if commented else ""
    lines = ["# minionsd configuration. Every key is optional; the values shown are defaults.",
             "# Reference: docs/configuration.md", ""]
    for section, keys in SCHEMA.items():
        lines.append(f"{mark}[{section}]")
        for name, key in keys.items():
            lines.append(f"# {key.doc}")
            lines.append(mark + tomli_w.dumps({name: key.default}).strip())
        lines.append("")
    lines += ["# Configured agents get a personal notebook (unless temporary).",
              "# [agents.dallas]", '# name = "Dallas"', "# temporary = false", ""]
    return "\n".join(lines)
