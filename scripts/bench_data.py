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

import bench_tables as tables

T = TypeVar("T")
AGENTS = tables.AGENTS  # the bench names agents by these

def _parse_template(text: str) -> tuple[tuple[str, str | None], ...]:
    return tuple((literal, field) for literal, field, _, _ in string.Formatter().parse(text))


_SENTENCE_PARTS = tuple(_parse_template(t) for t in tables.SENTENCES)
_TITLE_PARTS = tuple(_parse_template(t) for t in tables.TITLES)


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
            parts = [rng.choice(tables.TOP_DIRS), *rng.sample(tables.SUB_DIRS, depth)]
            stem = rng.choice(tables.STEMS)
            ext = ".tsx" if stem[0].isupper() and rng.random() < 0.6 else rng.choice(tables.EXTS)
            if stem == "Dockerfile":
                ext = ""
            paths.add("/".join(parts) + "/" + stem + ext)
        self.paths = sorted(paths)
        rng.shuffle(self.paths)
        classes = {"TokenRefresher", "SessionStore", "RetryPolicy", "RateLimiter"}
        while len(classes) < 220:
            classes.add(rng.choice(tables.CLASS_PARTS_A) + rng.choice(tables.CLASS_PARTS_B))
        self.classes = sorted(classes)
        rng.shuffle(self.classes)
        cfgs = {"retry_backoff_ms", "cache_ttl_s", "request_timeout_ms", "max_retry_attempts"}
        while len(cfgs) < 160:
            cfgs.add("_".join((rng.choice(tables.SNAKE_A), rng.choice(tables.SNAKE_B),
                               rng.choice(tables.SNAKE_C))))
        self.cfgs = sorted(cfgs)
        rng.shuffle(self.cfgs)
        errs = {"ERR_CONN_RESET", "ERR_TOKEN_EXPIRED", "ERR_DB_DEADLOCK"}
        while len(errs) < 90:
            errs.add(f"ERR_{rng.choice(tables.ERR_A)}_{rng.choice(tables.ERR_B)}")
        self.errs = sorted(errs)
        rng.shuffle(self.errs)
        self.words = list(tables.WORDS)
        # Zipf-like weights (1/rank) give a realistic head (test, cache, retry...) and tail.
        self.word_weights = list(itertools.accumulate(1.0 / (i + tables.WORD_RANK_OFFSET)
                                                      for i in range(len(self.words))))
        self.path_weights = list(itertools.accumulate(1.0 / (i + 1) ** 0.8
                                                      for i in range(len(self.paths))))
        self.class_weights = list(itertools.accumulate(1.0 / (i + 1) ** 0.8
                                                       for i in range(len(self.classes))))
        self.makers = self._makers()
        # Everyday words, then a long tail of rare made-up words (names, jargon, typos),
        # weighted 1/(rank + offset): real notes have a big vocabulary whose head words
        # occur in a minority of notes, not in nearly all of them.
        plain = list(dict.fromkeys(tables.PLAIN.split()))
        rng.shuffle(plain)
        tail: dict[str, None] = {}
        while len(tail) < tables.TAIL_WORDS:
            parts = rng.randint(2, 3)
            tail.setdefault("".join(rng.choice(tables.SYLLABLES) for _ in range(parts)))
        self.plain = plain + [w for w in tail if w not in plain]
        self.plain_weights = list(itertools.accumulate(1.0 / (i + tables.PLAIN_RANK_OFFSET)
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
            "exc": lambda rng: _pick(rng, tables.EXCEPTIONS),
            "tool": lambda rng: _pick(rng, tables.TOOLS),
            "word": self.word, "word2": self.word, "word3": self.word,
            "verb": lambda rng: _pick(rng, tables.VERBS),
            "when": lambda rng: _pick(rng, tables.WHEN),
            "num": lambda rng: str(_pick(rng, tables.NUMBERS)),
            "num2": lambda rng: str(1 + int(rng.random() * 5000)),
            "pr": lambda rng: str(100 + int(rng.random() * 9900)),
            "project": lambda rng: _pick(rng, tables.PROJECTS),
            "method": lambda rng: _pick(rng, tables.METHODS),
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
                words.append(_pick(rng, tables.FUNCTION_WORDS))
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
            technical = rng.random() < tables.PROSE_TECH_SHARE
            sentence = self.sentence(rng) if technical else self.prose(rng)
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
    project = rng.choice(tables.PROJECTS)
    agent = rng.choice(tables.AGENTS)
    if roll < 0.3:
        scope = "global"
    elif roll < 0.8:
        scope = f"project:{project}"
    else:
        scope = f"agent:{agent}"
    kind = _weighted(rng, tables.TYPES)
    trust = _weighted(rng, tables.TRUSTS)
    author = (agent if trust == "agent" else rng.choice(tables.HUMANS) if trust == "human"
              else "engine")
    body = vocab.paragraph(rng, body_words(rng))
    paths = list(dict.fromkeys(vocab.path(rng) for _ in range(rng.randint(0, 4))))
    created = base - timedelta(seconds=rng.randint(0, 365 * 86400))
    params: dict[str, Any] = {
        "body": body, "type": kind, "scope": scope, "trust": trust,
        "source": f"bench/{kind}/{index:07d}", "title": vocab.title(rng), "author": author,
        "project": project if scope != "global" or rng.random() < 0.3 else None,
        "agent": agent if trust == "agent" or scope.startswith("agent:") else None,
        "task": f"W-{rng.randint(1, 20000)}" if rng.random() < 0.6 else None,
        "paths": paths, "tags": rng.sample(tables.TAGS, rng.randint(0, 3)),
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
        lambda: rng.choice(tables.TOOLS),
        lambda: rng.choice(tables.EXCEPTIONS),
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
        }, slots["project"], rng.choice(tables.AGENTS)))
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
    author = rng.choice(tables.AGENTS + tables.HUMANS[:2])
    project = rng.choice(tables.PROJECTS)
    kind = rng.choices(("note", "finding", "feedback"), (70, 20, 10))[0]
    title = vocab.title(rng)
    slug = "-".join(w for w in "".join(c if c.isalnum() else " " for c in title.lower()).split()
                    [:6])
    task = f"W-{rng.randint(1, 20000)}"
    if kind == "finding":  # one finding per task, for a successful one (SPEC 3.6)
        task = f"W-{seed}-{index:05d}"
    lines = ["---", f"id: {author}-{index:05d}", f"agent: {author}", f"date: {day:%Y-%m-%d}",
             f"title: \"{title}\"", f"kind: {kind}", f"project: {project}",
             f"task: {task}", f"pr: {rng.randint(100, 9999)}",
             *(["outcome: success"] if kind == "finding" else []),
             f"tags: [{', '.join(rng.sample(tables.TAGS, 2))}]", "---", "", f"# {title}", ""]
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
