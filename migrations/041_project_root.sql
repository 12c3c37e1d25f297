-- A project may name its own root: a directory inside the job roots (KINTSUGI_JOB_ROOTS) that every
-- workspace of the project's jobs must lie inside. NULL = the job roots alone. Stored as given and
-- resolved again (symlinks followed) for every job.
ALTER TABLE runtime.project ADD COLUMN root text;
