"""The word tables scripts/bench_data.py draws its synthetic engineering notes from: projects,
agents, paths, identifiers, error codes, an engineering vocabulary (most frequent first),
sentence templates and English filler. Data only; bench_data.py does the drawing.
"""

from __future__ import annotations

PROJECTS = ("atlas", "beacon", "cobalt", "delta-web", "ember", "falcon-api", "garnet",
            "harbor")
AGENTS = ("dallas", "ripley", "lambert", "kane", "ash", "parker", "brett", "bishop")
HUMANS = ("yana", "tomas", "priya", "marek")
TYPES = (("semantic", 60), ("episodic", 25), ("procedural", 15))
TRUSTS = (("agent", 55), ("human", 20), ("system", 15), ("external", 10))

TOP_DIRS = ("src", "web", "lib", "services", "tests", "scripts", "api", "pkg", "cmd", "infra")
SUB_DIRS = ("auth", "billing", "cache", "components", "db", "deploy", "http", "jobs", "login",
             "metrics", "net", "queue", "search", "session", "storage", "sync", "ui", "utils",
             "worker", "config", "payments", "notifications", "retry", "scheduler")
STEMS = ("token_refresh", "LoginForm", "session_store", "retry_policy", "RateLimiter",
          "cache_client", "ConnectionPool", "user_service", "invoice", "webhook_handler",
          "PaymentSheet", "migrations", "backoff", "health_check", "feature_flags", "Dashboard",
          "queue_consumer", "index", "settings", "http_client", "SearchBar", "job_runner",
          "uploader", "schema", "conftest", "test_token_refresh", "test_retry_policy",
          "useSession", "router", "middleware", "serializer", "lock_manager", "AuthProvider",
          "ws_gateway", "cron", "build", "Dockerfile", "release", "metrics_exporter", "models")
EXTS = (".py", ".py", ".py", ".ts", ".tsx", ".tsx", ".go", ".rs", ".sql", ".yaml", ".md",
         ".js", ".toml", ".sh")

CLASS_PARTS_A = ("Token", "Session", "Retry", "Cache", "Login", "Payment", "Queue", "Search",
                  "Http", "Connection", "Rate", "Job", "Webhook", "Invoice", "Feature", "Upload",
                  "Metrics", "Lock", "Schema", "Auth", "User", "Event", "Build", "Deploy")
CLASS_PARTS_B = ("Refresher", "Store", "Policy", "Client", "Manager", "Handler", "Limiter",
                  "Pool", "Consumer", "Runner", "Provider", "Validator", "Serializer",
                  "Exporter", "Scheduler", "Gateway", "Builder", "Worker", "Controller")
SNAKE_A = ("retry", "cache", "token", "session", "request", "connect", "read", "write",
            "queue", "batch", "lock", "build", "deploy", "max", "min", "idle", "pool", "http",
            "db", "upload", "webhook", "rate")
SNAKE_B = ("backoff", "ttl", "timeout", "size", "limit", "interval", "count", "window",
            "attempts", "delay", "threshold", "budget", "depth")
SNAKE_C = ("ms", "s", "bytes", "max", "default", "seconds", "ratio")
ERR_A = ("CONN", "AUTH", "TOKEN", "DB", "CACHE", "QUEUE", "RATE", "TLS", "DNS", "LOCK",
          "UPLOAD", "SCHEMA", "BUILD")
ERR_B = ("RESET", "EXPIRED", "TIMEOUT", "REFUSED", "LIMITED", "INVALID", "MISSING",
          "CONFLICT", "CORRUPT", "DEADLOCK", "UNAVAILABLE", "OVERFLOW")
EXCEPTIONS = ("TimeoutError", "ConnectionResetError", "KeyError", "ValueError",
               "IntegrityError", "OperationalError", "TypeError", "AssertionError",
               "PermissionError", "JSONDecodeError", "CancelledError", "RuntimeError")
TOOLS = ("pytest", "tox", "ruff", "mypy", "jest", "vitest", "webpack", "vite", "docker",
         "kubectl", "helm", "terraform", "npm", "pnpm", "cargo", "go", "sqlite", "postgres",
         "redis", "nginx", "celery", "alembic", "playwright", "eslint", "github actions")

# Engineering words, most frequent first (weights fall off as 1/rank).
WORD_TEXT = """
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
WORDS: tuple[str, ...] = tuple(dict.fromkeys(WORD_TEXT.split()))

VERBS = ("fails", "times out", "retries", "hangs", "crashes", "leaks memory", "returns 500",
          "drops the connection", "deadlocks", "races", "logs a warning", "succeeds",
          "blocks the event loop", "rolls back", "falls back to the default", "skips the cache",
          "double-charges", "loses the session", "throws", "spins")
WHEN = ("under load", "on the first request after deploy", "when the token expires",
         "when the cache is cold", "after the migration", "in CI only", "on macOS runners",
         "with the feature flag on", "when two workers race", "on retry", "at midnight UTC",
         "behind the proxy", "with an empty payload", "when the disk is full",
         "after a restart", "during the nightly build")

SENTENCES = (
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
TITLES = (
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
METHODS = ("refresh", "get", "put", "run", "handle", "flush", "acquire", "release", "parse",
            "validate", "connect", "close", "submit", "retry", "render", "invalidate")
TAGS = ("auth", "cache", "ci", "flaky-test", "perf", "incident", "deploy", "db", "frontend",
         "backend", "security", "retry", "build", "infra", "billing", "search", "tech-debt")


# Share of body sentences built from the technical templates (the rest is plain prose).
PROSE_TECH_SHARE = 0.2
WORD_RANK_OFFSET = 8
PLAIN_RANK_OFFSET = 30
TAIL_WORDS = 4000
SYLLABLES = ("ka", "lo", "mer", "tin", "dra", "vel", "sen", "ox", "quar", "bel", "ri", "mon",
              "tas", "pel", "gor", "lin", "fa", "zu", "nor", "ek", "sta", "vi", "brum", "dal")
FUNCTION_TEXT = """
the the the a a to to of of and and in in is is it it that for on we was be this with as
not but at by or from so if when then there have has had are were been can will would
should could our they you i he she do did does just also only still even about after
"""
FUNCTION_WORDS = tuple(FUNCTION_TEXT.split())
PLAIN = """
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
NUMBERS = (3, 5, 10, 30, 50, 100, 250, 500, 1000, 3000, 30000)
