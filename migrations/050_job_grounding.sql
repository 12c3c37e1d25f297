-- The grounding check of a completed job (issue 17, docs/grounding.md): its citation counts
-- ({"grounded", "ungrounded", "unknown", "required"}); the citations themselves are in its `grounding`
-- event. Null for a job that was not checked (it failed before its model finished, or ran before 050).

ALTER TABLE runtime.job ADD COLUMN grounding jsonb;
