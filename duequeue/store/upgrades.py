"""Schema upgrades written once for SQLite and PostgreSQL, with {ID} / {INT} the dialect's id
and integer types. sqlite.py and pg_session.py apply them, one version at a time, in the
transaction that opens an older database; what the dialects cannot share is theirs.
"""

# Steps from schema version 2 to 3, with {ID} / {INT} the dialect's id and integer types.
UPGRADE_TO_3 = """
ALTER TABLE targets ADD COLUMN disabled_at {INT};
ALTER TABLE targets ADD COLUMN disabled_reason TEXT;
CREATE TABLE target_retries (
    id          {ID},
    reminder_id {INT} NOT NULL REFERENCES reminders (id) ON DELETE CASCADE,
    target_id   {INT} NOT NULL REFERENCES targets (id) ON DELETE CASCADE,
    fire_at     {INT} NOT NULL,
    error_count INTEGER NOT NULL,
    last_error  TEXT,
    next_try_at {INT} NOT NULL,
    lease_until {INT},
    lease_owner TEXT,
    created_at  {INT} NOT NULL,
    UNIQUE (target_id, fire_at)
);
CREATE INDEX target_retries_due ON target_retries (next_try_at, id);
CREATE INDEX target_retries_reminder ON target_retries (reminder_id, fire_at);
CREATE INDEX targets_disabled ON targets (reminder_id) WHERE disabled_at IS NOT NULL;
"""

# Steps from 3 to 4, besides widening targets.channel's CHECK to 'notify' (a table's CHECK
# cannot be altered in SQL both dialects share: sqlite.py and pg_session.py each do it).
UPGRADE_TO_4 = """
ALTER TABLE targets ADD COLUMN secret TEXT;
CREATE INDEX targets_notify ON targets (address) WHERE channel = 'notify';
"""
CHANNELS_3 = "CHECK (channel IN ('email', 'webhook'))"
CHANNELS_4 = "CHECK (channel IN ('email', 'webhook', 'notify'))"
