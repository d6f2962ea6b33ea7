"""Pure functions of text, no I/O: front matter, the fence, redaction, FTS5 query text, tasks.
"""
