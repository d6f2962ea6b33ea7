"""Files and SQLite: the single-writer database and migrations, records, telemetry, the journal.
"""
