-- A tick's commit (commit_sql.py): the ledger's records, the claims' resolutions, the upserts of
-- target retries and dead letters. The default is SQLite's and PostgreSQL's; SQLite's own
-- `record` and `resolve_done` go with the reads commit_sql makes first (Dialect.read_then_write).

-- name: record
-- A second `sent` of one target and fire is a no-op (deliveries_sent_once), and so is the same
-- attempt recorded again. Every value is CAST: PostgreSQL types the SELECT list on its own,
-- before the INSERT's columns. The probe compares `outcome || ''`, not `outcome`: a condition on
-- outcome itself would make the partial index deliveries_sent_once usable or not depending on
-- the bound value, and SQLite then compiles the statement again for every row.
INSERT INTO deliveries
    (reminder_id, target_id, fire_at, outcome, error, attempt, at, retry_at)
SELECT CAST(:rid AS BIGINT), CAST(:tid AS BIGINT), CAST(:fire AS BIGINT),
       CAST(:outcome AS TEXT), CAST(:error AS TEXT), CAST(:attempt AS INTEGER),
       CAST(:at AS BIGINT), CAST(:retry_at AS BIGINT)
WHERE NOT EXISTS (SELECT 1 FROM deliveries
                  WHERE reminder_id = :rid AND fire_at = :fire AND target_id = :tid
                    AND attempt = :attempt AND outcome || '' = :outcome)
ON CONFLICT DO NOTHING

-- name: record [sqlite]
-- The records commit_sql found not in the ledger yet (Dialect.read_then_write): a plain
-- INSERT, which reads no table, so SQLite needs no temporary b-tree to run it.
INSERT INTO deliveries
    (reminder_id, target_id, fire_at, outcome, error, attempt, at, retry_at)
VALUES (:rid, :tid, :fire, :outcome, :error, :attempt, :at, :retry_at)
ON CONFLICT DO NOTHING

-- name: record [mysql]
-- deliveries_sent_once is a unique index on (target_id, fire_at, sent) where `sent` is 1 for a
-- sent row and NULL otherwise (no partial indexes): a second `sent` is the duplicate key, and
-- `id = id` leaves the row as it was. A FROM is needed before WHERE: DUAL.
INSERT INTO deliveries
    (reminder_id, target_id, fire_at, outcome, error, attempt, at, retry_at)
SELECT :rid, :tid, :fire, :outcome, :error, :attempt, :at, :retry_at FROM DUAL
WHERE NOT EXISTS (SELECT 1 FROM deliveries
                  WHERE reminder_id = :rid AND fire_at = :fire AND target_id = :tid
                    AND attempt = :attempt AND outcome = :outcome)
ON DUPLICATE KEY UPDATE id = id

-- name: resolve_row
-- A row claim's new state, only while `owner` still holds its lease (fencing).
UPDATE reminders SET
    fire_at = :pending, next_fire_at = :next, error_count = :errors, last_error = :error,
    last_fired_at = CASE WHEN :fired THEN :fire ELSE last_fired_at END,
    skipped_fires = skipped_fires + :skipped,
    done_at = CASE WHEN :state = 'done' THEN :now END,
    dead_at = CASE WHEN :state = 'dead' THEN :dead_at END,
    after_wall = CASE WHEN CAST(:release AS TEXT) IS NULL THEN after_wall
                      ELSE CAST(:after_wall AS TEXT) END,
    fire_release = COALESCE(CAST(:release AS TEXT), fire_release),
    lease_owner = NULL, lease_until = NULL, updated_at = :now
WHERE id = :id AND lease_owner = :owner
RETURNING id

-- name: resolve_row [mysql]
-- No UPDATE ... RETURNING: the row is read and locked, then updated (statements.py).
SELECT id FROM reminders WHERE id = :id AND lease_owner = :owner FOR UPDATE
;
UPDATE reminders SET
    fire_at = :pending, next_fire_at = :next, error_count = :errors, last_error = :error,
    last_fired_at = CASE WHEN :fired THEN :fire ELSE last_fired_at END,
    skipped_fires = skipped_fires + :skipped,
    done_at = CASE WHEN :state = 'done' THEN :now END,
    dead_at = CASE WHEN :state = 'dead' THEN :dead_at END,
    after_wall = CASE WHEN :release IS NULL THEN after_wall ELSE :after_wall END,
    fire_release = COALESCE(:release, fire_release),
    lease_owner = NULL, lease_until = NULL, updated_at = :now
WHERE id IN :selected

