-- Bearer tokens of the HTTP gateway (`minionsctl token create`). The token itself is never
-- stored: only its SHA-256 digest (hex), so a copy of state.db lets nobody in.
CREATE TABLE gateway_tokens (
    name       TEXT PRIMARY KEY,            -- the operator's label, unique
    digest     TEXT NOT NULL UNIQUE,        -- sha256(token) in hex
    agent      TEXT NOT NULL,               -- what the token writes as, and recalls for
    scopes     TEXT NOT NULL,               -- comma-separated: read, write, admin
    project    TEXT,                        -- NULL = any project
    created_at TEXT NOT NULL,               -- ISO 8601 UTC
    expires_at TEXT,                        -- NULL = never
    last_used  TEXT,
    revoked_at TEXT
);
