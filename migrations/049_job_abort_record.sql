-- Who aborted a job and when (the portal's job page shows it beside who started it). Set once, by the
-- first abort request of a job that had not settled; a later request does not overwrite it.

ALTER TABLE runtime.job ADD COLUMN aborted_by text;
ALTER TABLE runtime.job ADD COLUMN aborted_at timestamptz;
ALTER TABLE runtime.job ADD CONSTRAINT job_aborted_record_check CHECK ((aborted_by IS NULL) = (aborted_at IS NULL));

-- The jobs list filters by project and agent and pages by (created_at, id).
CREATE INDEX job_created_id_idx ON runtime.job (created_at DESC, id DESC);
