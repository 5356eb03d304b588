-- Notify targets (Apprise) and a webhook's own signing secret.
ALTER TABLE targets ADD COLUMN secret TEXT;
CREATE INDEX targets_notify ON targets (address) WHERE channel = 'notify';
-- targets.channel's CHECK admits 'notify'. A CHECK that admits more values changes nothing on
-- disk, so the table's stored CREATE text is edited in place (sqlite.org/lang_altertable.html,
-- "other kinds of table schema changes") rather than copying every target into a new table,
-- which would cascade deletes into the ledger. The runner bumps schema_version afterwards, so
-- every connection reads the new text.
PRAGMA writable_schema = ON;
UPDATE sqlite_schema
   SET sql = replace(sql, 'CHECK (channel IN (''email'', ''webhook''))',
                          'CHECK (channel IN (''email'', ''webhook'', ''notify''))')
 WHERE type = 'table' AND name = 'targets';
PRAGMA writable_schema = OFF;
