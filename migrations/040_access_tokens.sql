-- API tokens expire and users can be disabled. A disabled user's sessions and tokens stop working at
-- once: every lookup joins on disabled_at IS NULL (nothing is cached).

ALTER TABLE admin.app_user ADD COLUMN disabled_at timestamptz;

-- Every token expires (at most a year after it is made). Tokens made before expiry existed get 90 days
-- from this migration rather than from their creation, so an upgrade locks no running integration out.
ALTER TABLE admin.api_token ADD COLUMN expires_at timestamptz;
UPDATE admin.api_token SET expires_at = now() + interval '90 days' WHERE expires_at IS NULL;
ALTER TABLE admin.api_token ALTER COLUMN expires_at SET NOT NULL;
ALTER TABLE admin.api_token ADD CONSTRAINT api_token_name_check CHECK (char_length(name) BETWEEN 1 AND 64) NOT VALID;

CREATE INDEX api_token_user_idx ON admin.api_token (user_id, created_at);
