-- Index statistics for retrieval's bm25, kept by triggers so no reader has to look inside
-- FTS5's own tables: how many records there are, how many have stored term counts, and the
-- summed length of those (the <n> of a term_counts header "2 <n> 1", see minionsd/fts.py).
--
-- Stored counts whose length was not exact (header "2 <n> 0": non-ASCII or huge text, which
-- retrieval used to measure in FTS5's private docsize table) are dropped first; the daemon
-- refills them after start, and retrieval counts such rows from their text until then.
UPDATE memory_records SET term_counts = NULL
    WHERE term_counts IS NOT NULL
      AND substr(term_counts, 1, instr(term_counts, char(10)) - 1) NOT GLOB '2 [0-9]* 1';
CREATE TABLE fts_stats (
    id      INTEGER PRIMARY KEY CHECK (id = 1),
    rows    INTEGER NOT NULL,
    counted INTEGER NOT NULL,
    tokens  INTEGER NOT NULL
);
-- The length in a stored header: the digits between "2 " and the next space.
INSERT INTO fts_stats (id, rows, counted, tokens)
    SELECT 1, count(*), count(term_counts),
           coalesce(sum(CAST(substr(term_counts, 3, instr(substr(term_counts, 3), ' ') - 1)
                             AS INTEGER)), 0)
    FROM memory_records;
CREATE TRIGGER fts_stats_ai AFTER INSERT ON memory_records BEGIN
    UPDATE fts_stats SET rows = rows + 1,
        counted = counted + (new.term_counts IS NOT NULL),
        tokens = tokens + coalesce(CAST(substr(new.term_counts, 3,
            instr(substr(new.term_counts, 3), ' ') - 1) AS INTEGER), 0)
    WHERE id = 1;
END;
CREATE TRIGGER fts_stats_ad AFTER DELETE ON memory_records BEGIN
    UPDATE fts_stats SET rows = rows - 1,
        counted = counted - (old.term_counts IS NOT NULL),
        tokens = tokens - coalesce(CAST(substr(old.term_counts, 3,
            instr(substr(old.term_counts, 3), ' ') - 1) AS INTEGER), 0)
    WHERE id = 1;
END;
CREATE TRIGGER fts_stats_au AFTER UPDATE OF term_counts ON memory_records BEGIN
    UPDATE fts_stats SET
        counted = counted - (old.term_counts IS NOT NULL) + (new.term_counts IS NOT NULL),
        tokens = tokens
            - coalesce(CAST(substr(old.term_counts, 3,
                instr(substr(old.term_counts, 3), ' ') - 1) AS INTEGER), 0)
            + coalesce(CAST(substr(new.term_counts, 3,
                instr(substr(new.term_counts, 3), ' ') - 1) AS INTEGER), 0)
    WHERE id = 1;
END;
-- Retrieval's caches now live as long as the open database, so they need no database id.
DELETE FROM counters WHERE name = 'database_id';
