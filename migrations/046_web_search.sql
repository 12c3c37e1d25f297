-- Public web search and fetch (design/memory-and-web.md §4): the installation's one search backend
-- (its API key only sealed), each project's grants and budgets, and the usage counted against them.

CREATE TABLE admin.web_search_backend (
  -- One row at most: the installation's backend.
  singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  kind text NOT NULL CHECK (kind IN ('searxng', 'brave')),
  url text NOT NULL,
  api_key_sealed text,
  updated_by text NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now(),
  CHECK (kind <> 'brave' OR api_key_sealed IS NOT NULL)
);

-- A project without a row grants nothing (no agent, no fetch) and has the default budgets.
CREATE TABLE runtime.project_web (
  project_id text PRIMARY KEY REFERENCES runtime.project (id) ON DELETE CASCADE,
  search_agents jsonb NOT NULL DEFAULT '[]'::jsonb,
  fetch_enabled boolean NOT NULL DEFAULT false,
  daily_searches integer NOT NULL DEFAULT 100 CHECK (daily_searches >= 0),
  daily_fetches integer NOT NULL DEFAULT 200 CHECK (daily_fetches >= 0),
  job_searches integer NOT NULL DEFAULT 10 CHECK (job_searches >= 0),
  job_fetches integer NOT NULL DEFAULT 20 CHECK (job_fetches >= 0),
  updated_by text NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- Calls counted per project per UTC day, and per job: each call is one conditional upsert that only
-- counts while under the budget, so parallel jobs and several serve processes never overspend.
CREATE TABLE runtime.web_usage_day (
  project_id text NOT NULL REFERENCES runtime.project (id) ON DELETE CASCADE,
  day date NOT NULL,
  searches integer NOT NULL DEFAULT 0 CHECK (searches >= 0),
  fetches integer NOT NULL DEFAULT 0 CHECK (fetches >= 0),
  PRIMARY KEY (project_id, day)
);

CREATE TABLE runtime.web_usage_job (
  job_id uuid PRIMARY KEY REFERENCES runtime.job (id) ON DELETE CASCADE,
  project_id text NOT NULL,
  searches integer NOT NULL DEFAULT 0 CHECK (searches >= 0),
  fetches integer NOT NULL DEFAULT 0 CHECK (fetches >= 0)
);
