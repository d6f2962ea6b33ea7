-- Inbox holds (survive restarts), findings (one per task), submitted names (dedup),
-- consolidation journal (crash-safe batches) and daemon counters.
CREATE TABLE inbox_holds (
    name       TEXT PRIMARY KEY,
    held_at    TEXT NOT NULL
);

CREATE TABLE inbox_submissions (
    name       TEXT PRIMARY KEY,
    at         TEXT NOT NULL
);

CREATE TABLE findings (
    task       TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    agent      TEXT NOT NULL,
    at         TEXT NOT NULL
);

-- One row per batch. state: 'open' until every note reached the archive, then 'done'.
CREATE TABLE batches (
    id          TEXT PRIMARY KEY,
    started_at  TEXT NOT NULL,
    finished_at TEXT,
    state       TEXT NOT NULL CHECK (state IN ('open', 'done')),
    mode        TEXT,               -- llm | regex | circuit_breaker, fixed once chosen
    digest      TEXT,               -- the digest text, fixed once computed
    date        TEXT NOT NULL       -- the batch's UTC date stamp
);

-- The notes of a batch with their content, so a redo after a crash needs no inbox file.
CREATE TABLE batch_notes (
    batch_id      TEXT NOT NULL REFERENCES batches (id),
    name          TEXT NOT NULL,
    content       TEXT NOT NULL,
    content_hash  TEXT NOT NULL,
    author        TEXT NOT NULL,
    role          TEXT NOT NULL CHECK (role IN ('note', 'storm')),
    kb_path       TEXT,             -- chosen before the entry is written
    archive_path  TEXT,             -- chosen before the file is moved
    record_id     TEXT,
    done          INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (batch_id, name)
);
CREATE INDEX batch_notes_name ON batch_notes (name);

CREATE TABLE counters (
    name   TEXT PRIMARY KEY,
    value  TEXT NOT NULL
);
