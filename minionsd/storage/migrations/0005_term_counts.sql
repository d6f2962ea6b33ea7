-- Per-record stemmed term counts by column (JSON), written with the record, so retrieval can
-- rescore candidates without tokenising their text. NULL means "not computed yet": retrieval
-- then tokenises that row itself, and the reindex job fills it in.
ALTER TABLE memory_records ADD COLUMN term_counts TEXT;
