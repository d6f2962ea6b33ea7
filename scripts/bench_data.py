"""Deterministic synthetic data for scripts/bench.py: engineering-note records, search queries,
inbox notes and tasks.

Everything is drawn from a `random.Random(seed)`, so the same seed gives the same data set.
The text is built from sentence templates filled with file paths, code identifiers, error
codes, config keys and a Zipf-weighted engineering vocabulary, so that (as in real notes) a
few words (test, cache, retry, build, py...) occur in most records and a long tail is rare.
"""

from __future__ import annotations

import bisect
import itertools
import random
import string
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

T = TypeVar("T")

PROJECTS = ("atlas", "beacon", "cobalt", "delta-web", "ember", "falcon-api", "garnet",
            "harbor")
AGENTS = ("dallas", "ripley", "lambert", "kane", "ash", "parker", "brett", "bishop")
HUMANS = ("yana", "tomas", "priya", "marek")
TYPES = (("semantic", 60), ("episodic", 25), ("procedural", 15))
TRUSTS = (("agent", 55), ("human", 20), ("system", 15), ("external", 10))

_TOP_DIRS = ("src", "web", "lib", "services", "tests", "scripts", "api", "pkg", "cmd", "infra")
_SUB_DIRS = ("auth", "billing", "cache", "components", "db", "deploy", "http", "jobs", "login",
             "metrics", "net", "queue", "search", "session", "storage", "sync", "ui", "utils",
             "worker", "config", "payments", "notifications", "retry", "scheduler")
_STEMS = ("token_refresh", "LoginForm", "session_store", "retry_policy", "RateLimiter",
          "cache_client", "ConnectionPool", "user_service", "invoice", "webhook_handler",
          "PaymentSheet", "migrations", "backoff", "health_check", "feature_flags", "Dashboard",
          "queue_consumer", "index", "settings", "http_client", "SearchBar", "job_runner",
          "uploader", "schema", "conftest", "test_token_refresh", "test_retry_policy",
          "useSession", "router", "middleware", "serializer", "lock_manager", "AuthProvider",
          "ws_gateway", "cron", "build", "Dockerfile", "release", "metrics_exporter", "models")
_EXTS = (".py", ".py", ".py", ".ts", ".tsx", ".tsx", ".go", ".rs", ".sql", ".yaml", ".md",
         ".js", ".toml", ".sh")

_CLASS_PARTS_A = ("Token", "Session", "Retry", "Cache", "Login", "Payment", "Queue", "Search",
                  "Http", "Connection", "Rate", "Job", "Webhook", "Invoice", "Feature", "Upload",
                  "Metrics", "Lock", "Schema", "Auth", "User", "Event", "Build", "Deploy")
_CLASS_PARTS_B = ("Refresher", "Store", "Policy", "Client", "Manager", "Handler", "Limiter",
                  "Pool", "Consumer", "Runner", "Provider", "Validator", "Serializer",
                  "Exporter", "Scheduler", "Gateway", "Builder", "Worker", "Controller")
_SNAKE_A = ("retry", "cache", "token", "session", "request", "connect", "read", "write",
            "queue", "batch", "lock", "build", "deploy", "max", "min", "idle", "pool", "http",
            "db", "upload", "webhook", "rate")
_SNAKE_B = ("backoff", "ttl", "timeout", "size", "limit", "interval", "count", "window",
            "attempts", "delay", "threshold", "budget", "depth")
_SNAKE_C = ("ms", "s", "bytes", "max", "default", "seconds", "ratio")
_ERR_A = ("CONN", "AUTH", "TOKEN", "DB", "CACHE", "QUEUE", "RATE", "TLS", "DNS", "LOCK",
          "UPLOAD", "SCHEMA", "BUILD")
_ERR_B = ("RESET", "EXPIRED", "TIMEOUT", "REFUSED", "LIMITED", "INVALID", "MISSING",
          "CONFLICT", "CORRUPT", "DEADLOCK", "UNAVAILABLE", "OVERFLOW")
_EXCEPTIONS = ("TimeoutError", "ConnectionResetError", "KeyError", "ValueError",
               "IntegrityError", "OperationalError", "TypeError", "AssertionError",
               "PermissionError", "JSONDecodeError", "CancelledError", "RuntimeError")
