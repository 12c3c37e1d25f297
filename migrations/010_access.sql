-- Access: users with hashed passwords, their permissions, portal sessions and API tokens.
-- Secrets are never stored: sessions and tokens are kept as SHA-256 hashes of the random value the
-- client holds, passwords as Bun.password (argon2id) hashes.

CREATE TABLE admin.app_user (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  username text NOT NULL UNIQUE CHECK (username ~ '^[a-z0-9][a-z0-9._@-]{0,63}$'),
  password_hash text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE admin.user_permission (
  user_id uuid NOT NULL REFERENCES admin.app_user (id) ON DELETE CASCADE,
  permission text NOT NULL CHECK (permission IN ('agents.manage', 'providers.manage')),
  PRIMARY KEY (user_id, permission)
);

CREATE TABLE admin.session (
  token_hash text PRIMARY KEY,
  user_id uuid NOT NULL REFERENCES admin.app_user (id) ON DELETE CASCADE,
  -- The CSRF token of this session: sent in forms and the X-CSRF-Token header, compared server-side.
  csrf_token text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL
);
CREATE INDEX session_user_idx ON admin.session (user_id);

CREATE TABLE admin.api_token (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  user_id uuid NOT NULL REFERENCES admin.app_user (id) ON DELETE CASCADE,
  name text NOT NULL,
  token_hash text NOT NULL UNIQUE,
  created_at timestamptz NOT NULL DEFAULT now(),
  last_used_at timestamptz,
  revoked_at timestamptz
);
