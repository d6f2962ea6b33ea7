-- Records per stored status, kept exact by triggers, so `status` reads four rows instead of
-- counting the table. An active record whose expires_at has passed reads as expired before
-- the expiry job stores that status (SPEC §7); the reader counts those few from the partial
-- index below, which holds only active records that have an expiry.
CREATE TABLE record_counts (
    status TEXT PRIMARY KEY,
    n      INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO record_counts (status, n)
    SELECT s.status, (SELECT count(*) FROM memory_records r WHERE r.status = s.status)
    FROM (SELECT 'active' AS status UNION ALL SELECT 'superseded'
          UNION ALL SELECT 'retracted' UNION ALL SELECT 'expired') AS s;
CREATE TRIGGER memory_records_counts_ai AFTER INSERT ON memory_records BEGIN
    UPDATE record_counts SET n = n + 1 WHERE status = new.status;
END;
CREATE TRIGGER memory_records_counts_ad AFTER DELETE ON memory_records BEGIN
    UPDATE record_counts SET n = n - 1 WHERE status = old.status;
END;
CREATE TRIGGER memory_records_counts_au AFTER UPDATE OF status ON memory_records
    WHEN old.status IS NOT new.status BEGIN
    UPDATE record_counts SET n = n - 1 WHERE status = old.status;
    UPDATE record_counts SET n = n + 1 WHERE status = new.status;
END;
CREATE INDEX memory_records_expiring ON memory_records (expires_at)
    WHERE status = 'active' AND expires_at IS NOT NULL;
