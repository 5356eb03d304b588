-- What the user meant is stored beside the instants it computed (docs/time.md "When zone rules
-- change"). Existing rows get fire_release '' (unknown): the first tick backfills their start_wall
-- and after_wall from the stored instants under the data in use, without moving any fire.
ALTER TABLE reminders ADD COLUMN start_wall TEXT;
ALTER TABLE reminders ADD COLUMN after_wall TEXT;
ALTER TABLE reminders ADD COLUMN fire_release TEXT NOT NULL DEFAULT '';
-- Version 8. Pending fires whose zone data is older than a release (the tick's check and the
-- recompute pass walk this index from its start); parked rows are not in it.
CREATE INDEX reminders_release ON reminders (fire_release, id) WHERE next_fire_at IS NOT NULL;

-- Version 8. Queue-wide values: 'tz_release', the newest tz release the queue's fires were
-- computed with (hosts with older data do not compute back).
CREATE TABLE queue_meta (
    name  TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

-- Version 8. A pending fire moved by a zone rules change: its instant before and after, and the
-- tz releases of each (`history`, `stats`).
CREATE TABLE fire_moves (
    id          INTEGER PRIMARY KEY,
    reminder_id INTEGER NOT NULL REFERENCES reminders (id) ON DELETE CASCADE,
    old_fire_at INTEGER NOT NULL,
    new_fire_at INTEGER NOT NULL,
    old_release TEXT NOT NULL,
    new_release TEXT NOT NULL,
    moved_at    INTEGER NOT NULL
);

CREATE INDEX fire_moves_reminder ON fire_moves (reminder_id, id);
