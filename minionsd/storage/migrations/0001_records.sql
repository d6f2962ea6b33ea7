-- memory_records: scoped, lifecycle-aware memory; memory_fts: its FTS5 index (external content).
CREATE TABLE memory_records (
    seq              INTEGER PRIMARY KEY,          -- stable rowid for the FTS index
    id               TEXT NOT NULL UNIQUE,         -- public id, "M-..."
    type             TEXT NOT NULL CHECK (type IN ('semantic', 'episodic', 'procedural')),
    scope            TEXT NOT NULL,
    status           TEXT NOT NULL DEFAULT 'active'
                     CHECK (status IN ('active', 'superseded', 'retracted', 'expired')),
    trust            TEXT NOT NULL CHECK (trust IN ('human', 'system', 'agent', 'external')),
    title            TEXT NOT NULL DEFAULT '',
    body             TEXT NOT NULL,
    source           TEXT NOT NULL DEFAULT '',
    author           TEXT,
    project          TEXT,
    agent            TEXT,
    task             TEXT,
    pr               TEXT,
    paths            TEXT NOT NULL DEFAULT '[]',   -- JSON array of strings
    tags             TEXT NOT NULL DEFAULT '[]',   -- JSON array of strings
    importance       REAL NOT NULL DEFAULT 0.5,
    confidence       REAL NOT NULL DEFAULT 0.5,
    pinned           INTEGER NOT NULL DEFAULT 0,
    created_at       TEXT NOT NULL,
    updated_at       TEXT NOT NULL,
    expires_at       TEXT,
    superseded_by    TEXT,
    retracted_reason TEXT,
    meta             TEXT NOT NULL DEFAULT '{}',   -- JSON object
    content_hash     TEXT,                         -- idempotency key for imports (consolidation)
    search_aux       TEXT NOT NULL DEFAULT ''      -- paths, tags and identifier parts, indexed only
);
CREATE UNIQUE INDEX memory_records_content_hash ON memory_records (content_hash)
    WHERE content_hash IS NOT NULL;
CREATE INDEX memory_records_status ON memory_records (status);
CREATE INDEX memory_records_scope ON memory_records (scope);

CREATE VIRTUAL TABLE memory_fts USING fts5 (
    title, body, search_aux,
    content = 'memory_records', content_rowid = 'seq',
    tokenize = 'porter unicode61 remove_diacritics 2'
);
-- Document frequencies per indexed term, used to pick the most selective query terms.
CREATE VIRTUAL TABLE memory_vocab USING fts5vocab (memory_fts, 'row');

-- The FTS 'delete' command must receive the old column values, or stale tokens remain.
CREATE TRIGGER memory_records_ai AFTER INSERT ON memory_records BEGIN
    INSERT INTO memory_fts (rowid, title, body, search_aux)
    VALUES (new.seq, new.title, new.body, new.search_aux);
END;
CREATE TRIGGER memory_records_ad AFTER DELETE ON memory_records BEGIN
    INSERT INTO memory_fts (memory_fts, rowid, title, body, search_aux)
    VALUES ('delete', old.seq, old.title, old.body, old.search_aux);
END;
CREATE TRIGGER memory_records_au AFTER UPDATE OF title, body, search_aux ON memory_records BEGIN
    INSERT INTO memory_fts (memory_fts, rowid, title, body, search_aux)
    VALUES ('delete', old.seq, old.title, old.body, old.search_aux);
    INSERT INTO memory_fts (rowid, title, body, search_aux)
    VALUES (new.seq, new.title, new.body, new.search_aux);
END;

CREATE TABLE retrieval_telemetry (
    seq             INTEGER PRIMARY KEY,
    at              TEXT NOT NULL,
    task_id         TEXT,
    project         TEXT,
    agent           TEXT,
    terms           TEXT NOT NULL DEFAULT '[]',    -- JSON array
    candidates      INTEGER NOT NULL DEFAULT 0,
    selected_ids    TEXT NOT NULL DEFAULT '[]',    -- JSON array
    bytes           INTEGER NOT NULL DEFAULT 0,
    duration_ms     REAL NOT NULL DEFAULT 0,
    shadow          INTEGER NOT NULL DEFAULT 0,
    fallback_reason TEXT,
    error           TEXT
);
