-- What memory.purge leaves behind of a record it deleted for good: the audit row. It keeps no
-- title or body, only why, when and where the record came from, and which files (home-relative)
-- still held its text at the time, so memory.get can say what happened to the id.
CREATE TABLE purged_records (
    id         TEXT PRIMARY KEY,            -- the record's public id, "M-..."
    reason     TEXT NOT NULL,
    purged_at  TEXT NOT NULL,               -- ISO 8601 UTC
    source     TEXT NOT NULL DEFAULT '',    -- the record's provenance string
    files      TEXT NOT NULL DEFAULT '[]'   -- JSON array of home-relative paths
);