-- name: resolve_done
-- resolve_row for records.SENT_DONE (a one-shot that reached every target: done), the common
-- write-back: the same row (tests/store_contract.py holds the two equal), 4 parameters bound
-- instead of 14, no CASE to evaluate.
UPDATE reminders SET
    fire_at = NULL, next_fire_at = NULL, error_count = 0, last_error = NULL,
    last_fired_at = :fire, done_at = :now, dead_at = NULL,
    lease_owner = NULL, lease_until = NULL, updated_at = :now
WHERE id = :id AND lease_owner = :owner
RETURNING id

-- name: resolve_done [sqlite]
-- Run for the rows commit_sql found still ours (Dialect.read_then_write): no RETURNING, for
-- which SQLite fills a temporary b-tree every run. The lease is still tested.
UPDATE reminders SET
    fire_at = NULL, next_fire_at = NULL, error_count = 0, last_error = NULL,
    last_fired_at = :fire, done_at = :now, dead_at = NULL,
    lease_owner = NULL, lease_until = NULL, updated_at = :now
WHERE id = :id AND lease_owner = :owner

-- name: resolve_done [mysql]
SELECT id FROM reminders WHERE id = :id AND lease_owner = :owner FOR UPDATE
;
UPDATE reminders SET
    fire_at = NULL, next_fire_at = NULL, error_count = 0, last_error = NULL,
    last_fired_at = :fire, done_at = :now, dead_at = NULL,
    lease_owner = NULL, lease_until = NULL, updated_at = :now
WHERE id IN :selected

-- name: take_retry
-- A target claim's retry row is taken back whatever comes next.
DELETE FROM target_retries
WHERE target_id = :tid AND fire_at = :fire AND lease_owner = :owner
RETURNING target_id, fire_at

-- name: take_retry [mysql]
-- MySQL 8 has no DELETE ... RETURNING: the row is read and locked, then deleted.
SELECT target_id, fire_at FROM target_retries
WHERE target_id = :tid AND fire_at = :fire AND lease_owner = :owner FOR UPDATE
;
DELETE FROM target_retries
WHERE target_id IN :selected AND fire_at = :fire AND lease_owner = :owner

-- name: waiting
-- A target still retrying, put back with its new state.
INSERT INTO target_retries
    (reminder_id, target_id, fire_at, error_count, last_error, next_try_at, created_at)
VALUES (:rid, :tid, :fire, :errors, :error, :next, :now)
ON CONFLICT (target_id, fire_at) DO UPDATE SET
    error_count = excluded.error_count, last_error = excluded.last_error,
    next_try_at = excluded.next_try_at, lease_owner = NULL, lease_until = NULL

-- name: waiting [mysql]
INSERT INTO target_retries
    (reminder_id, target_id, fire_at, error_count, last_error, next_try_at, created_at)
VALUES (:rid, :tid, :fire, :errors, :error, :next, :now)
ON DUPLICATE KEY UPDATE
    error_count = VALUES(error_count), last_error = VALUES(last_error),
    next_try_at = VALUES(next_try_at), lease_owner = NULL, lease_until = NULL

-- name: dead
-- Targets of one fire that die apart share the fire's dead letter: its error names each, its
-- count is the most failed attempts.
INSERT INTO dead_letters (reminder_id, fire_at, error_count, last_error, dead_at)
VALUES (:rid, :fire, :errors, :error, :dead_at)
ON CONFLICT (reminder_id, fire_at) DO UPDATE SET
    error_count = CASE
        WHEN dead_letters.retried_at IS NULL
             AND dead_letters.error_count > excluded.error_count
        THEN dead_letters.error_count ELSE excluded.error_count END,
    last_error = CASE
        WHEN dead_letters.retried_at IS NULL AND dead_letters.last_error IS NOT NULL
        THEN substr(dead_letters.last_error || '; ' || excluded.last_error, 1, :max)
        ELSE excluded.last_error END,
    dead_at = excluded.dead_at, retried_at = NULL

-- name: dead [mysql]
-- ON DUPLICATE KEY UPDATE assigns left to right, each assignment seeing the ones before it:
-- retried_at is cleared last, after the CASEs read it.
INSERT INTO dead_letters (reminder_id, fire_at, error_count, last_error, dead_at)
VALUES (:rid, :fire, :errors, :error, :dead_at)
ON DUPLICATE KEY UPDATE
    error_count = CASE
        WHEN retried_at IS NULL AND error_count > VALUES(error_count)
        THEN error_count ELSE VALUES(error_count) END,
    last_error = CASE
        WHEN retried_at IS NULL AND last_error IS NOT NULL
        THEN substr(last_error || '; ' || VALUES(last_error), 1, :max)
        ELSE VALUES(last_error) END,
    dead_at = VALUES(dead_at), retried_at = NULL
