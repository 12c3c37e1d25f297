-- Other processes' writes, heard: every table of the app's schemas notifies `kintsugi_writes` (payload
-- `schema.table`) once per writing statement, so a `kintsugi serve` sharing a PostgreSQL server drops
-- what it answered from memory (src/db/serverWrites.ts). Fail-safe by default: a table is triggered
-- unless it is one of the named high-churn tables below, which no read cached until a write depends on
-- (src/db/serverWrites.ts UNNOTIFIED_TABLES; test/db/serverWrites.test.ts checks both lists agree).
-- A table added by a later migration needs its own `notify_write` trigger (that test fails otherwise).
-- Harmless on the embedded database (no listener; its own protocol watcher sees every write).
-- Notifications are sent at COMMIT only (a rolled back write notifies nothing) and identical ones of a
-- transaction are folded into one.
CREATE FUNCTION admin.notify_write() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('kintsugi_writes', TG_TABLE_SCHEMA || '.' || TG_TABLE_NAME);
  RETURN NULL;
END
$$;

DO $$
DECLARE
  t record;
BEGIN
  FOR t IN
    SELECT schemaname, tablename FROM pg_tables
    WHERE schemaname IN ('admin', 'runtime', 'memory')
      AND schemaname || '.' || tablename NOT IN ('runtime.job', 'runtime.job_event', 'runtime.web_usage_day', 'runtime.web_usage_job')
    ORDER BY 1, 2
  LOOP
    EXECUTE format(
      'CREATE TRIGGER notify_write AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON %I.%I FOR EACH STATEMENT EXECUTE FUNCTION admin.notify_write()',
      t.schemaname, t.tablename);
  END LOOP;
END
$$;
