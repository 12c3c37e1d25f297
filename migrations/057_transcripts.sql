-- Transcripts: an opt-in record of what a job's model saw, kept apart from events (events never carry
-- content). A project turns them on (`transcripts = 'full'`) and sets how long they are kept. Each turn
-- is one row, sealed with the installation's secret key (AES-256-GCM, as provider keys are); the primary
-- key makes a retried append of the same turn a no-op. Timestamps are written by the application (its
-- Clock), so retention can be tested with a controlled clock.

ALTER TABLE runtime.project
  ADD COLUMN transcripts text NOT NULL DEFAULT 'off' CHECK (transcripts IN ('off', 'full')),
  ADD COLUMN transcript_retention_days integer NOT NULL DEFAULT 30 CHECK (transcript_retention_days BETWEEN 1 AND 3650);

CREATE TABLE runtime.transcript_turn (
  job_id uuid NOT NULL REFERENCES runtime.job (id) ON DELETE CASCADE,
  turn integer NOT NULL CHECK (turn >= 1),
  ciphertext text NOT NULL CHECK (ciphertext LIKE 'v1:%'),
  created_at timestamptz NOT NULL,
  PRIMARY KEY (job_id, turn)
);
CREATE INDEX transcript_turn_created_idx ON runtime.transcript_turn (created_at);

-- Reading a transcript needs `transcripts.read` (admins pass without holding it).
ALTER TABLE admin.user_permission DROP CONSTRAINT user_permission_permission_check;
ALTER TABLE admin.user_permission ADD CONSTRAINT user_permission_permission_check
  CHECK (permission IN ('agents.manage', 'providers.manage', 'metrics.read', 'transcripts.read'));
