-- Workers wake across processes: a statement that queues jobs (an INSERT, or an UPDATE putting a job
-- back in the queue) notifies `kintsugi_queued` once (identical notifications of one transaction fold
-- into one), so each serve process's one listener (src/db/serverWrites.ts) wakes its idle workers
-- through the in-process JobBus at once instead of at their next poll. Sent at COMMIT only, so the job
-- is claimable when it is heard. Harmless on the embedded database (one process: the JobBus wakes them).
CREATE FUNCTION runtime.notify_job_queued() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM queued WHERE status = 'queued') THEN
    PERFORM pg_notify('kintsugi_queued', '');
  END IF;
  RETURN NULL;
END
$$;

CREATE TRIGGER notify_job_queued AFTER INSERT ON runtime.job
  REFERENCING NEW TABLE AS queued FOR EACH STATEMENT EXECUTE FUNCTION runtime.notify_job_queued();

CREATE FUNCTION runtime.notify_job_requeued() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM stored s JOIN earlier e ON e.id = s.id WHERE s.status = 'queued' AND e.status <> 'queued') THEN
    PERFORM pg_notify('kintsugi_queued', '');
  END IF;
  RETURN NULL;
END
$$;

CREATE TRIGGER notify_job_requeued AFTER UPDATE ON runtime.job
  REFERENCING OLD TABLE AS earlier NEW TABLE AS stored FOR EACH STATEMENT EXECUTE FUNCTION runtime.notify_job_requeued();
