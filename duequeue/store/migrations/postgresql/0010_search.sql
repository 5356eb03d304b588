-- What the list shows of each reminder, for serve's search (schema_postgres.sql, version 10).
CREATE TABLE reminder_search (
    reminder_id BIGINT PRIMARY KEY REFERENCES reminders (id) ON DELETE CASCADE,
    text        TEXT NOT NULL
);
-- The reminders stored before: SQL cannot mask an address as its channel does (only Apprise
-- knows which parts of a notify URL are tokens), so email and webhook addresses, shown as
-- stored, go in whole, and any other channel's as its scheme and **** (what the list shows
-- without Apprise): less than the list shows, never a secret. `edit` writes the full text.
INSERT INTO reminder_search (reminder_id, text)
SELECT r.id, r.subject || chr(10) || coalesce(r.key, '') || coalesce((
        SELECT string_agg(chr(10) || t.channel || ': ' || CASE
            WHEN t.channel IN ('email', 'webhook') THEN t.address
            WHEN position('://' IN t.address) > 0
                THEN split_part(t.address, '://', 1) || '://****'
            ELSE '****' END, '' ORDER BY t.id)
        FROM targets t WHERE t.reminder_id = r.id), '')
FROM reminders r;
-- The index after the rows: one build instead of an insert per row.
DO $$
DECLARE
    home TEXT;
BEGIN
    SELECT n.nspname INTO home FROM pg_extension e
        JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm';
    IF home IS NULL THEN
        home := current_schema();
        EXECUTE format('CREATE EXTENSION pg_trgm SCHEMA %I', home);
    END IF;
    EXECUTE format('CREATE INDEX reminder_search_trigrams ON reminder_search '
                   'USING gin (text %I.gin_trgm_ops)', home);
EXCEPTION WHEN OTHERS THEN
    RAISE NOTICE 'duequeue: no trigram index for search (%)', SQLERRM;
END $$;
