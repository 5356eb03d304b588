-- Per-target retries of a partial success, and targets switched off after 410 Gone.
ALTER TABLE targets ADD COLUMN disabled_at INTEGER;
ALTER TABLE targets ADD COLUMN disabled_reason TEXT;
CREATE TABLE target_retries (
    id          INTEGER PRIMARY KEY,
    reminder_id INTEGER NOT NULL REFERENCES reminders (id) ON DELETE CASCADE,
    target_id   INTEGER NOT NULL REFERENCES targets (id) ON DELETE CASCADE,
    fire_at     INTEGER NOT NULL,
    error_count INTEGER NOT NULL,
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
