"""Secret redaction for text that minionsd derives from what agents and people write.

The module owns one invariant: text returned by `redact` holds none of the secret shapes in
`PATTERNS`; each is replaced by a marker `[REDACTED:<kind>]` naming its family. Where the
surrounding text is useful and harmless it stays: `Bearer `, `password=`, a URL's scheme, user
name and host, a connection string's other fields.

Design choices:

* The pattern set is data. `PATTERNS` is an ordered tuple of `Pattern(kind, description,
  regex, template)`, one entry per family; docs/security.md describes the same list, and tests
  walk it. Vendor tokens recognisable by their prefix alone are rows of
  `secret_shapes.TOKENS`, run as one alternation (redact_tokens.py); the grammar
  of `key = value` (which keys, which values are literals) lives in `secret_grammar`.
* Order matters. A PEM block goes first (its body may hold anything), then webhook URLs and the
  vendor tokens (their markers say the most), then credentials in URLs, connection strings and
  JWTs, then the generic rules: Authorization and Cookie values, client password flags,
  secret-named keys, secret-named command-line flags, bare bearer tokens. A later pattern never
  has to undo an earlier one: every value pattern refuses to start at a marker, so
  `password=[REDACTED:password]` is left alone.
* Only literal values go. After a secret-named key, a reference (`$GITHUB_TOKEN`, `${VAR}`,
  `{{ secrets.X }}`, `os.environ["X"]`, `settings.API_TOKEN`), a placeholder (`<your-token>`,
  `xxxx`), a type annotation (`password: str`) or a JSON literal (`null`) is kept.
* `redact` reapplies the whole set until the text stops changing (at most `MAX_ROUNDS`), so a
  secret that only shows its shape once a neighbour was replaced is still caught, and
  `redact(redact(x)) == redact(x)`. It is deterministic: the same text always gives the same
  output, which consolidation's crash recovery relies on.
* Every quantifier is bounded, possessive, or runs over a character class that excludes what
  follows it, so the work stays linear in the input size; megabytes of text are fine. A
  pattern whose `needles` all miss the text is not run at all (the needles of all patterns
  are tested together, `secret_pattern.Passes`), nor is one whose `prefilter` finds nothing
  in a pure-ASCII text.
* It never raises on a `str`: the patterns are compiled at import and `re.sub` on a string
  cannot fail.
"""

from __future__ import annotations

import re

from minionsd.text import secret_grammar as g
from minionsd.text.redact_tokens import TOKEN_PATTERNS, redact_tokens
from minionsd.text.secret_pattern import MARKER_PREFIX, Passes, Pattern
from minionsd.text.secret_pattern import make_pattern as _p

__all__ = ["MARKER_PREFIX", "PATTERNS", "Pattern", "kinds", "redact"]
MAX_ROUNDS = 4


