-- The catalog at scale (issue 15) and Agent Skills with resources (issue 16).
--
-- 1. One precomputed catalog entry per immutable agent version, written with the version (saves,
--    imports, copies). It holds what a catalog row shows and what its validity needs, so listing a
--    page never decodes a package: the description, audience, a lower-cased search text, the
--    references the installation checks look at (tools, shared skills, local skill and file names)
--    and the problems that depend on the package alone. Versions saved before this migration get
--    their entry on the first catalog read (computed from the package by the same code).
CREATE TABLE admin.agent_catalog_entry (
  name text NOT NULL,
  version integer NOT NULL,
  description text NOT NULL,
  audience text NOT NULL CHECK (audience IN ('runtime', 'member')),
  search text NOT NULL,
  refs jsonb NOT NULL,
  problems jsonb NOT NULL,
  -- Keyed like admin.agent_version, without a foreign key: that table's immutability trigger must stay
  -- the one answer to a TRUNCATE of it.
  PRIMARY KEY (name, version)
);

-- 2. A catalog generation: bumped by every statement that changes what the catalog answers (agents,
--    bindings, shared skills, MCP servers), in the writing transaction, so a reader that sees a
--    generation sees the data of that generation. Catalog answers are cached by generation and
--    their ETag carries it.
CREATE TABLE admin.catalog_generation (
  id boolean PRIMARY KEY DEFAULT true CHECK (id),
  n bigint NOT NULL
);
INSERT INTO admin.catalog_generation (id, n) VALUES (true, 1);

CREATE FUNCTION admin.bump_catalog_generation() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE admin.catalog_generation SET n = n + 1 WHERE id;
  RETURN NULL;
END;
$$;

CREATE TRIGGER agent_catalog_generation AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON admin.agent
  FOR EACH STATEMENT EXECUTE FUNCTION admin.bump_catalog_generation();
CREATE TRIGGER agent_binding_catalog_generation AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON admin.agent_binding
  FOR EACH STATEMENT EXECUTE FUNCTION admin.bump_catalog_generation();
CREATE TRIGGER agent_skill_catalog_generation AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON admin.agent_skill
  FOR EACH STATEMENT EXECUTE FUNCTION admin.bump_catalog_generation();
CREATE TRIGGER mcp_server_catalog_generation AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON admin.mcp_server
  FOR EACH STATEMENT EXECUTE FUNCTION admin.bump_catalog_generation();

-- 3. Agent Skills as people write them: `license`, `version` and foreign front-matter keys kept,
--    and the resource files of the skill's folder (scripts/, references/, assets/, and files beside
--    SKILL.md such as reference.md) stored with it, verbatim (binary assets included). Paths are
--    relative and checked like package paths before they get here.
ALTER TABLE admin.agent_skill
  ADD COLUMN license text,
  ADD COLUMN version text,
  ADD COLUMN metadata jsonb NOT NULL DEFAULT '{}'::jsonb;

CREATE TABLE admin.agent_skill_file (
  skill text NOT NULL REFERENCES admin.agent_skill (name) ON DELETE CASCADE,
  path text NOT NULL CHECK (path <> '' AND path !~ '(^/|^\.\./|/\.\./|/\.\.$|^\.\.$)'),
  content bytea NOT NULL,
  PRIMARY KEY (skill, path)
);