TOOLS = ("pytest", "tox", "ruff", "mypy", "jest", "vitest", "webpack", "vite", "docker",
         "kubectl", "helm", "terraform", "npm", "pnpm", "cargo", "go", "sqlite", "postgres",
         "redis", "nginx", "celery", "alembic", "playwright", "eslint", "github actions")

# Engineering words, most frequent first (weights fall off as 1/rank).
_WORDS = """
test cache retry timeout build deploy py error fix config request response token session
file function call value flaky failing run change update check path service client server
database query index migration job worker queue event log logs log_level version release
branch merge commit review pr ci pipeline step stage docker image container env variable
secret key user login auth refresh expire expiry header cookie api endpoint route handler
middleware component state props render hook store async await promise thread lock race
condition deadlock connection pool socket network dns tls certificate proxy latency
throughput memory leak cpu disk io read write sync flush batch chunk stream buffer size
limit rate throttle backoff jitter attempt attempts fallback default override setting flag
feature rollout rollback hotfix incident outage alert metric dashboard trace span sample
schema column table row transaction commit constraint unique foreign null integer string
json yaml toml parse serialize encode decode utf8 bytes encoding payload upload download
storage bucket object blob archive snapshot backup restore cron schedule scheduler interval
window deadline duration slow fast perf benchmark profile regression coverage unit
integration e2e fixture mock stub assert assertion snapshot teardown setup conftest
parametrize skip xfail ordering order sort filter search match regex pattern replace
escape quote sanitize validate validation input output format template layout css style
button form field modal dialog page view navigation router link redirect url domain host
port address local remote staging production prod dev preview cluster node pod replica
scale autoscale health probe readiness liveness restart crash panic exception traceback
stack frame debug debugger breakpoint print warning deprecated upgrade downgrade dependency
package lockfile install pin wheel module import export circular type typing annotation
generic interface class method attribute property decorator closure callback signal
handler listener subscriber publisher topic channel message broker consumer producer offset
partition lag retention ttl eviction invalidation stale warm cold miss hit ratio key_prefix
namespace tenant account billing invoice payment charge refund webhook idempotency
idempotent duplicate dedupe retryable transient permanent status code
"""
WORDS: tuple[str, ...] = tuple(dict.fromkeys(_WORDS.split()))

_VERBS = ("fails", "times out", "retries", "hangs", "crashes", "leaks memory", "returns 500",
          "drops the connection", "deadlocks", "races", "logs a warning", "succeeds",
          "blocks the event loop", "rolls back", "falls back to the default", "skips the cache",
          "double-charges", "loses the session", "throws", "spins")
_WHEN = ("under load", "on the first request after deploy", "when the token expires",
         "when the cache is cold", "after the migration", "in CI only", "on macOS runners",
         "with the feature flag on", "when two workers race", "on retry", "at midnight UTC",
         "behind the proxy", "with an empty payload", "when the disk is full",
         "after a restart", "during the nightly build")

_SENTENCES = (
    "{ident} in {path} {verb} {when}.",
    "The {word} {word2} in {path} was wrong: {ident} used {cfg} = {num} instead of {num2}.",
    "Root cause: {err} from {ident} is not retried because {cfg} is {num}.",
    "Fixed by raising {cfg} to {num} and adding a {word} around {ident}.",
    "{tool} reports {exc} in {path} line {num}; it is a {word} {word2} issue.",
    "To reproduce: run `{tool} {path}` with {cfg}={num} and watch for {err}.",
    "Do not call {ident} from {path2}; it holds the {word} lock and {verb}.",
    "The {word} test in {path} is flaky {when}; mark it and track it in PR #{pr}.",
    "{ident} caches the {word} for {num} ms, so a stale {word2} survives the {word3}.",
    "After the {word} change, {err} dropped from {num} to {num2} per hour.",
    "Always run {tool} before pushing changes to {path}.",
    "Build step `{tool}` {verb} {when}; the cache key must include {path}.",
    "Deploy of {project} needs {cfg} set, or {ident} raises {exc}.",
    "The retry loop in {path} ignores {err}; retry_backoff_ms should cap at {num}.",
    "Use {ident} instead of hand-written {word} {word2} code in {path2}.",
    "Timeouts in {path} came from the {word} pool being exhausted ({num} of {num2} in use).",
    "{exc}: {ident}.{method}() got an unexpected {word} when {word2} was empty.",
    "We agreed to keep {cfg} at {num} until the {word} {word2} is rewritten.",
    "The {word} {word2} {word3} depends on {ident} and on {path}.",
    "Reviewer note: {ident} needs a {word} test for {err}.",
    "Incident {num}: {project} {word} {verb} {when}; mitigated by a {word2} rollback.",
    "{path} and {path2} both define {ident}; keep the one in {path}.",
    "Measured p99 {word} latency {num} ms after the {word2} fix (was {num2} ms).",
    "Commit {sha} moved {ident} to {path}.",
)
_TITLES = (
    "{ident} {verb} {when}",
    "Fix {err} in {path}",
    "{word} {word2}: {ident} and {cfg}",
    "Flaky {word} test in {path}",
    "How to {word} {word2} for {project}",
    "{tool} {word} {word2} notes",
    "{exc} from {ident}",
    "Retry and timeout policy for {ident}",
    "{project}: {word} {word2} {word3}",
    "Why {cfg} is {num}",
)
_METHODS = ("refresh", "get", "put", "run", "handle", "flush", "acquire", "release", "parse",
            "validate", "connect", "close", "submit", "retry", "render", "invalidate")
