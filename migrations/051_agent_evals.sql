-- Evaluation-gated agent versions (issue 17, docs/evals.md).
-- A job may be pinned to one version of its agent (evals run the version they evaluate, current or not).
ALTER TABLE runtime.job ADD COLUMN agent_version_pin integer;

-- One run of a version's evals: who started it, whether it gates the version, how it ended.
CREATE TABLE admin.agent_eval_run (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  agent_name text NOT NULL,
  version integer NOT NULL,
  project_id text NOT NULL,
  -- true: started by a save of a `gate: evals` agent; all passing makes the version current.
  gate boolean NOT NULL DEFAULT false,
  -- waiting: a gated save queued it; the Evals service claims it (running), then passed, failed or error.
  status text NOT NULL DEFAULT 'running' CHECK (status IN ('waiting', 'running', 'passed', 'failed', 'error')),
  -- Why the run ended in error, or what the gate did ('' = nothing to say).
  message text NOT NULL DEFAULT '',
  started_by text NOT NULL,
  started_at timestamptz NOT NULL DEFAULT now(),
  finished_at timestamptz
);
CREATE INDEX agent_eval_run_version ON admin.agent_eval_run (agent_name, version, started_at DESC);

-- One eval of a run: pass/fail with every problem, and what its job cost and found.
CREATE TABLE admin.agent_eval_result (
  run_id uuid NOT NULL REFERENCES admin.agent_eval_run (id) ON DELETE CASCADE,
  eval_name text NOT NULL,
  passed boolean NOT NULL,
  problems jsonb NOT NULL DEFAULT '[]'::jsonb,
  cost_usd numeric,
  duration_ms integer NOT NULL,
  -- The job's grounding counts ({"grounded", "ungrounded", "unknown", "required"}); null when not checked.
  grounding jsonb,
  job_id uuid,
  finished_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (run_id, eval_name)
);
