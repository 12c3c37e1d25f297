-- The schemas every later migration builds in: `admin` (agents, providers, users: the Agent Builder's
-- catalog) and `runtime` (jobs and their events). Tables come in 010+ files, one area per file.
CREATE SCHEMA IF NOT EXISTS admin;
CREATE SCHEMA IF NOT EXISTS runtime;
