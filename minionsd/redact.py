"""Secret redaction for text that minionsd stores on an agent's behalf (episodes first).

The module owns one invariant: text returned by `redact` holds none of the secret shapes in
`PATTERNS`; each is replaced by a marker `[REDACTED:<kind>]`. Where the surrounding text is
useful and harmless it stays: `Bearer `, `password=`, a URL's scheme, user name and host.

Design choices:

* The pattern set is data. `PATTERNS` is an ordered tuple of `Pattern(kind, description,
  regex, template)`; docs/episodes.md describes the same list, and tests walk it.
* Order matters. A PEM block goes first (its body may hold anything), then the vendor shapes
  (their markers say the most), then credentials in URLs and JWTs, then the generic rules:
  Authorization values, secret-named keys, secret-named command-line flags, bare bearer tokens.
  A later pattern never has to undo an earlier one: every value pattern refuses to start at a
  marker, so `password=[REDACTED:password]` is left alone.
* `redact` reapplies the whole set until the text stops changing (at most `MAX_ROUNDS`), so a
  secret that only shows its shape once a neighbour was replaced is still caught, and
  `redact(redact(x)) == redact(x)`.
* It errs towards redacting: `password: str` in a code snippet loses its `str`. A near miss
  that is a secret's look-alike (a git sha, a UUID, a base64 image) is kept, because none of
  those carry a vendor prefix or sit after a secret-named key.
* Every quantifier is bounded or runs over a character class that excludes what follows it,
  so the work stays linear in the input size; megabytes of stdout are fine.
* It never raises on a `str`: the patterns are compiled at import and `re.sub` on a string
  cannot fail.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MARKER_PREFIX = "[REDACTED:"
MAX_ROUNDS = 4

# A value must not begin with a marker: that is what keeps the patterns from chewing on their
# own output.
_NOT_MARKER = r"(?!\[REDACTED:)"
# Characters that can sit right before a token without being part of a longer identifier.
_TOKEN_START = r"(?<![A-Za-z0-9_-])"


@dataclass(frozen=True)
class Pattern:
    """One secret shape: `regex` matches it, `template` (re.sub syntax) replaces it.

    `{marker}` in the template stands for `[REDACTED:<kind>]`.
    """

    kind: str
    description: str
    regex: re.Pattern[str]
    template: str

    @property
    def marker(self) -> str:
        return f"{MARKER_PREFIX}{self.kind}]"

    @property
    def replacement(self) -> str:
        return self.template.replace("{marker}", self.marker)


def _p(kind: str, description: str, regex: str, template: str = "{marker}", flags: int = 0):
    return Pattern(kind, description, re.compile(regex, flags), template)


# Secret-bearing key names for the generic assignment patterns. Matching is case-insensitive
# and the key may carry any prefix (DB_PASSWORD, githubToken, client_secret), but it must END
# with one of these words and be followed by `=` or `:`, so "tokenizer", "max_tokens" and
# "password reset flow" are not keys.
_PASSWORD_WORDS = r"pass(?:word|wd|phrase)"
_SECRET_WORDS = (
    r"secret|token|api[_-]?key|apikey|access[_-]?key|secret[_-]?key|private[_-]?key"
    r"|credentials?|auth[_-]?key|signing[_-]?key|encryption[_-]?key"
)
_KEY_PREFIX = r"(?<![\w.-])[\w.-]{0,64}?"
# Between key and value: an optional closing quote of a JSON/YAML key, `=` or `:`, spaces.
# Horizontal space only, so an empty `password=` never swallows the next line.
_ASSIGN = r"[\"']?[ \t]*(?:=|:)[ \t]*"
# A value: double-quoted (JSON escapes allowed), single-quoted, or one bare word. A quote left
# open (output cut mid-line) runs to the end of the line. Bare JSON literals (null, true,
# false) are not secrets and stay readable.
_VALUE = (
    r"(?:(?P<dq>\")" + _NOT_MARKER + r"(?:[^\"\\\n]|\\.)+\"?"
    r"|(?P<sq>')" + _NOT_MARKER + r"[^'\n]+'?"
    r"|" + _NOT_MARKER + r"(?!(?:null|none|true|false)\b)[^\s\"'`&,;<>]+)"
)


def _assignment(words: str) -> str:
    return rf"(?P<key>{_KEY_PREFIX}(?:{words}))(?P<sep>{_ASSIGN})(?P<value>{_VALUE})"


# Assignments keep a quoted value's quotes, so JSON and YAML stay well formed. (A group that did
# not take part in the match substitutes as "".)
_ASSIGNMENT_TEMPLATE = "\\g<key>\\g<sep>\\g<dq>\\g<sq>{marker}\\g<dq>\\g<sq>"

PATTERNS: tuple[Pattern, ...] = (
    _p(
        "private_key",
        "PEM private-key block, BEGIN to END (to the end of the text when END is missing)",
        r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"
        r".*?(?:-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----|\Z)",
        flags=re.DOTALL,
    ),
    _p(
        "slack_webhook",
        "Slack incoming-webhook or workflow URL",
        r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_-]{8,}",
    ),
    _p(
        "anthropic_key",
        "Anthropic API key (sk-ant-...)",
        _TOKEN_START + r"sk-ant-[A-Za-z0-9_-]{20,}",
    ),
    _p(
        "openai_key",
        "OpenAI API key (sk-..., sk-proj-..., sk-svcacct-..., sk-admin-...)",
        # A digit or capital somewhere keeps hyphenated prose such as "sk-some-long-word" out.
        _TOKEN_START + r"sk-(?:proj-|svcacct-|admin-)?"
        r"(?=[A-Za-z0-9_-]*[0-9A-Z])[A-Za-z0-9_-]{20,}",
    ),
    _p(
        "github_token",
        "GitHub token (ghp_, gho_, ghu_, ghs_, ghr_, github_pat_)",
        _TOKEN_START + r"(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})",
    ),
    _p(
        "gitlab_token",
        "GitLab token (glpat-, and the glrt-, gldt-, glptt- relatives)",
        _TOKEN_START + r"gl(?:pat|rt|dt|ptt)-[A-Za-z0-9_-]{20,}",
    ),
    _p(
        "slack_token",
        "Slack token (xoxb-, xoxp-, xoxa-, xoxo-, xoxs-, xoxr-, xapp-)",
        _TOKEN_START + r"(?:xox[abposr]-[A-Za-z0-9-]{10,}|xapp-[0-9]-[A-Za-z0-9-]{10,})",
    ),
    _p(
        "stripe_key",
        "Stripe secret or restricted key (sk_live_, sk_test_, rk_live_, rk_test_)",
        _TOKEN_START + r"[sr]k_(?:live|test)_[A-Za-z0-9]{16,}",
    ),
    _p(
        "google_api_key",
        "Google API key (AIza...)",
        _TOKEN_START + r"AIza[A-Za-z0-9_-]{35,}",
    ),
    _p(
        "npm_token",
        "npm access token (npm_...)",
        _TOKEN_START + r"npm_[A-Za-z0-9]{36,}",
    ),
    _p(
        "aws_access_key_id",
        "AWS access key id (AKIA, ASIA and the other four-letter prefixes + 16 characters)",
        r"\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|AROA|ANPA|ANVA|APKA)[A-Z0-9]{16}\b",
    ),
    _p(
        "connection_string",
        "password in a database URL (postgres, postgresql, mysql, mariadb, mongodb, "
        "mongodb+srv, redis, rediss, amqp); scheme, user and host kept",
        r"(?P<head>\b(?:postgres(?:ql)?|mysql|mariadb|mongodb(?:\+srv)?|rediss?|amqps?)"
        r"(?:\+[a-z0-9]+)?://[^\s:/@?#\[\]]*:)" + _NOT_MARKER + r"(?P<pw>[^\s/?#]+)@",
        "\\g<head>{marker}@",
        re.IGNORECASE,
    ),
    _p(
        "url_password",
        "password in any other URL (scheme://user:pass@host); scheme, user and host kept",
        r"(?P<head>\b[a-zA-Z][a-zA-Z0-9+.-]{0,30}://[^\s:/@?#\[\]]*:)"
        + _NOT_MARKER
        + r"(?P<pw>[^\s/?#]+)@",
        "\\g<head>{marker}@",
    ),
    _p(
        "aws_secret_key",
        "AWS secret access key or session token after its key name "
        '(aws_secret_access_key=..., "SecretAccessKey": "...", aws_session_token: ...)',
        rf"(?P<key>{_KEY_PREFIX}(?:secret[_-]?access[_-]?key|aws[_-]?secret[_-]?key"
        rf"|session[_-]?token))(?P<sep>{_ASSIGN})(?P<value>{_VALUE})",
        _ASSIGNMENT_TEMPLATE,
        re.IGNORECASE,
    ),
    _p(
        "jwt",
        "JSON Web Token: three base64url segments, the first starting eyJ",
        r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}",
    ),
    _p(
        "authorization",
        "Authorization header or field value (its scheme word, e.g. Bearer, kept)",
        r"(?P<head>\bauthorization[\"']?[ \t]*[:=][ \t]*[\"']?"
        r"(?>(?:(?:bearer|basic|token|digest|negotiate|ntlm|apikey)[ \t]+)?))"
        + _NOT_MARKER
        + r"[^\s\"',;]+",
        "\\g<head>{marker}",
        re.IGNORECASE,
    ),
    _p(
        "url_signature",
        "signature or credential in a URL query (sig=, signature=, X-Amz-Signature=, ...)",
        r"(?P<head>[?&](?:sig|signature|x-amz-signature|x-amz-credential|x-goog-signature)=)"
        + _NOT_MARKER
        + r"[^&\s#\"'<>]+",
        "\\g<head>{marker}",
        re.IGNORECASE,
    ),
    _p(
        "password",
        'value after a password-named key: password=, DB_PASSWORD: , "passwd": "...", '
        "passphrase=; covers key=value DSNs such as `host=db password=...`",
        _assignment(_PASSWORD_WORDS),
        _ASSIGNMENT_TEMPLATE,
        re.IGNORECASE,
    ),
    _p(
        "secret",
        "value after a secret-named key: token=, api_key=, client_secret: , "
        '"accessToken": "...", private_key=, credentials=',
        _assignment(_SECRET_WORDS),
        _ASSIGNMENT_TEMPLATE,
        re.IGNORECASE,
    ),
    _p(
        "cli_secret",
        "value after a command-line flag named for a secret: --password VALUE, --token VALUE",
        r"(?P<head>(?<!\S)--?[A-Za-z0-9-]{0,40}(?:password|passwd|token|secret|api-?key)"
        r"[ \t]+)" + _NOT_MARKER + r"(?![-\"'])[^\s\"'`&,;<>]+",
        "\\g<head>{marker}",
        re.IGNORECASE,
    ),
    _p(
        "bearer",
        "bearer token anywhere (`Bearer <16+ characters with a digit>`); the word is kept",
        # The digit requirement keeps prose ("bearer tokenization ...") out.
        r"(?P<head>\bbearer[ \t]+)(?=[A-Za-z0-9._~+/=-]*[0-9])[A-Za-z0-9._~+/=-]{16,}",
        "\\g<head>{marker}",
        re.IGNORECASE,
    ),
)


def _redact_once(text: str) -> str:
    for pattern in PATTERNS:
        text = pattern.regex.sub(pattern.replacement, text)
    return text


def redact(text: str) -> str:
    """Return `text` with every secret shape in `PATTERNS` replaced by `[REDACTED:<kind>]`."""
    for _ in range(MAX_ROUNDS):
        redacted = _redact_once(text)
        if redacted == text:
            break
        text = redacted
    return text


def kinds() -> tuple[str, ...]:
    """The marker kinds `redact` can produce, in pattern order."""
    return tuple(p.kind for p in PATTERNS)
