-- What the list shows of each reminder, for serve's search (schema.sql, version 10).
CREATE VIRTUAL TABLE reminder_search USING fts5(text, tokenize = 'trigram', detail = 'none');
CREATE TRIGGER reminder_search_delete AFTER DELETE ON reminders BEGIN
    DELETE FROM reminder_search WHERE rowid = old.id;
END;
-- The reminders stored before: SQL cannot mask an address as its channel does (only Apprise
-- knows which parts of a notify URL are tokens), so email and webhook addresses, shown as
-- stored, go in whole, and any other channel's as its scheme and **** (what the list shows
-- without Apprise): less than the list shows, never a secret. `edit` writes the full text.
INSERT INTO reminder_search (rowid, text)
SELECT r.id, r.subject || char(10) || coalesce(r.key, '') || coalesce((
        SELECT group_concat(char(10) || t.channel || ': ' || CASE
            WHEN t.channel IN ('email', 'webhook') THEN t.address
            WHEN instr(t.address, '://') > 0
                THEN substr(t.address, 1, instr(t.address, '://') + 2) || '****'
            ELSE '****' END, '')
        FROM targets t WHERE t.reminder_id = r.id), '')
FROM reminders r;
