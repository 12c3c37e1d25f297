-- Jobs and their events. A job moves queued → running → completed | failed and is always settled
-- once a worker claimed it. Workers claim with FOR UPDATE SKIP LOCKED, so several serve processes on
-- one PostgreSQL share the queue without running a job twice.

CREATE TABLE runtime.project (
  id text PRIMARY KEY CHECK (id ~ '^[a-z0-9][a-z0-9._-]{0,63}$'),
  name text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE runtime.job (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  project_id text NOT NULL DEFAULT '',
  agent_name text NOT NULL,
  -- Filled at start: the version the worker resolved and embedded.
  agent_version text,
  task text NOT NULL,
  workspace jsonb NOT NULL,
  limits jsonb NOT NULL,
  metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
  status text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'running', 'completed', 'failed')),
  reason text CHECK (reason IN ('error', 'timeout', 'max-turns', 'budget', 'context-overflow', 'loop', 'aborted')),
  message text,
  summary text,
  -- The last usage event (running totals) and its cost.
  usage jsonb,
  cost_usd double precision,
  -- What happened to the outputs: committed <sha>, not a git work tree, no outputs, or the error.
  outputs text,
  model text,
  worker_id text,
  abort_requested boolean NOT NULL DEFAULT false,
  created_by text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  started_at timestamptz,
  finished_at timestamptz,
  CHECK ((status IN ('completed', 'failed')) = (finished_at IS NOT NULL))
);
CREATE INDEX job_queued_idx ON runtime.job (created_at) WHERE status = 'queued';
CREATE INDEX job_created_idx ON runtime.job (created_at DESC);

CREATE TABLE runtime.job_event (
  job_id uuid NOT NULL REFERENCES runtime.job (id) ON DELETE CASCADE,
  seq integer NOT NULL,
  type text NOT NULL,
  event jsonb NOT NULL,
  PRIMARY KEY (job_id, seq)
);
