-- duequeue schema, version 11 (MySQL >= 8.0, MariaDB >= 10.6): the counterpart of schema.sql and
-- schema_postgres.sql, with the same tables and columns, so that `duequeue migrate` copies a
-- database column for column. Every time is BIGINT unix milliseconds UTC.
--
-- What differs from PostgreSQL's, and why:
-- - no partial indexes: a unique rule that holds for some rows only is a unique index over a
--   generated column that is NULL for the others (NULLs never collide): reminders_live_key
--   (the key's hash while the reminder is live) and deliveries_sent_once (1 for a `sent` row);
-- - an index on a long text is on its hash (targets' address) or a prefix (a key's lookup);
-- - texts compare byte for byte (utf8mb4_bin), as in the other two: keys, releases, names.
-- DDL is not transactional here: every statement may run again (IF NOT EXISTS), and the marker
-- row comes last, so a schema cut half made is completed by the next open (store/mysql.py).
-- Statements end with a semicolon at the end of a line: store/mysql.py runs them one by one.

CREATE TABLE IF NOT EXISTS duequeue_meta (
    name  VARCHAR(255) NOT NULL PRIMARY KEY,
    value TEXT NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS reminders (
    id               BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    `key`            TEXT,
    subject          TEXT NOT NULL,
    body             TEXT NOT NULL,
    data             TEXT,
    rule_kind        VARCHAR(8) CHECK (rule_kind IN ('rrule', 'cron')),
    rule             TEXT,
    tz               VARCHAR(255) NOT NULL,
    dtstart          BIGINT NOT NULL,
    misfire_grace_ms BIGINT,
    fire_at          BIGINT,
    next_fire_at     BIGINT,
    error_count      INTEGER NOT NULL DEFAULT 0,
    last_error       TEXT,
    last_fired_at    BIGINT,
    skipped_fires    INTEGER NOT NULL DEFAULT 0,
    lease_until      BIGINT,
    lease_owner      VARCHAR(255),
    done_at          BIGINT,
    dead_at          BIGINT,
    cancelled_at     BIGINT,
    created_at       BIGINT NOT NULL,
    updated_at       BIGINT NOT NULL,
    start_wall       TEXT,
    after_wall       TEXT,
    fire_release     VARCHAR(64) NOT NULL DEFAULT '',
    paused_at        BIGINT,
    -- The key while the reminder is live (pending or dead), hashed: what reminders_live_key
    -- holds unique; NULL once done or cancelled, which frees the key.
    live_key         BINARY(32) AS (CASE WHEN done_at IS NULL AND cancelled_at IS NULL
                                         AND `key` IS NOT NULL
                                    THEN UNHEX(SHA2(`key`, 256)) END) STORED,
    CHECK ((rule_kind IS NULL) = (rule IS NULL)),
    UNIQUE KEY reminders_live_key (live_key),
    KEY reminders_key (`key`(255)),
    -- The claim walks this index in its ORDER BY (next_fire_at, id).
    KEY reminders_due (next_fire_at, id),
    KEY reminders_dead (dead_at),
    KEY reminders_cancelled (cancelled_at, id),
    KEY reminders_done (done_at, cancelled_at, id),
    KEY reminders_retrying (error_count, next_fire_at),
    KEY reminders_release (fire_release, id),
    KEY reminders_paused (paused_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS targets (
    id              BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    reminder_id     BIGINT NOT NULL,
    channel         VARCHAR(255) NOT NULL,
    address         TEXT NOT NULL,
    disabled_at     BIGINT,
    disabled_reason TEXT,
    secret          TEXT,
    -- UNIQUE (reminder_id, channel, address), over a hash: an address is any length.
    target_hash     BINARY(32) AS (UNHEX(SHA2(CONCAT(channel, CHAR(0), address), 256))) STORED,
    UNIQUE KEY targets_unique (reminder_id, target_hash),
    KEY targets_disabled (reminder_id, disabled_at),
    KEY targets_notify (channel, address(255)),
    CONSTRAINT targets_reminder FOREIGN KEY (reminder_id) REFERENCES reminders (id)
        ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS deliveries (
    id          BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    reminder_id BIGINT NOT NULL,
    target_id   BIGINT NOT NULL,
    fire_at     BIGINT NOT NULL,
    outcome     VARCHAR(16) NOT NULL CHECK (outcome IN ('sent', 'failed', 'permanent')),
    error       TEXT,
    attempt     INTEGER NOT NULL,
    at          BIGINT NOT NULL,
    retry_at    BIGINT,
    -- 1 for a sent row, NULL for the others: the core rule, one target recorded as sent at most
    -- once a fire, held by the database across every host (deliveries_sent_once).
    sent        TINYINT AS (CASE WHEN outcome = 'sent' THEN 1 END) STORED,
    UNIQUE KEY deliveries_sent_once (target_id, fire_at, sent),
    KEY deliveries_fire (reminder_id, fire_at),
    KEY deliveries_at (at, outcome),
    CONSTRAINT deliveries_reminder FOREIGN KEY (reminder_id) REFERENCES reminders (id)
        ON DELETE CASCADE,
    CONSTRAINT deliveries_target FOREIGN KEY (target_id) REFERENCES targets (id)
        ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS dead_letters (
    id          BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    reminder_id BIGINT NOT NULL,
    fire_at     BIGINT NOT NULL,
    error_count INTEGER NOT NULL,
    last_error  TEXT,
    dead_at     BIGINT NOT NULL,
    retried_at  BIGINT,
    UNIQUE KEY dead_letters_fire (reminder_id, fire_at),
    KEY dead_letters_open (retried_at, reminder_id),
    CONSTRAINT dead_letters_reminder FOREIGN KEY (reminder_id) REFERENCES reminders (id)
        ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS target_retries (
    id          BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    reminder_id BIGINT NOT NULL,
    target_id   BIGINT NOT NULL,
    fire_at     BIGINT NOT NULL,
    error_count INTEGER NOT NULL,
    last_error  TEXT,
    next_try_at BIGINT NOT NULL,
    lease_until BIGINT,
    lease_owner VARCHAR(255),
    created_at  BIGINT NOT NULL,
    UNIQUE KEY target_retries_fire (target_id, fire_at),
    KEY target_retries_due (next_try_at, id),
    KEY target_retries_reminder (reminder_id, fire_at),
    CONSTRAINT target_retries_reminder FOREIGN KEY (reminder_id) REFERENCES reminders (id)
        ON DELETE CASCADE,
    CONSTRAINT target_retries_target FOREIGN KEY (target_id) REFERENCES targets (id)
        ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS queue_meta (
    name  VARCHAR(255) NOT NULL PRIMARY KEY,
    value TEXT NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS fire_moves (
    id          BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    reminder_id BIGINT NOT NULL,
    old_fire_at BIGINT NOT NULL,
    new_fire_at BIGINT NOT NULL,
    old_release VARCHAR(64) NOT NULL,
    new_release VARCHAR(64) NOT NULL,
    moved_at    BIGINT NOT NULL,
    KEY fire_moves_reminder (reminder_id, id),
    CONSTRAINT fire_moves_reminder FOREIGN KEY (reminder_id) REFERENCES reminders (id)
        ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS reminder_changes (
    id          BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    reminder_id BIGINT NOT NULL,
    at          BIGINT NOT NULL,
    `change`    TEXT NOT NULL,
    KEY reminder_changes_reminder (reminder_id),
    CONSTRAINT reminder_changes_reminder FOREIGN KEY (reminder_id) REFERENCES reminders (id)
        ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS tick_marks (
    id          INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
    last_ok_at  BIGINT NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- What the list shows of each reminder, for serve's search: no trigram index here, so a search
-- reads a bounded window of this narrow table, newest first (search_sql.py; docs/mysql.md).
CREATE TABLE IF NOT EXISTS reminder_search (
    reminder_id BIGINT NOT NULL PRIMARY KEY,
    text        TEXT NOT NULL,
    CONSTRAINT reminder_search_reminder FOREIGN KEY (reminder_id) REFERENCES reminders (id)
        ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

INSERT INTO duequeue_meta (name, value) VALUES ('application', 'duequeue'), ('schema_version', '11')
ON DUPLICATE KEY UPDATE name = name;
