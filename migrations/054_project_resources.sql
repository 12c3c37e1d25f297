-- A project may lower the resources its jobs' process tools may take (memory, processes, CPU seconds,
-- temporary and outDir space): a JSON object with any of memoryMb, processes, cpuSec, tmpMb, outDirMb
-- as positive integers; a key absent = the server's setting. Each job gets the lower of its own and the
-- project's, and the job child the lower of that and the server's, so a project never raises a limit.
ALTER TABLE runtime.project ADD COLUMN resources jsonb NOT NULL DEFAULT '{}'::jsonb
  CHECK (jsonb_typeof(resources) = 'object');
