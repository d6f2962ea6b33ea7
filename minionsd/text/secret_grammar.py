"""How a secret sits in text, for redact.py's generic patterns: key names, separators, values.

Three things are decided here. Which key names hold a secret (`endings`: a key must END in one
of the words, matched once at the key's end after a possessive match of the whole key). What
separates a key from its value (`=`, `:`, `:=`, `=>`). And what counts as a literal value: a
reference (`$VAR`, `${{ secrets.X }}`, `os.environ["X"]`), a placeholder (`<your-token>`,
`xxxx`), a type annotation (`password: str`) or a JSON literal is not one, so it is kept.
Everything is a regex fragment; redact.py compiles the patterns.
"""

from __future__ import annotations

import re

# A value must not begin with a marker: that is what keeps the patterns from chewing on their
# own output.
NOT_MARKER_BODY = r"\[REDACTED:"
NOT_MARKER = rf"(?!{NOT_MARKER_BODY})"


def endings(*words: str, whole: tuple[str, ...] = ()) -> str:
    """A regex that holds where the text just before ends in one of `words` (any case).

    "api key" stands for api_key, api-key and apikey. Used after a possessive key match, so
    each key is tested once at its end instead of being searched for a word inside it. A word
    in `whole` counts only as the entire key (`pass=`, but not `bypass=`).
    """
    variants = sorted({sep.join(w.split(" ")) for w in words for sep in ("_", "-", "")})
    checks = [f"(?<={re.escape(v)})" for v in variants]
    checks += [rf"(?<={re.escape(w)})(?<![\w.-]{re.escape(w)})" for w in whole]
    return "(?:" + "|".join(checks) + ")"


def assignment_prefilter(*words: str, whole: tuple[str, ...] = ()) -> str:
    """A cheap scan for where `assignment(endings(*words, whole=whole))` could match, run on
    the lower-cased text of a pure-ASCII input: a separator's `:` or `=` right after the last
    three characters of a key ending, or after a closing quote, `]`, space or tab.

    (Any match has its separator's first character after the key ending, an optional closer
    and horizontal space, so one of the three lookbehinds holds there.)
    """
    variants = {sep.join(w.split(" ")) for w in words for sep in ("_", "-", "")} | set(whole)
    by_width: dict[int, set[str]] = {}
    for variant in variants:
        tail = variant[-3:].lower()
        by_width.setdefault(len(tail), set()).add(re.escape(tail))
    between = r"[\"'\] \t]"
    checks = []
    for tails in by_width.values():
        ends = "(?:" + "|".join(sorted(tails)) + ")"
        checks += [rf"(?<={ends}[:=])", rf"(?<={ends}{between}[:=])"]
    checks.append(rf"(?<={between}{between}[:=])")
    return "[:=](?:" + "|".join(checks) + ")"


# A key is one run of identifier characters (JSON/YAML/env/INI/CLI spellings alike), matched
# possessively: it is never re-tried at a shorter length, which keeps the scan linear.
# (Not inside `${NAME:-default}`: that NAME is a variable, not a key.)
KEY = r"(?P<key>(?<![\w.-])(?<!\$\{)[\w.-]{1,64}+)"
_PASSWORD_WORDS = ("password", "passwd", "passphrase", "_pass", "_pwd", "psk")
PASSWORD_KEYS = endings(*_PASSWORD_WORDS, whole=("pass",))
PASSWORD_PREFILTER = assignment_prefilter(*_PASSWORD_WORDS, whole=("pass",))
_AWS_SECRET_WORDS = ("secret access key", "aws secret key", "session token")
AWS_SECRET_KEYS = endings(*_AWS_SECRET_WORDS)
AWS_SECRET_PREFILTER = assignment_prefilter(*_AWS_SECRET_WORDS)
_SECRET_WORDS = (
    "secret", "token", "api key", "access key", "secret key", "private key", "credential",
    "credentials", "auth key", "signing key", "encryption key", "app key", "application key",
    "master key", "client key", "account key", "subscription key", "license key", "sas key",
    "key base", "_auth", '"auth', "dockerconfigjson", "dockercfg", "tls.key", "mnemonic",
    "seed phrase", "authtoken", "_pat",
)
SECRET_KEYS = endings(*_SECRET_WORDS)
SECRET_PREFILTER = assignment_prefilter(*_SECRET_WORDS)
# What every key SECRET_KEYS accepts holds (case-folded): redact.py skips the pattern for a
# text with none of them. Keep in step with the words above.
SECRET_KEY_NEEDLES = ("secret", "token", "key", "credential", "auth", "dockerconfigjson",
                      "dockercfg", "mnemonic", "seed", "_pat")
