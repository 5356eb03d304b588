-- targets.channel takes any registered channel's name (channels/registry.py): the CHECK that
-- listed email, webhook and notify goes. A CHECK that admits more values changes nothing on disk,
-- so the table's stored CREATE text is edited in place (sqlite.org/lang_altertable.html, "other
-- kinds of table schema changes"), as 0004 did; the runner bumps schema_version afterwards.
PRAGMA writable_schema = ON;
UPDATE sqlite_schema
   SET sql = replace(sql, ' CHECK (channel IN (''email'', ''webhook'', ''notify''))', '')
 WHERE type = 'table' AND name = 'targets';
PRAGMA writable_schema = OFF;
