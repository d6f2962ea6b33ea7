-- A log of which records changed, written by triggers, so in-memory views of memory_records
-- (retrieval's filter table and record caches) catch up by reading only what changed since
-- they last looked. Old rows are pruned by the retention job; a reader that finds its place
-- pruned reloads in full.
--
-- Stored term counts in the first (JSON) form are dropped first: retrieval reads only the
-- line form now, tokenises rows without counts (same scores, slower), and reindex refills them.
UPDATE memory_records SET term_counts = NULL WHERE term_counts LIKE '{%';
CREATE TABLE record_changes (
    id  INTEGER PRIMARY KEY AUTOINCREMENT,
    seq INTEGER NOT NULL
);
CREATE TRIGGER memory_records_changes_ai AFTER INSERT ON memory_records BEGIN
    INSERT INTO record_changes (seq) VALUES (new.seq);
END;
CREATE TRIGGER memory_records_changes_au AFTER UPDATE ON memory_records BEGIN
    INSERT INTO record_changes (seq) SELECT old.seq WHERE old.seq != new.seq;
    INSERT INTO record_changes (seq) VALUES (new.seq);
END;
CREATE TRIGGER memory_records_changes_ad AFTER DELETE ON memory_records BEGIN
    INSERT INTO record_changes (seq) VALUES (old.seq);
END;
-- The daemon's FTS5 upkeep runs the incremental 'merge' command; with usermerge 2 that merges
-- any two segments of one level, never the whole index at once (see records.fts_merge_step).
INSERT INTO memory_fts (memory_fts, rank) VALUES ('usermerge', 2);
-- A random identity for this database, so in-memory views keyed by it never mistake a file
-- replaced at the same path (even on the same inode) for the one they followed.
INSERT OR IGNORE INTO counters (name, value) VALUES ('database_id', lower(hex(randomblob(8))));
-- Rows still without stored term counts (usually none): the daemon refills them after start,
-- and with this index finding none is a lookup, not a scan of the table.
CREATE INDEX memory_records_without_counts ON memory_records (seq) WHERE term_counts IS NULL;
