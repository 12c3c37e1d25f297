-- The worker-bound services channel (design/memory-and-web.md §1): one bearer token per job that is
-- granted memory or web tools. Only its SHA-256 is stored; it is bound to the job, its project, its
-- agent and the tools it was granted, and is accepted only while the job is `running` (dead at settle,
-- whichever serve process settles it).

CREATE TABLE runtime.service_token (
  token_hash text PRIMARY KEY CHECK (token_hash ~ '^[0-9a-f]{64}$'),
  job_id uuid NOT NULL REFERENCES runtime.job (id) ON DELETE CASCADE,
  project_id text NOT NULL,
  agent_id text NOT NULL,
  -- The agent package's memory role (`reviewer` sees only reviewed notes and its own run's notes).
  memory_role text CHECK (memory_role IS NULL OR memory_role = 'reviewer'),
  tools jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX service_token_job_idx ON runtime.service_token (job_id);
