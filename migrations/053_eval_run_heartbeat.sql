-- A running eval run is kept alive by the process executing it (docs/evals.md): it stamps heartbeat_at
-- every few seconds. A run whose heartbeat stopped (its server was killed outright: SIGKILL, power loss)
-- is ended as `error` by any server's eval sweep instead of staying `running` for ever.
ALTER TABLE admin.agent_eval_run ADD COLUMN heartbeat_at timestamptz;
UPDATE admin.agent_eval_run SET heartbeat_at = started_at WHERE status = 'running';
CREATE INDEX agent_eval_run_running ON admin.agent_eval_run (heartbeat_at) WHERE status = 'running';
