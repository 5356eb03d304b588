-- duequeue schema, version 11 (SQLite). The single source of truth: applied on first use of a
-- database and shipped inside the wheel. Every time is INTEGER unix milliseconds UTC.

-- 'dque': marks the file as ours, so a foreign SQLite database is refused instead of altered.
PRAGMA application_id = 1685157221;

CREATE TABLE reminders (
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
    -- Version 8 (docs/time.md "When zone rules change"). What the user meant, so a fire can be
    -- computed again under newer zone rules: the wall time `--at` named in tz (NULL: an instant,
    -- given in UTC or with an offset), and the wall time the pending fire was found after (the
    -- last fire passed, as the zone's clocks showed it then; NULL: from the start).
    start_wall       TEXT,
    after_wall       TEXT,
    fire_release     TEXT NOT NULL DEFAULT '', -- tz release that computed the pending fire; '' unknown
    -- Version 11. `pause`: when the reminder was paused (NULL: it is not). A paused row's
    -- next_fire_at is NULL (it is out of reminders_due, so no claim walks it); its pending fire
    -- stays in fire_at, and `resume` makes it due again.
    paused_at        INTEGER,
    CHECK ((rule_kind IS NULL) = (rule IS NULL))
);

-- The tick's due query walks this index from the oldest due row; parked rows are not in it.
CREATE INDEX reminders_due ON reminders (next_fire_at) WHERE next_fire_at IS NOT NULL;
CREATE INDEX reminders_dead ON reminders (dead_at) WHERE dead_at IS NOT NULL;
-- Version 9. A key belongs to one live reminder (pending or dead); a done or cancelled one frees
-- it. The database holds the rule, so two concurrent adds of one key land once.
CREATE UNIQUE INDEX reminders_live_key ON reminders (key)
    WHERE done_at IS NULL AND cancelled_at IS NULL;

CREATE TABLE targets (
    id          INTEGER PRIMARY KEY,
    reminder_id INTEGER NOT NULL REFERENCES reminders (id) ON DELETE CASCADE,
    channel     TEXT NOT NULL,        -- a registered channel's name (channels/registry.py)
    address     TEXT NOT NULL,
    disabled_at INTEGER,                   -- version 3: its endpoint answered 410 Gone; skipped
    disabled_reason TEXT,
    secret      TEXT,                     -- version 4: a webhook's own signing secret(s)
    UNIQUE (reminder_id, channel, address)
);

-- The ledger: one row per attempt of one target for one fire.
CREATE TABLE deliveries (
    id          INTEGER PRIMARY KEY,
    reminder_id INTEGER NOT NULL REFERENCES reminders (id) ON DELETE CASCADE,
    target_id   INTEGER NOT NULL REFERENCES targets (id) ON DELETE CASCADE,
    fire_at     INTEGER NOT NULL,
    outcome     TEXT NOT NULL CHECK (outcome IN ('sent', 'failed', 'permanent')),
    error       TEXT,
    attempt     INTEGER NOT NULL,
    at          INTEGER NOT NULL,
    -- Version 5. After a failure that may clear: the earliest next attempt of this target for
    -- this fire (the backoff, Retry-After), so a target's own retries are paced by the ledger.
    retry_at    INTEGER
);

CREATE INDEX deliveries_fire ON deliveries (reminder_id, fire_at);
-- The core rule, held by the database itself: one target is recorded as sent at most once a fire.
CREATE UNIQUE INDEX deliveries_sent_once ON deliveries (target_id, fire_at) WHERE outcome = 'sent';

-- Dead letters: a fire that exhausted its retries or failed permanently on every target. A dead
-- one-shot also has reminders.dead_at; a recurring row goes on with its next fire.
CREATE TABLE dead_letters (
    id          INTEGER PRIMARY KEY,
    reminder_id INTEGER NOT NULL REFERENCES reminders (id) ON DELETE CASCADE,
    fire_at     INTEGER NOT NULL,
    error_count INTEGER NOT NULL,
    last_error  TEXT,
    dead_at     INTEGER NOT NULL,
    retried_at  INTEGER,  -- version 2: set when `retry` re-arms the fire; NULL if it dies again
    UNIQUE (reminder_id, fire_at)
);

-- Version 3. Per-target retries: a target that failed on a fire other targets got (partial
-- success) retries that fire on its own, on the backoff table, while its row moves on; sent,
-- it is deleted, and out of retries it becomes a dead letter of that fire.
CREATE TABLE target_retries (
    id          INTEGER PRIMARY KEY,
    reminder_id INTEGER NOT NULL REFERENCES reminders (id) ON DELETE CASCADE,
    target_id   INTEGER NOT NULL REFERENCES targets (id) ON DELETE CASCADE,
    fire_at     INTEGER NOT NULL,
    error_count INTEGER NOT NULL,      -- failed attempts of this target at this fire
    last_error  TEXT,
    next_try_at INTEGER NOT NULL,
    lease_until INTEGER,
    lease_owner TEXT,
    created_at  INTEGER NOT NULL,
    UNIQUE (target_id, fire_at)
);

CREATE INDEX target_retries_due ON target_retries (next_try_at, id);
CREATE INDEX target_retries_reminder ON target_retries (reminder_id, fire_at);
CREATE INDEX targets_disabled ON targets (reminder_id) WHERE disabled_at IS NOT NULL;
-- Version 4: `doctor` finds the notify targets without reading the others.
CREATE INDEX targets_notify ON targets (address) WHERE channel = 'notify';

-- Version 7: serve's dashboard (and stats) read the ledger by time, each state and the open
-- dead letters off these (migrations/*/0007_dashboard_indexes.sql).
CREATE INDEX deliveries_at ON deliveries (at, outcome);
CREATE INDEX reminders_cancelled ON reminders (id) WHERE cancelled_at IS NOT NULL;
CREATE INDEX reminders_done ON reminders (cancelled_at, id) WHERE done_at IS NOT NULL;
CREATE INDEX reminders_retrying ON reminders (id)
    WHERE error_count > 0 AND next_fire_at IS NOT NULL;
CREATE INDEX dead_letters_open ON dead_letters (reminder_id) WHERE retried_at IS NULL;

-- Version 8. Pending fires whose zone data is older than a release (the tick's check and the
-- recompute pass walk this index from its start); parked rows are not in it.
CREATE INDEX reminders_release ON reminders (fire_release, id) WHERE next_fire_at IS NOT NULL;

-- Version 8. Queue-wide values: 'tz_release', the newest tz release the queue's fires were
-- computed with (hosts with older data do not compute back); 'paused' (version 11), present
-- while the whole queue is paused (`duequeue pause`): when, in unix ms.
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

-- Version 9. What `reschedule` and `edit` changed, one line each, for `history`.
CREATE TABLE reminder_changes (
    id          INTEGER PRIMARY KEY,
    reminder_id INTEGER NOT NULL REFERENCES reminders (id) ON DELETE CASCADE,
    at          INTEGER NOT NULL,
    change      TEXT NOT NULL
);

CREATE INDEX reminder_changes_reminder ON reminder_changes (reminder_id);

-- Version 9. One row: when a tick last ended without error (`stats --prometheus`), so an alert
-- can fire when ticks stop.
CREATE TABLE tick_marks (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    last_ok_at  INTEGER NOT NULL
);

-- Version 10. What the list shows of each reminder, for serve's search: its subject, key and each
-- target as `channel: address`, the address as shown (a notify URL's tokens masked), one per
-- line; never a secret. A trigram index (FTS5) finds any part of 3 characters or more without
-- reading the table. Written by add, import and edit (store/search_sql.py), never by a tick; a
-- deleted reminder's text goes with it.
CREATE VIRTUAL TABLE reminder_search USING fts5(text, tokenize = 'trigram', detail = 'none');
CREATE TRIGGER reminder_search_delete AFTER DELETE ON reminders BEGIN
    DELETE FROM reminder_search WHERE rowid = old.id;
END;

-- Version 11. The paused reminders (`stats`, the dashboard's list), off their own index.
CREATE INDEX reminders_paused ON reminders (id) WHERE paused_at IS NOT NULL;

PRAGMA user_version = 11;
