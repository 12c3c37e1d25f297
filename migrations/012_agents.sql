-- The Agent Builder's store: custom agents, their immutable versions and shared skills.
-- Built-in agents live in the release (builtin-agents/), not here; their names are reserved in code.

CREATE TABLE admin.agent (
  name text PRIMARY KEY CHECK (name ~ '^[a-z][a-z0-9-]{0,63}$'),
  enabled boolean NOT NULL DEFAULT true,
  audience text NOT NULL CHECK (audience IN ('runtime', 'member')),
  current_version integer NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- Version numbers are handed out by this counter, one row per agent name, never deleted: a number
-- is never reused, neither under concurrent saves (the upsert takes the row lock) nor after the agent
-- is deleted and created again.
CREATE TABLE admin.agent_version_counter (
  name text PRIMARY KEY,
  last_version integer NOT NULL
);

CREATE TABLE admin.agent_version (
  name text NOT NULL,
  version integer NOT NULL CHECK (version > 0),
  -- The whole package (manifest, instructions, local skills, files) as saved.
  package jsonb NOT NULL,
  saved_by text NOT NULL,
  saved_at timestamptz NOT NULL DEFAULT now(),
  -- What the save was: created, saved, copied from …, imported, restored from vN.
  note text NOT NULL DEFAULT '',
  PRIMARY KEY (name, version)
);

-- Versions are immutable in SQL itself, not only in handlers: any UPDATE or DELETE fails.
CREATE FUNCTION admin.agent_version_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'agent versions are immutable (% of %)', TG_OP, OLD.name
    USING ERRCODE = 'integrity_constraint_violation';
END;
$$;
CREATE TRIGGER agent_version_immutable
  BEFORE UPDATE OR DELETE ON admin.agent_version
  FOR EACH ROW EXECUTE FUNCTION admin.agent_version_immutable();
CREATE TRIGGER agent_version_no_truncate
  BEFORE TRUNCATE ON admin.agent_version
  FOR EACH STATEMENT EXECUTE FUNCTION admin.agent_version_immutable();

CREATE TABLE admin.agent_skill (
  name text PRIMARY KEY CHECK (name ~ '^[a-z][a-z0-9-]{0,63}$'),
  description text NOT NULL DEFAULT '',
  content text NOT NULL,
  updated_by text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
