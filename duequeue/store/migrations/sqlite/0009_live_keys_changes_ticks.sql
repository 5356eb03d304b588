-- A key is unique among live reminders only: a done or cancelled one frees it. SQLite cannot drop
-- the column's UNIQUE constraint, so the table is rebuilt (sqlite.org/lang_altertable.html, the
-- 12 steps); the runner has turned foreign keys off for this transaction, so dropping the old
-- table cascades to nothing, and checks them all (PRAGMA foreign_key_check) before committing.
CREATE TABLE reminders_v9 (
    id               INTEGER PRIMARY KEY,
    key              TEXT,                        -- `add --key`: unique among live rows (version 9)
    subject          TEXT NOT NULL,
    body             TEXT NOT NULL,
    data             TEXT,                        -- JSON value, NULL when none
    rule_kind        TEXT CHECK (rule_kind IN ('rrule', 'cron')),
    rule             TEXT,                        -- RRULE text or 5-field cron expression
    tz               TEXT NOT NULL,               -- IANA zone the rule is evaluated in
    dtstart          INTEGER NOT NULL,            -- the --at instant; the RRULE's DTSTART
    misfire_grace_ms INTEGER,                     -- skip a fire later than this instead of sending
    fire_at          INTEGER,                     -- scheduled instant of the pending fire
    next_fire_at     INTEGER,                     -- when to try it (later than fire_at in backoff); NULL = parked
    error_count      INTEGER NOT NULL DEFAULT 0,  -- failed attempts of the pending fire
    last_error       TEXT,
    last_fired_at    INTEGER,                     -- scheduled instant of the last finished fire
    skipped_fires    INTEGER NOT NULL DEFAULT 0,  -- fires coalesced away after missed ticks
    lease_until      INTEGER,                     -- a tick owns the row until then
    lease_owner      TEXT,
    done_at          INTEGER,                     -- a finished one-shot or an ended rule
    dead_at          INTEGER,                     -- a dead-lettered one-shot
    cancelled_at     INTEGER,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    start_wall       TEXT,                        -- version 8: what the user meant (docs/time.md)
    after_wall       TEXT,
    fire_release     TEXT NOT NULL DEFAULT '', -- tz release that computed the pending fire; '' unknown
    CHECK ((rule_kind IS NULL) = (rule IS NULL))
);
INSERT INTO reminders_v9 (id, key, subject, body, data, rule_kind, rule, tz, dtstart,
        misfire_grace_ms, fire_at, next_fire_at, error_count, last_error, last_fired_at,
        skipped_fires, lease_until, lease_owner, done_at, dead_at, cancelled_at, created_at,
        updated_at, start_wall, after_wall, fire_release)
    SELECT id, key, subject, body, data, rule_kind, rule, tz, dtstart, misfire_grace_ms,
        fire_at, next_fire_at, error_count, last_error, last_fired_at, skipped_fires,
        lease_until, lease_owner, done_at, dead_at, cancelled_at, created_at, updated_at,
        start_wall, after_wall, fire_release
    FROM reminders;
DROP TABLE reminders;
ALTER TABLE reminders_v9 RENAME TO reminders;
CREATE INDEX reminders_due ON reminders (next_fire_at) WHERE next_fire_at IS NOT NULL;
CREATE INDEX reminders_dead ON reminders (dead_at) WHERE dead_at IS NOT NULL;
CREATE UNIQUE INDEX reminders_live_key ON reminders (key)
    WHERE done_at IS NULL AND cancelled_at IS NULL;
-- The rebuild dropped versions 7's and 8's indexes on reminders with the old table: made again.
CREATE INDEX reminders_release ON reminders (fire_release, id) WHERE next_fire_at IS NOT NULL;
CREATE INDEX reminders_cancelled ON reminders (id) WHERE cancelled_at IS NOT NULL;
CREATE INDEX reminders_done ON reminders (cancelled_at, id) WHERE done_at IS NOT NULL;
CREATE INDEX reminders_retrying ON reminders (id)
    WHERE error_count > 0 AND next_fire_at IS NOT NULL;

-- What `reschedule` and `edit` changed, for `history`.
CREATE TABLE reminder_changes (
    id          INTEGER PRIMARY KEY,
    reminder_id INTEGER NOT NULL REFERENCES reminders (id) ON DELETE CASCADE,
    at          INTEGER NOT NULL,
    change      TEXT NOT NULL
);
CREATE INDEX reminder_changes_reminder ON reminder_changes (reminder_id);

-- When a tick last ended without error.
CREATE TABLE tick_marks (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    last_ok_at  INTEGER NOT NULL
);
