-- Resuming a job after its worker was lost (KINTSUGI_JOB_RESUMES): a job whose lease expired and that
-- kept a transcript goes back to the queue and goes on from its last answered turn on another worker.
--
-- A transcript turn is stored twice: before its model call (what it sends; `answered` false) and again
-- with the answer, which replaces the unanswered record. A turn stored answered is never replaced.
ALTER TABLE runtime.transcript_turn ADD COLUMN answered boolean NOT NULL DEFAULT true;

-- Each resume of the job, oldest first: when (`at`), from which answered turn (`fromTurn`), and the
-- worker that was lost (`lostWorker`).
ALTER TABLE runtime.job ADD COLUMN resumes jsonb NOT NULL DEFAULT '[]'::jsonb CHECK (jsonb_typeof(resumes) = 'array');
