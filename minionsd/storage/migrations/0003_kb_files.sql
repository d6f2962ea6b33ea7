-- Knowledge files known to SQL: which record a file feeds, and the file hash last imported.
CREATE TABLE kb_files (
    path        TEXT PRIMARY KEY,        -- home-relative, knowledge/<category>/<name>.md
    sha256      TEXT NOT NULL,
    record_id   TEXT,
    seen_at     TEXT NOT NULL
);

-- Last result of each scheduled job, shown by status.jobs.
CREATE TABLE job_runs (
    job         TEXT PRIMARY KEY,
    last_at     TEXT NOT NULL,
    ok          INTEGER NOT NULL,
    summary     TEXT NOT NULL
);
