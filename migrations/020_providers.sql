-- LLM providers and MCP servers. API keys and header values are stored only sealed (AES-256-GCM,
-- key outside the database): the *_sealed columns never hold plaintext.

CREATE TABLE admin.llm_provider (
  id text PRIMARY KEY CHECK (id ~ '^[a-z][a-z0-9-]{0,63}$'),
  -- 'custom': an OpenAI-/Anthropic-compatible endpoint with its own models; 'builtin': a pi-ai catalog provider.
  kind text NOT NULL CHECK (kind IN ('custom', 'builtin')),
  api text,
  base_url text,
  builtin text,
  models jsonb NOT NULL DEFAULT '[]'::jsonb,
  api_key_sealed text NOT NULL,
  headers_sealed text,
  updated_by text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  CHECK ((kind = 'custom' AND api IS NOT NULL AND base_url IS NOT NULL AND builtin IS NULL)
      OR (kind = 'builtin' AND builtin IS NOT NULL AND api IS NULL AND base_url IS NULL))
);

CREATE TABLE admin.mcp_server (
  name text PRIMARY KEY CHECK (name ~ '^[a-z][a-z0-9-]{0,63}$'),
  url text NOT NULL,
  headers_sealed text,
  timeout_sec integer NOT NULL DEFAULT 30 CHECK (timeout_sec BETWEEN 1 AND 600),
  allowed_tools jsonb NOT NULL DEFAULT '[]'::jsonb,
  -- An admin's explicit allowance to reach private addresses (an on-premises server).
  allow_private_network boolean NOT NULL DEFAULT false,
  updated_by text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