PATTERNS: tuple[Pattern, ...] = (
    _p(
        "private_key",
        "PEM private-key block, BEGIN to END (to the end of the text when END is missing)",
        r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"
        r".*?(?:-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----|\Z)",
        flags=re.DOTALL,
        needles=("private key",),
    ),
    _p(
        "slack_webhook",
        "Slack incoming-webhook or workflow URL",
        r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_-]{8,}",
        needles=("hooks.slack.com",),
    ),
    _p(
        "yaml_block_secret",
        "YAML block scalar under a key named for a secret (`password: |`, "
        "`aws_secret_access_key: >-`, `api_token: |2`): every line of the block goes, and the "
        "key keeps a one-line block holding the marker, so the YAML still parses",
        r"(?m)(?P<head>^(?P<indent>[ \t]*)(?P<dash>-[ \t]+)?(?P<q>[\"']?)" + g.KEY
        + r"(?=(?P=q)[ \t]*:[ \t]*[|>])"
        + "(?:" + "|".join((g.PASSWORD_KEYS, g.SECRET_KEYS, g.AWS_SECRET_KEYS, g.OTHER_KEYS))
        + r")(?P=q)[ \t]*:[ \t]*)" + g.BLOCK_INDICATOR + r"[ \t]*(?:#[^\n]*)?\r?\n"
        + g.BLOCK_LINES,
        "\\g<head>|\n\\g<inner>{marker}\n",
        re.IGNORECASE,
        needles=("|", ">"),
    ),
    _p(
        "webhook_url",
        "Discord or Microsoft Teams webhook URL (the URL is the credential)",
        r"https://(?:(?:canary\.|ptb\.)?discord(?:app)?\.com/api/webhooks/[0-9]{5,}/"
        r"[A-Za-z0-9_-]{20,}|(?:[A-Za-z0-9-]{1,63}\.webhook\.office\.com/webhookb2"
        r"|outlook\.office(?:365)?\.com/webhook)/[^\s\"'<>]{20,})",
        needles=("/api/webhooks/", "webhook.office.com", "outlook.office"),
    ),
    *TOKEN_PATTERNS,
    _p(
        "connection_string",
        "password in a database URL (postgres, postgresql, mysql, mariadb, mongodb, "
        "mongodb+srv, redis, rediss, amqp); scheme, user and host kept",
        r"(?P<head>\b(?:postgres(?:ql)?|mysql|mariadb|mongodb(?:\+srv)?|rediss?|amqps?)"
        r"(?:\+[a-z0-9]+)?://[^\s:/@?#\[\]]*:)" + g.NOT_MARKER + g.URL_PLACEHOLDER
        + r"(?P<pw>[^\s/?#]+)@",
        "\\g<head>{marker}@",
        re.IGNORECASE,
        needles=("://",),
    ),
    _p(
        "url_password",
        "password in any other URL (scheme://user:pass@host); scheme, user and host kept",
        r"(?P<head>\b[a-zA-Z][a-zA-Z0-9+.-]{0,30}://[^\s:/@?#\[\]]*:)"
        + g.NOT_MARKER
        + g.URL_PLACEHOLDER
        + r"(?P<pw>[^\s/?#]+)@",
        "\\g<head>{marker}@",
        needles=("://",),
    ),
    _p(
        "azure_key",
        "key or signature in an Azure connection string (AccountKey=, SharedAccessKey=, "
        "SharedAccessSignature=); the other parts kept",
        r"(?P<head>\b(?:AccountKey|SharedAccessKey|SharedAccessSignature|SharedSecret)"
        r"[ \t]*=[ \t]*)" + g.NOT_MARKER + r"[^;\s\"'<>]+",
        "\\g<head>{marker}",
        re.IGNORECASE,
        needles=("accountkey", "sharedaccess", "sharedsecret"),
    ),
    _p(
        "connection_password",
        "password in a key=value connection string spelled Pwd= (`Server=db;Uid=app;Pwd=...`)",
        r"(?P<head>;[ \t]*pwd[ \t]*=[ \t]*)" + g.NOT_MARKER + r"[^;\n\"']+",
        "\\g<head>{marker}",
        re.IGNORECASE,
        needles=("pwd",),
    ),
    _p(
        "aws_secret_key",
        "AWS secret access key or session token after its key name "
        '(aws_secret_access_key=..., "SecretAccessKey": "...", aws_session_token: ...)',
        g.assignment(g.AWS_SECRET_KEYS),
        g.ASSIGNMENT_TEMPLATE,
        re.IGNORECASE,
        needles=("secret_access", "secret-access", "secretaccess", "secret_key", "secret-key",
                 "secretkey", "session_token", "session-token", "sessiontoken"),
        prefilter=g.AWS_SECRET_PREFILTER,
    ),
    _p(
        "aws_secret_key_csv",
        "AWS secret access key in the credentials CSV the console hands out (the 40 characters "
        "after the access key id and a comma or tab)",
        r"(?<=\[REDACTED:aws_access_key_id\][,\t])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+])",
        needles=("aws_access_key_id",),
    ),
    _p(
        "jwt",
        "JSON Web Token: three base64url segments, the first starting eyJ",
        r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}",
        needles=("eyj",),
    ),
    _p(
        "authorization",
        "Authorization header or field value; a scheme word in front (Bearer, Basic, Token, "
        "SSWS, Digest, ...) is kept",
        r"(?P<head>\b(?:proxy-)?authorization[\"']?[ \t]*[:=][ \t]*[\"']?"
        r"(?>(?:[A-Za-z][A-Za-z0-9_-]{1,30}[ \t]+)?))" + g.NOT_MARKER + r"(?!\$|\{|<)"
        + rf"(?!{g.PLACEHOLDER}|(?-i:[A-Z]{{1,30}}(?:_[A-Z]{{1,30}}){{1,8}}){g.BARE_END}"
        r"|(?-i:[a-z]{1,12}[ \t]+[a-z]))"  # prose: "authorization: users cannot log in"
        r"(?:[\w-]{1,30}=\"[^\"\n]{1,500}\"|[^\s\"',;]{6,})",
        "\\g<head>{marker}",
        re.IGNORECASE,
        needles=("authorization",),
    ),
    _p(
        "cookie",
        "Cookie or Set-Cookie header value (session ids are credentials)",
        r"(?P<head>\b(?:set-)?cookie:[ \t]*)" + g.NOT_MARKER + r"(?=[^\n\"']{0,200}=)"
        r"[^\n\"']+",
        "\\g<head>{marker}",
        re.IGNORECASE,
        needles=("cookie",),
    ),
    _p(
        "url_signature",
        "signature or credential in a URL query (sig=, signature=, X-Amz-Signature=, ...)",
        r"(?P<head>[?&](?:sig|signature|x-amz-signature|x-amz-credential|x-goog-signature)=)"
        + g.NOT_MARKER
        + r"[^&\s#\"'<>]+",
        "\\g<head>{marker}",
        re.IGNORECASE,
        needles=("sig", "x-amz-", "x-goog-"),
    ),
    _p(
        "cli_password",
        "password or token after a client's credential flag: mysql -pVALUE, sshpass -p V, "
        "docker/podman/helm login -p V, twine -p V, redis-cli -a V, curl -u user:V, "
        "mongosh -p V, sqlcmd -P V, ldapsearch -w V, 7z -pV, zip -P V, keytool -storepass V, "
        "aws configure set aws_secret_access_key V, ngrok authtoken V, "
        "openssl -passin pass:V",
        # The first-letter class lets the scan skip most positions without trying each
        # command of the alternation (a third of the cost).
        r"(?=[abcdhjklmnoprstuwz7-])(?P<head>(?:\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlsh|mariadb|mariadb-dump)"
        + g.CMD_ARGS + r"-p(?=[^\s-])"
        r"|\bsshpass" + g.CMD_ARGS + r"-p"
        r"|\b(?:docker|podman|buildah|skopeo|nerdctl|oras|crane|helm(?:[ \t]+registry)?)"
        r"[ \t]+login" + g.CMD_ARGS + r"-p(?=[ \t])"
        r"|\btwine" + g.CMD_ARGS + r"-p(?=[ \t])"
        r"|\bredis-cli" + g.CMD_ARGS + r"-a(?=[ \t])"
        r"|\b(?:curl|wget|http)" + g.CMD_ARGS + r"(?:-u|--user|--proxy-user)[ \t=]+['\"]?"
        r"[^\s:'\"]{0,100}:"
        r"|\b(?:mongo|mongosh|mongodump|mongorestore|mongoexport|mongoimport)" + g.CMD_ARGS
        + r"-p(?=[ \t])"
        r"|\b(?:sqlcmd|bcp)" + g.CMD_ARGS + r"-P(?=[ \t])"
        r"|\bldap(?:search|add|modify|delete|passwd|whoami)" + g.CMD_ARGS + r"-w(?=[ \t])"
        r"|\b(?:7z|7za|7zr)" + g.CMD_ARGS + r"-p(?=[^\s-])"
        r"|\b(?:zip|unzip)" + g.CMD_ARGS + r"-P(?=[ \t])"
        r"|\b(?:keytool|jarsigner)" + g.CMD_ARGS
        + r"-(?:store|key|srcstore|deststore|srckey|destkey)pass(?=[ \t])"
        r"|\baws[ \t]+configure[ \t]+set[ \t]+(?:aws_secret_access_key|aws_session_token)"
        r"(?=[ \t])"
        r"|\bngrok(?:[ \t]+config[ \t]+add-authtoken|[ \t]+authtoken)(?=[ \t])"
        r"|-pass(?:in|out)?[ \t]+pass:)[ \t]*)" + g.CLI_VALUE,
        "\\g<head>{marker}",
        # Each command with the flag it needs (--user and --proxy-user hold "-u"); the flag is
        # tested first, as the rarer string.
        needles=(("-p", "mysql"), ("-p", "mariadb"), ("-p", "sshpass"), ("-p", "login"),
                 ("-p", "twine"), ("-a", "redis-cli"), ("-u", "curl"), ("-u", "wget"),
                 ("-u", "http"), ("-p", "mongo"), ("-p", "sqlcmd"), ("-p", "bcp"),
                 ("-w", "ldap"), ("-p", "7z"), ("-p", "zip"), ("pass", "keytool"),
                 ("pass", "jarsigner"), "configure", "ngrok", "pass:"),
    ),
    _p(
        "netrc_password",
        "password in a .netrc entry (machine HOST login USER password VALUE)",
        r"(?P<head>\b(?:machine[ \t\r\n]+\S{1,256}|default)[ \t\r\n]+login[ \t\r\n]+\S{1,256}"
        r"[ \t\r\n]+password[ \t\r\n]+)" + g.NOT_MARKER + r"\S+",
        "\\g<head>{marker}",
        needles=("machine", "default"),
        prefilter=r"login[ \t\r\n]+\S+[ \t\r\n]+password[ \t\r\n]",
    ),
    _p(
        "xml_secret",
        "text of an XML element or NuGet/.config entry named for a secret (a password, "
        'apiKey or token element; key="ClearTextPassword" value="...")',
        r"(?P<head><(?P<tag>[\w.-]{0,40}(?:password|passwd|secret|token|api[_-]?key|apikey"
        r"|access[_-]?key|private[_-]?key))>|\bkey=\"[\w.-]{0,40}(?:password|secret|token"
        r"|api[_-]?key|apikey)\"[ \t]+value=\")" + g.NOT_MARKER + r"(?!\$\{|\{)[^<\"\n]{1,500}"
        r"(?=</|\")",
        "\\g<head>{marker}",
        re.IGNORECASE,
        needles=("<", 'key="'),
    ),
    _p(
        "pgpass_password",
        "password field of a .pgpass line (host:port:database:user:password)",
        # database and user each hold a letter or `*`, so times and addresses (10:15:30:45:60) stay
        r"(?m)(?P<head>^[A-Za-z0-9.*_-]{1,253}:(?:[0-9]{1,5}|\*)"
        r":(?=[^:\s]{0,62}[A-Za-z*_])[^:\s]{1,63}:(?=[^:\s]{0,62}[A-Za-z*_])[^:\s]{1,63}:)"
        + g.NOT_MARKER + r"(?![*]$)\S+$",
        "\\g<head>{marker}",
        needles=(":",),
        prefilter=r":(?:[0-9]{1,5}|\*):[^:\s]{1,63}:[^:\s]{1,63}:",
    ),
    _p(
        "putty_private_key",
        "private half of a PuTTY .ppk key (the Private-Lines block)",
        r"(?P<head>Private-Lines:[ \t]*[0-9]{1,3}\r?\n)(?:[A-Za-z0-9+/=]{1,128}(?:\r?\n|\Z)){1,64}",
        "\\g<head>{marker}\n",
        needles=("private-lines",),
    ),
    _p(
        "password",
        'value after a password-named key: password=, DB_PASSWORD: , "passwd": "...", '
        "passphrase=, SMTP_PASS=, DB_PWD=; covers key=value DSNs such as `host=db password=...`",
        g.assignment(g.PASSWORD_KEYS, g.PASSWORD_VALUE),
        g.ASSIGNMENT_TEMPLATE,
        re.IGNORECASE,
        needles=("pass", "pwd", "psk"),
        prefilter=g.PASSWORD_PREFILTER,
    ),
    _p(
        "password_in_prose",
        "password written out in a sentence (`the admin password is Xk2...`): one word of 8 or "
        "more characters with a digit, a lower-case and an upper-case letter",
        r"(?P<head>\bpass(?:word|phrase|wd)[ \t]+(?:is|was|now|=)[ \t]+(?:now[ \t]+)?[\"'`]?)"
        + g.NOT_MARKER + r"(?=\S{0,200}[0-9])(?-i:(?=\S{0,200}[a-z])(?=\S{0,200}[A-Z]))"
        r"[^\s\"'`,;]{8,}(?<![.!?])",
        "\\g<head>{marker}",
        re.IGNORECASE,
        needles=("pass",),
    ),
    _p(
        "secret",
        "value after a secret-named key: token=, api_key=, client_secret: , "
        '"accessToken": "...", DD_APP_KEY=, private_key=, credentials=, "auth": "..."',
        g.assignment(g.SECRET_KEYS),
        g.ASSIGNMENT_TEMPLATE,
        re.IGNORECASE,
        needles=g.SECRET_KEY_NEEDLES,
        prefilter=g.SECRET_PREFILTER,
    ),
    _p(
        "generic_key",
        "long random value (16+ characters with a digit) after any other name ending _KEY or "
        "-KEY, except names of data keys (CACHE_KEY, SORT_KEY, IDEMPOTENCY_KEY, S3_KEY, ...)",
        g.assignment(g.OTHER_KEYS, g.RANDOM_VALUE),
        g.ASSIGNMENT_TEMPLATE,
        re.IGNORECASE,
        needles=("_key", "-key"),
        prefilter=g.OTHER_PREFILTER,
    ),
    _p(
        "cli_secret",
        "value after a command-line flag named for a secret: --password VALUE, --token VALUE, "
        "--passphrase VALUE, --api-key VALUE",
        r"(?P<head>(?<!\S)(?:--?[A-Za-z0-9-]{0,40}"
        r"(?:password|passwd|passphrase|token|secret|api-?key)|--pass)[ \t]+)"
        + g.NOT_MARKER + r"(?![-\"'$])[^\s\"'`&,;<>]+",
        "\\g<head>{marker}",
        re.IGNORECASE,
        needles=("pass", "token", "secret", "apikey", "api-key"),
    ),
    _p(
        "bearer",
        "bearer token anywhere (Bearer and 16 or more token characters with a digit); the word "
        "is kept",
        # The digit requirement keeps prose ("bearer tokenization ...") out.
        r"(?P<head>\bbearer[ \t]+)(?=[A-Za-z0-9._~+/=-]*[0-9])[A-Za-z0-9._~+/=-]{16,}",
        "\\g<head>{marker}",
        re.IGNORECASE,
        needles=("bearer",),
    ),
)
_TOKEN_KINDS = frozenset(p.kind for p in TOKEN_PATTERNS)
_PASSES = tuple(p for p in PATTERNS if p.kind not in _TOKEN_KINDS)


