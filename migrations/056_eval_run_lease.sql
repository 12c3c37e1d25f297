-- A running eval run is held under a lease like a job (docs/evals.md): the process executing it sets
-- lease_expires_at to now + the job lease (KINTSUGI_JOB_LEASE) at its start and at every heartbeat.
-- A run whose lease ran out (its server was killed outright: SIGKILL, power loss) is ended as `error`
-- by any server's sweep. Runs already running keep the rule they started under: 60 s after their last
-- heartbeat.
ALTER TABLE admin.agent_eval_run ADD COLUMN lease_expires_at timestamptz;
UPDATE admin.agent_eval_run SET lease_expires_at = coalesce(heartbeat_at, started_at) + interval '60 seconds' WHERE status = 'running';
DROP INDEX admin.agent_eval_run_running;
CREATE INDEX agent_eval_run_running ON admin.agent_eval_run (lease_expires_at) WHERE status = 'running';
