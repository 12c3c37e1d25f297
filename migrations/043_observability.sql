-- Observability: the `metrics.read` permission (GET /metrics for a principal that is not on loopback),
-- and the W3C traceparent of the request that queued a job, so that the worker's job span joins that
-- request's trace (one trace per job). The traceparent holds ids only, never request content.

ALTER TABLE admin.user_permission DROP CONSTRAINT user_permission_permission_check;
ALTER TABLE admin.user_permission ADD CONSTRAINT user_permission_permission_check
  CHECK (permission IN ('agents.manage', 'providers.manage', 'metrics.read'));

-- Admins (agents.manage + providers.manage) pass the metrics.read check without holding it.

ALTER TABLE runtime.job ADD COLUMN trace_parent text
  CHECK (trace_parent IS NULL OR trace_parent ~ '^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$');