# "k" or "-" is inside 29 of the 54 single needles, and many short texts (task fields) hold
# neither.
_PLAN = Passes(_PASSES, guards=("k", "-"))
_TOKEN_STEP = next(i for i, p in enumerate(_PASSES) if p.kind == "webhook_url")


_TOKEN_BIT = 1 << _TOKEN_STEP


def _redact_once(text: str) -> str:
    """One round of every pass over `text`: a pass runs when its needles are in the case-folded
    text and, for a pure-ASCII text, its prefilter finds a place in the lower-cased text. Only
    the passes let through are visited (the token table's step always is), in order."""
    lowered = text.casefold()
    allowed = _PLAN.allowed(lowered)
    ascii_text = text.isascii()
    index = -1
    while True:
        ahead = (allowed | _TOKEN_BIT) >> (index + 1)
        if not ahead:
            return text
        index += (ahead & -ahead).bit_length()  # the next pass let through
        pattern = _PASSES[index]
        if allowed >> index & 1 and not (
            ascii_text and pattern.prefilter and not pattern.prefilter_regex.search(lowered)
        ):
            text, count = pattern.regex.subn(pattern.replacement, text)
            if count:
                lowered = text.casefold()
                allowed = _PLAN.allowed(lowered)
                ascii_text = text.isascii()
        if index == _TOKEN_STEP:  # the token table runs where its rows are listed
            tokens_out = redact_tokens(text)
            if tokens_out != text:
                text = tokens_out
                lowered = text.casefold()
                allowed = _PLAN.allowed(lowered)
                ascii_text = text.isascii()


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