_TAGS = ("auth", "cache", "ci", "flaky-test", "perf", "incident", "deploy", "db", "frontend",
         "backend", "security", "retry", "build", "infra", "billing", "search", "tech-debt")


# Share of body sentences built from the technical templates (the rest is plain prose).
PROSE_TECH_SHARE = 0.2
WORD_RANK_OFFSET = 8
PLAIN_RANK_OFFSET = 30
TAIL_WORDS = 4000
_SYLLABLES = ("ka", "lo", "mer", "tin", "dra", "vel", "sen", "ox", "quar", "bel", "ri", "mon",
              "tas", "pel", "gor", "lin", "fa", "zu", "nor", "ek", "sta", "vi", "brum", "dal")
_FUNCTION_TEXT = """
the the the a a to to of of and and in in is is it it that for on we was be this with as
not but at by or from so if when then there have has had are were been can will would
should could our they you i he she do did does just also only still even about after
"""
_FUNCTION_WORDS = tuple(_FUNCTION_TEXT.split())
_PLAIN = """
team week day today yesterday morning night people customer customers user users issue
issues problem problems thing things work working worked time times way ways part parts
look looks looked think thought seems seemed need needs needed want wanted try tried
make made take took give gave find found know knew see saw says said tell told ask asked
help helped start started stop stopped keep kept move moved turn turned show showed
change changed good bad better worse best new old first last next same different small
large big little long short high low right wrong sure clear likely probably maybe again
already almost enough instead though although because since until while before later
soon early late quick quickly slow slowly easy hard simple complex manual automatic
number numbers list lists case cases example examples result results reason reasons
question questions answer answers idea ideas plan plans note notes doc docs document
meeting call discussion decision owner owners support ticket tickets report reports
request requests feedback review reviews product feature features team's release notes
agreed proposed suggested noticed confirmed checked verified expected unexpected
mostly usually sometimes rarely never always often mainly partly fully currently
"""
_NUMBERS = (3, 5, 10, 30, 50, 100, 250, 500, 1000, 3000, 30000)


def _parse_template(text: str) -> tuple[tuple[str, str | None], ...]:
    return tuple((literal, field) for literal, field, _, _ in string.Formatter().parse(text))


_SENTENCE_PARTS = tuple(_parse_template(t) for t in _SENTENCES)
_TITLE_PARTS = tuple(_parse_template(t) for t in _TITLES)


def _pick(rng: random.Random, items: Sequence[T]) -> T:
    return items[int(rng.random() * len(items))]


def _weighted(rng: random.Random, table: tuple[tuple[str, int], ...]) -> str:
    return rng.choices([name for name, _ in table], [w for _, w in table])[0]


