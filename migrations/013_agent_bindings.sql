-- Model bindings: which provider model an agent id uses. project_id '' is the installation
-- default; a project row overrides it (projects arrive with the worker).

CREATE TABLE admin.agent_binding (
  agent_name text NOT NULL,
  project_id text NOT NULL DEFAULT '',
  provider_id text NOT NULL,
  model_id text NOT NULL,
  thinking text CHECK (thinking IN ('off', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max')),
  updated_by text NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now(),
  -- '' rather than NULL for the installation default, so the primary key covers it.
  PRIMARY KEY (agent_name, project_id)
);
