-- History (issue 16): change notes stored with each agent version, a record of every restore, and
-- versions of the shared skills (an edit of a shared skill changes every agent that lists it).

-- The author's own words about a save ("why"), beside `note` (what the save was: created, saved, …).
-- A constant default adds the column without touching the immutable rows.
ALTER TABLE admin.agent_version ADD COLUMN change_note text NOT NULL DEFAULT ''
  CHECK (length(change_note) <= 2000);

-- A restore makes an older version current again (no new number); this log says who did it, when,
-- and which version was current before. Append-only like the versions.
CREATE TABLE admin.agent_restore (
  id bigserial PRIMARY KEY,
  name text NOT NULL,
  from_version integer NOT NULL,
  to_version integer NOT NULL,
  restored_by text NOT NULL,
  restored_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX agent_restore_name ON admin.agent_restore (name, restored_at);
CREATE TRIGGER agent_restore_immutable
  BEFORE UPDATE OR DELETE ON admin.agent_restore
  FOR EACH ROW EXECUTE FUNCTION admin.agent_version_immutable();

-- Shared-skill versions: every create, edit and restore adds one; the skill's row holds the current
-- text. Numbers come from max(version) + 1 under the skill row's lock and, like the agents', are never
-- reused after a delete (the rows stay; a re-created skill continues the count).
CREATE TABLE admin.agent_skill_version (
  name text NOT NULL,
  version integer NOT NULL CHECK (version > 0),
  description text NOT NULL,
  content text NOT NULL,
  saved_by text NOT NULL,
  saved_at timestamptz NOT NULL DEFAULT now(),
  -- created, saved, restored from vN
  note text NOT NULL DEFAULT '',
  change_note text NOT NULL DEFAULT '' CHECK (length(change_note) <= 2000),
  PRIMARY KEY (name, version)
);
CREATE TRIGGER agent_skill_version_immutable
  BEFORE UPDATE OR DELETE ON admin.agent_skill_version
  FOR EACH ROW EXECUTE FUNCTION admin.agent_version_immutable();
CREATE TRIGGER agent_skill_version_no_truncate
  BEFORE TRUNCATE ON admin.agent_skill_version
  FOR EACH STATEMENT EXECUTE FUNCTION admin.agent_version_immutable();

ALTER TABLE admin.agent_skill ADD COLUMN current_version integer NOT NULL DEFAULT 1;

-- The skills saved before this migration start their history at v1 with their text as it is now.
INSERT INTO admin.agent_skill_version (name, version, description, content, saved_by, saved_at, note)
  SELECT name, 1, description, content, updated_by, created_at, 'created' FROM admin.agent_skill;
