-- Live streams across processes: a statement that stores events of a job, or settles it, notifies
-- `kintsugi_events` with the job's id (once per job and statement; identical notifications of one
-- transaction fold into one), so each serve process's one listener (src/db/serverWrites.ts) wakes
-- the streams following that job (src/worker/JobFeed.ts). Notifications are sent at COMMIT only.
-- Harmless on the embedded database (no listener; the in-process JobBus wakes the streams).
CREATE FUNCTION runtime.notify_job_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('kintsugi_events', j.job_id::text) FROM (SELECT DISTINCT job_id FROM stored) j;
  RETURN NULL;
END
$$;

CREATE TRIGGER notify_job_events AFTER INSERT ON runtime.job_event
  REFERENCING NEW TABLE AS stored FOR EACH STATEMENT EXECUTE FUNCTION runtime.notify_job_events();

CREATE FUNCTION runtime.notify_job_settled() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('kintsugi_events', s.id::text) FROM stored s WHERE s.status IN ('completed', 'failed');
  RETURN NULL;
END
$$;

CREATE TRIGGER notify_job_settled AFTER UPDATE ON runtime.job
  REFERENCING NEW TABLE AS stored FOR EACH STATEMENT EXECUTE FUNCTION runtime.notify_job_settled();
