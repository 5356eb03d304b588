-- Adding reminders (add_sql.py) and the queue-wide values next to them (tz_sql.py, ops_sql.py):
-- the inserts that must do nothing, or update, when a unique key already holds the row.

-- name: insert_reminder
-- A key belongs to one live reminder (reminders_live_key, partial): a live key inserts nothing
-- and returns no row; ON CONFLICT names the index's predicate to infer it.
INSERT INTO reminders (key, subject, body, data, rule_kind, rule, tz, dtstart,
                       misfire_grace_ms, fire_at, next_fire_at, created_at, updated_at,
                       start_wall, fire_release)
VALUES (:key, :subject, :body, :data, :rule_kind, :rule, :tz, :dtstart,
        :misfire_grace_ms, :fire_at, :next_fire_at, :created_at, :updated_at,
        :start_wall, :fire_release)
ON CONFLICT (key) WHERE done_at IS NULL AND cancelled_at IS NULL DO NOTHING
RETURNING id, key

-- name: insert_reminder [mysql]
-- reminders_live_key is a unique index on a generated column (the key's hash while the row is
-- live, NULL otherwise). INSERT IGNORE leaves out the row whose key a live one holds (in strict
-- mode it also turns other errors into warnings, which the values checked before, rules/,
-- never raise); no INSERT ... RETURNING on MySQL 8: the id is LAST_INSERT_ID(), and no row comes
-- back when nothing was inserted (statements.py: the parts run in order).
INSERT IGNORE INTO reminders (key, subject, body, data, rule_kind, rule, tz, dtstart,
                              misfire_grace_ms, fire_at, next_fire_at, created_at, updated_at,
                              start_wall, fire_release)
VALUES (:key, :subject, :body, :data, :rule_kind, :rule, :tz, :dtstart,
        :misfire_grace_ms, :fire_at, :next_fire_at, :created_at, :updated_at,
        :start_wall, :fire_release)
;
SELECT LAST_INSERT_ID(), :key FROM DUAL WHERE ROW_COUNT() > 0

-- name: insert_target
INSERT INTO targets (reminder_id, channel, address, secret)
VALUES (:rid, :channel, :address, :secret)
ON CONFLICT DO NOTHING

-- name: insert_target [mysql]
INSERT INTO targets (reminder_id, channel, address, secret)
VALUES (:rid, :channel, :address, :secret)
ON DUPLICATE KEY UPDATE id = id

-- name: put_meta_once
-- A queue-wide value written once (a zone's digest under a release): the first writer wins.
INSERT INTO queue_meta (name, value) VALUES (:name, :digest)
ON CONFLICT (name) DO NOTHING

-- name: put_meta_once [mysql]
INSERT INTO queue_meta (name, value) VALUES (:name, :digest)
ON DUPLICATE KEY UPDATE name = name

-- name: set_tz_release
-- The queue's tz release, never lowered, in one statement (hosts race): releases order by
-- year, then the length of their letters, then the letters (2026z < 2026za).
INSERT INTO queue_meta (name, value) VALUES ('tz_release', :release)
ON CONFLICT (name) DO UPDATE SET value = excluded.value
WHERE (substr(excluded.value, 1, 4), length(excluded.value), excluded.value)
    > (substr(queue_meta.value, 1, 4), length(queue_meta.value), queue_meta.value)

-- name: set_tz_release [mysql]
-- No WHERE on the update: the condition picks the value to keep.
INSERT INTO queue_meta (name, value) VALUES ('tz_release', :release)
ON DUPLICATE KEY UPDATE value = CASE
    WHEN (substr(VALUES(value), 1, 4), length(VALUES(value)), VALUES(value))
         > (substr(value, 1, 4), length(value), value)
    THEN VALUES(value) ELSE value END

-- name: set_tick_release
-- The tz release the last tick read, on a database one host ticks.
INSERT INTO queue_meta (name, value) VALUES ('tick_tz_release', :release)
ON CONFLICT (name) DO UPDATE SET value = excluded.value

-- name: set_tick_release [mysql]
INSERT INTO queue_meta (name, value) VALUES ('tick_tz_release', :release)
ON DUPLICATE KEY UPDATE value = VALUES(value)