class Vocabulary:
    """Pools of paths, identifiers and words, fixed for a seed."""

    def __init__(self, seed: int) -> None:
        rng = random.Random(f"vocab-{seed}")
        paths = {"src/auth/token_refresh.py", "web/components/LoginForm.tsx",
                 "src/cache/retry_policy.py", "tests/auth/test_token_refresh.py"}
        while len(paths) < 420:
            depth = rng.choice((1, 1, 2))
            parts = [rng.choice(_TOP_DIRS), *rng.sample(_SUB_DIRS, depth)]
            stem = rng.choice(_STEMS)
            ext = ".tsx" if stem[0].isupper() and rng.random() < 0.6 else rng.choice(_EXTS)
            if stem == "Dockerfile":
                ext = ""
            paths.add("/".join(parts) + "/" + stem + ext)
        self.paths = sorted(paths)
        rng.shuffle(self.paths)
        classes = {"TokenRefresher", "SessionStore", "RetryPolicy", "RateLimiter"}
        while len(classes) < 220:
            classes.add(rng.choice(_CLASS_PARTS_A) + rng.choice(_CLASS_PARTS_B))
        self.classes = sorted(classes)
        rng.shuffle(self.classes)
        cfgs = {"retry_backoff_ms", "cache_ttl_s", "request_timeout_ms", "max_retry_attempts"}
        while len(cfgs) < 160:
            cfgs.add("_".join((rng.choice(_SNAKE_A), rng.choice(_SNAKE_B),
                               rng.choice(_SNAKE_C))))
        self.cfgs = sorted(cfgs)
        rng.shuffle(self.cfgs)
        errs = {"ERR_CONN_RESET", "ERR_TOKEN_EXPIRED", "ERR_DB_DEADLOCK"}
        while len(errs) < 90:
            errs.add(f"ERR_{rng.choice(_ERR_A)}_{rng.choice(_ERR_B)}")
        self.errs = sorted(errs)
        rng.shuffle(self.errs)
        self.words = list(WORDS)
        # Zipf-like weights (1/rank) give a realistic head (test, cache, retry...) and tail.
        self.word_weights = list(itertools.accumulate(1.0 / (i + WORD_RANK_OFFSET)
                                                      for i in range(len(self.words))))
        self.path_weights = list(itertools.accumulate(1.0 / (i + 1) ** 0.8
                                                      for i in range(len(self.paths))))
        self.class_weights = list(itertools.accumulate(1.0 / (i + 1) ** 0.8
                                                       for i in range(len(self.classes))))
        self.makers = self._makers()
        # Everyday words, then a long tail of rare made-up words (names, jargon, typos),
        # weighted 1/(rank + offset): real notes have a big vocabulary whose head words
        # occur in a minority of notes, not in nearly all of them.
        plain = list(dict.fromkeys(_PLAIN.split()))
        rng.shuffle(plain)
        tail: dict[str, None] = {}
        while len(tail) < TAIL_WORDS:
            parts = rng.randint(2, 3)
            tail.setdefault("".join(rng.choice(_SYLLABLES) for _ in range(parts)))
        self.plain = plain + [w for w in tail if w not in plain]
        self.plain_weights = list(itertools.accumulate(1.0 / (i + PLAIN_RANK_OFFSET)
                                                       for i in range(len(self.plain))))

    def word(self, rng: random.Random) -> str:
        weights = self.word_weights
        return self.words[bisect.bisect(weights, rng.random() * weights[-1])]

    def path(self, rng: random.Random) -> str:
        weights = self.path_weights
        return self.paths[bisect.bisect(weights, rng.random() * weights[-1])]

    def ident(self, rng: random.Random) -> str:
        weights = self.class_weights
        return self.classes[bisect.bisect(weights, rng.random() * weights[-1])]

    def _makers(self) -> dict[str, Any]:
        return {
            "path": self.path, "path2": self.path, "ident": self.ident,
            "cfg": lambda rng: _pick(rng, self.cfgs), "err": lambda rng: _pick(rng, self.errs),
            "exc": lambda rng: _pick(rng, _EXCEPTIONS), "tool": lambda rng: _pick(rng, TOOLS),
            "word": self.word, "word2": self.word, "word3": self.word,
            "verb": lambda rng: _pick(rng, _VERBS), "when": lambda rng: _pick(rng, _WHEN),
            "num": lambda rng: str(_pick(rng, _NUMBERS)),
            "num2": lambda rng: str(1 + int(rng.random() * 5000)),
            "pr": lambda rng: str(100 + int(rng.random() * 9900)),
            "project": lambda rng: _pick(rng, PROJECTS),
            "method": lambda rng: _pick(rng, _METHODS),
            "sha": lambda rng: f"{rng.getrandbits(28):07x}",
        }

    def slots(self, rng: random.Random) -> dict[str, str]:
        return {name: make(rng) for name, make in self.makers.items()}

    def _fill(self, rng: random.Random, template: tuple[tuple[str, str | None], ...]) -> str:
        makers = self.makers
        return "".join(literal + (makers[field](rng) if field else "")
                       for literal, field in template)

    def sentence(self, rng: random.Random) -> str:
        return self._fill(rng, _pick(rng, _SENTENCE_PARTS))

    def title(self, rng: random.Random) -> str:
        text = self._fill(rng, rng.choice(_TITLE_PARTS))
        return text[0].upper() + text[1:]

    def prose(self, rng: random.Random) -> str:
        """A plain sentence: function words, everyday words and a few engineering words."""
        words = []
        for _ in range(6 + int(rng.random() * 12)):
            roll = rng.random()
            if roll < 0.45:
                words.append(_pick(rng, _FUNCTION_WORDS))
            elif roll < 0.95:
                weights = self.plain_weights
                words.append(self.plain[bisect.bisect(weights, rng.random() * weights[-1])])
            else:
                words.append(self.word(rng))
        text = " ".join(words)
        return text[0].upper() + text[1:] + "."

    def paragraph(self, rng: random.Random, words: int) -> str:
        """Sentences until `words` words: about a third carry paths, identifiers, errors."""
        sentences: list[str] = []
        count = 0
        while count < words:
            sentence = self.sentence(rng) if rng.random() < PROSE_TECH_SHARE else self.prose(rng)
            sentences.append(sentence)
            count += sentence.count(" ") + 1
        return " ".join(sentences)


