-- Which retrievals selected which record, for "recalled by" on a record's page, and an
-- agent's latest retrievals: both read by key instead of scanning every telemetry row's JSON.
CREATE TABLE retrieval_selections (
    telemetry_seq INTEGER NOT NULL,
    record_id     TEXT NOT NULL,
    PRIMARY KEY (record_id, telemetry_seq)
) WITHOUT ROWID;
INSERT OR IGNORE INTO retrieval_selections (telemetry_seq, record_id)
    SELECT t.seq, j.value FROM retrieval_telemetry AS t, json_each(CASE WHEN json_valid(t.selected_ids) THEN t.selected_ids ELSE '[]' END) AS j
    WHERE j.type = 'text';
CREATE TRIGGER retrieval_selections_ai AFTER INSERT ON retrieval_telemetry BEGIN
    INSERT OR IGNORE INTO retrieval_selections (telemetry_seq, record_id)
        SELECT new.seq, j.value FROM json_each(CASE WHEN json_valid(new.selected_ids) THEN new.selected_ids ELSE '[]' END) AS j
        WHERE j.type = 'text';
END;
CREATE TRIGGER retrieval_selections_ad AFTER DELETE ON retrieval_telemetry BEGIN
    DELETE FROM retrieval_selections WHERE telemetry_seq = old.seq AND record_id IN (
        SELECT value FROM json_each(
            CASE WHEN json_valid(old.selected_ids) THEN old.selected_ids ELSE '[]' END));
END;
CREATE INDEX retrieval_telemetry_agent ON retrieval_telemetry (agent, seq);
-- The records page browses newest first within a status, a scope or a trust level.
CREATE INDEX memory_records_trust ON memory_records (trust);
-- A record's page shows the records it superseded.
CREATE INDEX memory_records_superseded_by ON memory_records (superseded_by)
    WHERE superseded_by IS NOT NULL;
