-- The body hash of each note inbox.submit wrote: a second submission under the same name is
-- a duplicate only when its body is identical; otherwise it takes the next free name. Rows
-- from before this column have NULL and are compared with the file or the journal instead.
ALTER TABLE inbox_submissions ADD COLUMN body_hash TEXT;
-- The retention job prunes old submissions and finished batches by age.
CREATE INDEX inbox_submissions_at ON inbox_submissions (at);
CREATE INDEX batches_finished ON batches (state, finished_at);
