-- Jobs survive their worker: a running job carries its worker's lease, renewed by a heartbeat; a job
-- whose lease expired (its serve process died) is settled failed/error "worker lost" by any worker.
-- A job request may carry an idempotency key: one job per (creator, key), whatever the concurrency.

ALTER TABLE runtime.job ADD COLUMN lease_expires_at timestamptz;
ALTER TABLE runtime.job ADD COLUMN heartbeat_at timestamptz;
ALTER TABLE runtime.job ADD COLUMN idempotency_key text CHECK (idempotency_key IS NULL OR length(idempotency_key) BETWEEN 1 AND 255);
-- sha256 of the request the key was first used with: the same key with another request is refused.
ALTER TABLE runtime.job ADD COLUMN request_hash text;

CREATE UNIQUE INDEX job_idempotency_idx ON runtime.job (created_by, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX job_lease_idx ON runtime.job (lease_expires_at) WHERE status = 'running';

-- Jobs running under a worker of the previous version have no lease: the next sweep settles them.
UPDATE runtime.job SET lease_expires_at = now() WHERE status = 'running';