# Between key and value: an optional closing quote of a JSON/YAML key (and `]` of a subscript,
# `app.config['SECRET_KEY'] = ...`), then =, :, := or =>, horizontal space only (an empty
# `password=` never swallows the next line).
_CLOSER = r"(?:[\"']\]?|\])"
_SEPARATOR = r"[ \t]*(?::=|=>|=|:)"
ASSIGN = rf"(?P<closer>{_CLOSER})?{_SEPARATOR}[ \t]*"
# Where a bare value ends.
BARE_END = r"(?=[\s\"'`&,;<>)\]}]|$)"
# A YAML block scalar's indicator (`key: |`, `key: >-`, `key: |2`) ending its line: the value
# is on the indented lines below, never the indicator itself.
BLOCK_INDICATOR = r"[|>][0-9+-]{0,2}(?=[ \t]*(?:#[^\n]*)?(?:\r?\n|\Z))"
# A block scalar's lines: each indented deeper than the key (`indent` is the line's own
# indentation; after a list item's `- `, in group `dash`, the key sits two columns further),
# blank lines between them included; `inner` is the first line's indentation. Possessive: each
# line is tried once.
_DEEPER = r"(?P=indent)(?(dash)[ \t]{2}[ \t]++|[ \t]++)"
_BLOCK_LINE = r"[^\s][^\n]*+(?:\n|\Z)"
BLOCK_LINES = (rf"(?:[ \t]*\r?\n)*+(?P<inner>{_DEEPER}){_BLOCK_LINE}"
               rf"(?:(?:[ \t]*\r?\n)*+{_DEEPER}{_BLOCK_LINE})*+")
# What is not a literal secret, even after a secret-named key:
#   a reference ($VAR, ${VAR}, $(cmd), %VAR%, {{ template }}), a placeholder (<your-token>,
#   xxxx, ****, ..., your_api_key_here), and - unquoted only - code: a call or subscript
#   (os.environ[...], getenv(...)), a dotted name (settings.API_TOKEN), a CONSTANT_NAME, a type
#   annotation (password: str, token: Optional[str]), or the `=` of a comparison.
REFERENCE = r"(?:\$|%[A-Za-z_]\w{0,60}%|\{\{|<[^<>\n]{1,60}>)"
PLACEHOLDER = r"(?:x{3,}|X{3,}|\*{3,}|\.{3,}|…|(?i:your)[_-][A-Za-z0-9_-]{1,40})"
# The same, for a URL's password: `user:password@`, `user:$PASS@`, `user:<pw>@` are examples.
URL_PLACEHOLDER = (
    r"(?!(?:\$\{?\w{1,60}\}?|<[^<>@\s]{1,60}>|x{3,}|X{3,}|\*{3,}|(?i:password|passwd|pass|pw|secret))@)"
)
CODE = (
    r"(?:[A-Za-z_]\w{0,60}(?:\.[A-Za-z_]\w{0,60}){0,8}(?:\((?-i:[\"')a-z_])|\[[\"'])"
    r"|[A-Za-z_]\w{0,60}(?:\.[A-Za-z_]\w{0,60}){1,8}" + BARE_END
    + r"|(?-i:[A-Z]{1,30}(?:_[A-Z]{1,30}){1,8})" + BARE_END
    + r"|(?-i:str|bytes|int|float|bool|string|number|boolean|SecretStr|SecretBytes|Optional"
    r"|Union|Any|object|List|Dict|list|dict)" + BARE_END
    + r"|(?-i:Optional|Union|Literal|List|Dict|list|dict|Annotated)\[|=)"
)
# A quoted "value" that starts with `)`, `,` ... is the end of a string holding the key
# (`input('Password: ')`), not a value.
# The request modes of fetch()'s `credentials` option ("include", "same-origin", "omit") are
# words of an API, not secrets.
FETCH_MODE = r"(?:include|same-origin|omit)"
NOT_LITERAL_QUOTED = (
    rf"(?!{NOT_MARKER_BODY}|{REFERENCE}|{PLACEHOLDER}[\"']|{FETCH_MODE}[\"']|[)\]}},;])"
)
# After a colon, a lower-case word followed by another is prose ("the API token: see the
# vault"), not a YAML value.
PROSE = r"(?:(?<=:)|(?<=:[ \t]))(?-i:[a-z]{1,12}[ \t]+\w)"
_NOT_LITERAL = (
    rf"{NOT_MARKER_BODY}|{REFERENCE}|{PLACEHOLDER}{BARE_END}|{CODE}"
    r"|(?:null|none|true|false|nil|undefined)\b" + rf"|{FETCH_MODE}\b"
    r"|[{\[]|![A-Za-z]"  # a YAML/JSON structure opens, or a YAML tag (!vault, !Ref)
    rf"|{BLOCK_INDICATOR}"  # a YAML block scalar: its lines are yaml_block_secret's
)
NOT_LITERAL_BARE = rf"(?!{_NOT_LITERAL}|{PROSE})"
# A value: double-quoted (JSON escapes allowed), single-quoted, or one bare word. A quote left
# open (output cut mid-line) runs to the end of the line.
_WORD = r"[^\s\"'`&,;<>]+"
_QUOTED = (
    r"(?P<dq>\")" + NOT_LITERAL_QUOTED + r"(?:[^\"\\\n]|\\.)+\"?"
    r"|(?P<sq>')" + NOT_LITERAL_QUOTED + r"[^'\n]+'?"
)
# After a quoted or subscripted key (code: `"token": token`, `env["API_KEY"] = api_key`), an
# unquoted lower-case name without digits is a variable, not a key (`SECRET=topsecret` in an
# env file is still a value).
IDENTIFIER = r"(?-i:[a-z_]{1,40})" + BARE_END
VALUE = rf"(?:{_QUOTED}|{NOT_LITERAL_BARE}(?(closer)(?!{IDENTIFIER})){_WORD})"
# A password after a colon is a YAML plain scalar: it runs to the end of the line (before a
# ` #` comment), so `passphrase: correct horse battery staple` goes whole. No prose rule here.
PASSWORD_VALUE = (
    rf"(?:{_QUOTED}|(?!{_NOT_LITERAL})"
    rf"(?:(?:(?<=:)|(?<=:[ \t])){_WORD}(?:[ \t]+(?!#){_WORD})*|{_WORD}))"
)
# Assignments keep a quoted value's quotes, so JSON and YAML stay well formed. (A group that did
# not take part in the match substitutes as "".)
ASSIGNMENT_TEMPLATE = "\\g<key>\\g<sep>\\g<dq>\\g<sq>{marker}\\g<dq>\\g<sq>"


