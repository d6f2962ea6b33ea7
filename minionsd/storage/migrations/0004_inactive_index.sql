-- Records that are, or may become, not active: few in practice. memory.search subtracts the
-- matching ones from a plain FTS count instead of counting every match through a join.
CREATE INDEX memory_records_maybe_inactive ON memory_records (seq)
    WHERE status != 'active' OR expires_at IS NOT NULL;
