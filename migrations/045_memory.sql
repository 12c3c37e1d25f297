-- The worker-bound services channel (design/memory-and-web.md §1): one bearer token per job that is
-- granted memory or web tools. Only its SHA-256 is stored; it is bound to the job, its project, its
-- agent and the tools it was granted, and is accepted only while the job is `running` (dead at settle,
-- whichever serve process settles it).

CREATE TABLE runtime.service_token (
  token_hash text PRIMARY KEY CHECK (token_hash ~ '^[0-9a-f]{64}$'),
  job_id uuid NOT NULL REFERENCES runtime.job (id) ON DELETE CASCADE,
  project_id text NOT NULL,
  agent_id text NOT NULL,
  -- The agent package's memory role (`reviewer` sees only reviewed notes and its own run's notes).
  memory_role text CHECK (memory_role IS NULL OR memory_role = 'reviewer'),
  tools jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX service_token_job_idx ON runtime.service_token (job_id);

-- Project memory (design/memory-and-web.md §3). Agents write notes through the services channel; a
-- person reviews them. Every timestamp is written by the application (its Clock), so retention can be
-- tested with a controlled clock. Notes of a project go with the project.
CREATE SCHEMA memory;

-- Per-project settings: memory is off until an admin turns it on; retention in days.
CREATE TABLE memory.settings (
  project_id text PRIMARY KEY REFERENCES runtime.project (id) ON DELETE CASCADE,
  enabled boolean NOT NULL DEFAULT false,
  learned_days integer NOT NULL DEFAULT 90 CHECK (learned_days BETWEEN 1 AND 3650),
  forgotten_days integer NOT NULL DEFAULT 30 CHECK (forgotten_days BETWEEN 1 AND 3650),
  scratchpad_days integer NOT NULL DEFAULT 7 CHECK (scratchpad_days BETWEEN 1 AND 3650),
  log_days integer NOT NULL DEFAULT 180 CHECK (log_days BETWEEN 1 AND 3650),
  updated_by text,
  updated_at timestamptz
);

CREATE TABLE memory.note (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  project_id text NOT NULL REFERENCES runtime.project (id) ON DELETE CASCADE,
  kind text NOT NULL CHECK (kind IN ('fact', 'lesson', 'decision', 'navigation')),
  title text NOT NULL CHECK (char_length(title) BETWEEN 1 AND 200),
  body text NOT NULL CHECK (char_length(body) BETWEEN 1 AND 4000),
  paths jsonb NOT NULL DEFAULT '[]'::jsonb,
  trust text NOT NULL CHECK (trust IN ('learned', 'reviewed', 'rejected', 'forgotten')),
  -- Who wrote it first, and who wrote the current text (a reviewer sees the notes of its own run).
  created_job uuid,
  created_agent text NOT NULL,
  updated_job uuid,
  updated_agent text NOT NULL,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  -- When `trust` last changed: retention counts from here.
  trust_at timestamptz NOT NULL,
  -- 'simple' config: no stemming surprises across languages, and present on PostgreSQL and PGlite alike.
  search tsvector GENERATED ALWAYS AS (to_tsvector('simple', title || ' ' || body)) STORED,
  UNIQUE (project_id, kind, title)
);
CREATE INDEX note_search_idx ON memory.note USING gin (search);
CREATE INDEX note_trust_idx ON memory.note (project_id, trust, trust_at);

-- Every text a note had, oldest first (revision 1 = the first save); never changed.
CREATE TABLE memory.revision (
  note_id uuid NOT NULL REFERENCES memory.note (id) ON DELETE CASCADE,
  revision integer NOT NULL,
  title text NOT NULL,
  body text NOT NULL,
  paths jsonb NOT NULL,
  job_id uuid,
  agent_id text,
  -- A person who edited it before approving it.
  edited_by text,
  at timestamptz NOT NULL,
  PRIMARY KEY (note_id, revision)
);
CREATE INDEX revision_job_idx ON memory.revision (job_id);

-- Every trust transition: who (an agent's job, a person, the retention sweep), when, from, to.
CREATE TABLE memory.transition (
  id bigserial PRIMARY KEY,
  note_id uuid NOT NULL REFERENCES memory.note (id) ON DELETE CASCADE,
  from_trust text CHECK (from_trust IS NULL OR from_trust IN ('learned', 'reviewed', 'rejected', 'forgotten')),
  to_trust text NOT NULL CHECK (to_trust IN ('learned', 'reviewed', 'rejected', 'forgotten')),
  by_kind text NOT NULL CHECK (by_kind IN ('agent', 'person', 'retention')),
  by_name text NOT NULL,
  job_id uuid,
  reason text,
  at timestamptz NOT NULL
);
CREATE INDEX transition_note_idx ON memory.transition (note_id, id);

-- The project's daily log: jobs started and finished, notes saved, forgotten, recovered, reviewed.
CREATE TABLE memory.log (
  id bigserial PRIMARY KEY,
  project_id text NOT NULL REFERENCES runtime.project (id) ON DELETE CASCADE,
  at timestamptz NOT NULL,
  kind text NOT NULL,
  job_id uuid,
  agent_id text,
  note_id uuid,
  summary text NOT NULL
);
CREATE INDEX log_project_at_idx ON memory.log (project_id, at);

-- One scratchpad per run (job); gone for the next job, purged some days after the run.
CREATE TABLE memory.scratchpad (
  job_id uuid PRIMARY KEY,
  project_id text NOT NULL REFERENCES runtime.project (id) ON DELETE CASCADE,
  content text NOT NULL CHECK (char_length(content) <= 32000),
  updated_at timestamptz NOT NULL
);
CREATE INDEX scratchpad_project_idx ON memory.scratchpad (project_id, updated_at);