def body_words(rng: random.Random) -> int:
    """40..400 words, skewed short (most notes are short, a few are long)."""
    return int(40 + 360 * rng.random() ** 1.7)


def record_params(vocab: Vocabulary, seed: int, index: int, base: datetime) -> dict[str, Any]:
    """The memory.add params of record number `index` (independent of the other records)."""
    rng = random.Random(f"rec-{seed}-{index}")
    roll = rng.random()
    project = rng.choice(PROJECTS)
    agent = rng.choice(AGENTS)
    if roll < 0.3:
        scope = "global"
    elif roll < 0.8:
        scope = f"project:{project}"
    else:
        scope = f"agent:{agent}"
    kind = _weighted(rng, TYPES)
    trust = _weighted(rng, TRUSTS)
    author = agent if trust == "agent" else rng.choice(HUMANS) if trust == "human" else "engine"
    body = vocab.paragraph(rng, body_words(rng))
    paths = list(dict.fromkeys(vocab.path(rng) for _ in range(rng.randint(0, 4))))
    created = base - timedelta(seconds=rng.randint(0, 365 * 86400))
    params: dict[str, Any] = {
        "body": body, "type": kind, "scope": scope, "trust": trust,
        "source": f"bench/{kind}/{index:07d}", "title": vocab.title(rng), "author": author,
        "project": project if scope != "global" or rng.random() < 0.3 else None,
        "agent": agent if trust == "agent" or scope.startswith("agent:") else None,
        "task": f"W-{rng.randint(1, 20000)}" if rng.random() < 0.6 else None,
        "paths": paths, "tags": rng.sample(_TAGS, rng.randint(0, 3)),
        "importance": round(rng.uniform(0.2, 0.9), 2),
        "confidence": round(rng.uniform(0.3, 0.95), 2),
        "created_at": created.strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    if rng.random() < 0.3:
        params["pr"] = str(rng.randint(100, 9999))
    if rng.random() < 0.03:
        params["expires_at"] = (base + timedelta(days=rng.randint(1, 90))).strftime(
            "%Y-%m-%dT%H:%M:%SZ")
    return {k: v for k, v in params.items() if v is not None}


def search_queries(vocab: Vocabulary, seed: int, count: int) -> list[str]:
    """`count` realistic 1-4 word queries, as a person or an agent would type them."""
    rng = random.Random(f"queries-{seed}")
    makers = (
        lambda: vocab.word(rng),
        lambda: vocab.ident(rng),
        lambda: rng.choice(vocab.errs),
        lambda: rng.choice(vocab.cfgs),
        lambda: vocab.path(rng).rsplit("/", 1)[-1],
        lambda: vocab.path(rng),
        lambda: rng.choice(TOOLS),
        lambda: rng.choice(_EXCEPTIONS),
    )
    weights = (45, 14, 8, 7, 8, 4, 8, 6)
    queries = []
    for _ in range(count):
        size = rng.choices((1, 2, 3, 4), (25, 35, 25, 15))[0]
        words = [rng.choices(makers, weights)[0]() for _ in range(size)]
        queries.append(" ".join(words))
    return queries


def tasks(vocab: Vocabulary, seed: int,
          count: int) -> list[tuple[dict[str, Any], str, str]]:
    """(task, project, agent): realistic work items (SPEC §5 Task) with a title, description,
    files and PR, the current project and the assigned agent."""
    rng = random.Random(f"tasks-{seed}")
    result = []
    for number in range(count):
        slots = vocab.slots(rng)
        files = list(dict.fromkeys(vocab.path(rng) for _ in range(rng.randint(1, 2))))
        description = " ".join((
            f"{slots['ident']} {slots['verb']} in {slots['project']}; users see {slots['err']}.",
            f"The {slots['word']} in {files[0]} should back off up to {slots['cfg']}.",
        ))
        result.append(({
            "id": f"W-{9000 + number}",
            "title": f"Fix {slots['ident']} {slots['word3']} handling",
            "description": description,
            "files": files,
            "pr": {"title": f"Handle {slots['err']} in {slots['ident']}",
                   "branch": f"fix/{slots['word']}-{slots['word3']}-{number}",
                   "files": files[:2]},
        }, slots["project"], rng.choice(AGENTS)))
    return result


def task_text(task: dict[str, Any]) -> str:
    pr = task.get("pr") or {}
    parts = [task.get("title", ""), task.get("description", ""),
             " ".join(task.get("references", [])), task.get("failure_context", ""),
             task.get("source_plan", ""), " ".join(task.get("files", [])),
             pr.get("title", ""), pr.get("body", ""), pr.get("branch", ""),
             " ".join(pr.get("files", []))]
    return "\n".join(p for p in parts if p)


def inbox_note(vocab: Vocabulary, seed: int, index: int, day: datetime,
               extra_line: str = "") -> tuple[str, str]:
    """(file name, Markdown text) of a realistic ~1-3 KB inbox note."""
    rng = random.Random(f"note-{seed}-{index}")
    author = rng.choice(AGENTS + HUMANS[:2])
    project = rng.choice(PROJECTS)
    kind = rng.choices(("note", "finding", "feedback"), (70, 20, 10))[0]
    title = vocab.title(rng)
    slug = "-".join(w for w in "".join(c if c.isalnum() else " " for c in title.lower()).split()
                    [:6])
    lines = ["---", f"id: {author}-{index:05d}", f"agent: {author}", f"date: {day:%Y-%m-%d}",
             f"title: \"{title}\"", f"kind: {kind}", f"project: {project}",
             f"task: W-{rng.randint(1, 20000)}", f"pr: {rng.randint(100, 9999)}",
             f"tags: [{', '.join(rng.sample(_TAGS, 2))}]", "---", "", f"# {title}", ""]
    target = rng.randint(1000, 3000)
    sections = ("Context", "What happened", "Findings", "Decision", "Next steps")
    size = sum(len(line) + 1 for line in lines)
    for section in sections:
        if size >= target:
            break
        block = [f"## {section}", ""]
        for _ in range(rng.randint(2, 4)):
            slots = vocab.slots(rng)
            key = rng.choice(("File", "Cause", "Fix", "Config", "Error", "Owner", "Test",
                              "Impact", "Workaround"))
            value = {"File": f"`{slots['path']}`", "Cause": vocab.sentence(rng),
                     "Fix": vocab.sentence(rng), "Config": f"`{slots['cfg']} = {slots['num']}`",
                     "Error": f"`{slots['err']}` ({slots['exc']})", "Owner": slots["project"],
                     "Test": f"`{slots['tool']} {slots['path']}`",
                     "Impact": vocab.sentence(rng), "Workaround": vocab.sentence(rng)}[key]
            block.append(f"- **{key}**: {value}")
        block += ["", vocab.paragraph(rng, rng.randint(30, 90)), ""]
        lines += block
        size += sum(len(line) + 1 for line in block)
    if extra_line:
        lines += ["", extra_line, ""]
    name = f"{author}-{slug or 'note'}-{index:05d}-{day:%Y-%m-%d}.md"
    return name, "\n".join(lines)


def now_utc() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


def record_stream(vocab: Vocabulary, seed: int, start: int, stop: int,
                  base: datetime) -> Iterator[dict[str, Any]]:
    for index in range(start, stop):
        yield record_params(vocab, seed, index, base)
