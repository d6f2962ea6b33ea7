-- The web view's sessions and one-time sign-in links (SPEC §5.3), by the SHA-256 of the
-- secret the browser holds; each belongs to a gateway token by name and lives only while it
-- does.
CREATE TABLE web_sessions (
    digest     TEXT PRIMARY KEY,
    kind       TEXT NOT NULL CHECK (kind IN ('session', 'link')),
    token_name TEXT NOT NULL,
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    used_at    TEXT
) WITHOUT ROWID;
CREATE INDEX web_sessions_expires ON web_sessions (expires_at);