def assignment(key_endings: str, value: str = VALUE) -> str:
    """Key, separator and value as the named groups `key`, `sep`, `value` (and `dq`/`sq`)."""
    # The lookahead for a separator comes before the key's endings: most words of a text are
    # followed by none, and fail there at once instead of trying every ending (3x faster).
    return rf"{KEY}(?={_CLOSER}?{_SEPARATOR}){key_endings}(?P<sep>{ASSIGN})(?P<value>{value})"


# Any other `*_KEY` / `*-KEY` name, except the ones that name data rather than a credential
# (a cache key, a sort or partition key, an idempotency key, an object key in a bucket...).
_DATA_KEYS = (
    "cache", "sort", "partition", "primary", "foreign", "idempotency", "public", "routing",
    "shard", "lookup", "group", "hash", "row", "object", "s3", "bucket", "translation",
    "i18n", "dedup", "dedupe", "unique", "composite", "range", "index", "map", "dict",
    "metric", "label",
)
OTHER_KEYS = endings("_key", "-key") + "".join(
    f"(?<!{word}{sep}key)" for word in _DATA_KEYS for sep in ("_", "-"))
OTHER_PREFILTER = assignment_prefilter("_key", "-key")
# For such a key: only a long value with a digit, so SORT_KEY=name stays.
RANDOM = r"(?=[A-Za-z0-9+/=_.:~-]{0,200}[0-9])[A-Za-z0-9+/=_.:~-]{16,}"
RANDOM_VALUE = (
    rf"(?:(?P<dq>\"){RANDOM}\"|(?P<sq>'){RANDOM}'|{NOT_LITERAL_BARE}{RANDOM}{BARE_END})"
)
# A credential on a command line: quoted, or one word.
CLI_VALUE = rf"{NOT_MARKER}(?![\"']?\$)(?:'[^'\n]+'|\"[^\"\n]+\"|[^\s\"'`&;|<>]+)"
# The rest of a command line before the flag, bounded. The command word ends where a word
# does (`mysql `, `mysql.exe`, `"C:\\tools\\mysql" `, `$(which mysql) `), but not at a colon:
# the `http` of a URL (`http://`) starts no scan of the line after it.
CMD_ARGS = r"(?=[^\w:\n])[^\n]{0,200}?[ \t]"
