-- A continued job: started from a finished job's transcript (POST /api/jobs/:id/continue) with the same
-- agent version and workspace. `parent_job_id` names the job it continues; a job continued several
-- times has several children. Deleting a parent keeps its continuations (the link becomes null).

ALTER TABLE runtime.job ADD COLUMN parent_job_id uuid REFERENCES runtime.job (id) ON DELETE SET NULL;
CREATE INDEX job_parent_idx ON runtime.job (parent_job_id) WHERE parent_job_id IS NOT NULL;
