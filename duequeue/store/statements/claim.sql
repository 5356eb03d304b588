-- A tick's claim (claim_sql.py): lease due rows and due target retries, then read the ledger of
-- their fires. The default is SQLite's; an override where a database's shape differs.
-- Parameters: owner, until, now, max, limit. A paused reminder has no next_fire_at; a paused
-- queue (queue_meta 'paused') gives nothing.

-- name: claim_rows
-- One writer at a time (BEGIN IMMEDIATE): nothing to skip or lock. Walks reminders_due in its
-- ORDER BY. RETURNING gives no order: the caller sorts by next_fire_at, id.
UPDATE reminders SET lease_owner = :owner, lease_until = :until, updated_at = :now
WHERE id IN (SELECT id FROM reminders
             WHERE next_fire_at <= :now AND error_count < :max
               AND (lease_until IS NULL OR lease_until < :now)
               AND NOT EXISTS (SELECT 1 FROM queue_meta WHERE name = 'paused')
             ORDER BY next_fire_at, id LIMIT :limit)
RETURNING id, subject, body, data, rule_kind, rule, tz, dtstart, misfire_grace_ms,
          fire_at, error_count, next_fire_at

-- name: claim_rows [postgresql]
-- Concurrent claims on many hosts pass each other's rows by (SKIP LOCKED). The subquery runs
-- once and the UPDATE probes the primary key, where `IN (...)` may be planned as a hash semi
-- join over a sequential scan once the LIMIT is large (test_pg_plans.py).
UPDATE reminders SET lease_owner = :owner, lease_until = :until, updated_at = :now
WHERE id = ANY(ARRAY(SELECT id FROM reminders
                     WHERE next_fire_at <= :now AND error_count < :max
                       AND (lease_until IS NULL OR lease_until < :now)
                       AND NOT EXISTS (SELECT 1 FROM queue_meta WHERE name = 'paused')
                     ORDER BY next_fire_at, id LIMIT :limit FOR UPDATE SKIP LOCKED))
RETURNING id, subject, body, data, rule_kind, rule, tz, dtstart, misfire_grace_ms,
          fire_at, error_count, next_fire_at

-- name: claim_rows [mysql]
-- No UPDATE ... RETURNING, no LIMIT in an IN subquery: pick and lock the rows, then lease them
-- (`:selected`, the ids the SELECT returned; statements.py). Same transaction, so the SELECT's
-- values are what the UPDATE leaves (it changes none of them).
SELECT id, subject, body, data, rule_kind, rule, tz, dtstart, misfire_grace_ms,
       fire_at, error_count, next_fire_at
FROM reminders
WHERE next_fire_at <= :now AND error_count < :max
  AND (lease_until IS NULL OR lease_until < :now)
  AND NOT EXISTS (SELECT 1 FROM queue_meta WHERE name = 'paused')
ORDER BY next_fire_at, id LIMIT :limit FOR UPDATE SKIP LOCKED
;
UPDATE reminders SET lease_owner = :owner, lease_until = :until, updated_at = :now
WHERE id IN :selected

-- name: claim_retries
-- Due per-target retries whose reminder is not paused. Parameters: owner, until, now, limit.
UPDATE target_retries SET lease_owner = :owner, lease_until = :until
WHERE id IN (SELECT id FROM target_retries
             WHERE next_try_at <= :now AND (lease_until IS NULL OR lease_until < :now)
               AND NOT EXISTS (SELECT 1 FROM queue_meta WHERE name = 'paused')
               AND NOT EXISTS (SELECT 1 FROM reminders p
                               WHERE p.id = target_retries.reminder_id
                                 AND p.paused_at IS NOT NULL)
             ORDER BY next_try_at, id LIMIT :limit)
RETURNING id, reminder_id, target_id, fire_at, error_count, next_try_at

-- name: claim_retries [postgresql]
UPDATE target_retries SET lease_owner = :owner, lease_until = :until
WHERE id = ANY(ARRAY(SELECT id FROM target_retries
                     WHERE next_try_at <= :now AND (lease_until IS NULL OR lease_until < :now)
                       AND NOT EXISTS (SELECT 1 FROM queue_meta WHERE name = 'paused')
                       AND NOT EXISTS (SELECT 1 FROM reminders p
                                       WHERE p.id = target_retries.reminder_id
                                         AND p.paused_at IS NOT NULL)
                     ORDER BY next_try_at, id LIMIT :limit FOR UPDATE SKIP LOCKED))
RETURNING id, reminder_id, target_id, fire_at, error_count, next_try_at

-- name: claim_retries [mysql]
SELECT id, reminder_id, target_id, fire_at, error_count, next_try_at FROM target_retries
WHERE next_try_at <= :now AND (lease_until IS NULL OR lease_until < :now)
  AND NOT EXISTS (SELECT 1 FROM queue_meta WHERE name = 'paused')
  AND NOT EXISTS (SELECT 1 FROM reminders p
                  WHERE p.id = target_retries.reminder_id AND p.paused_at IS NOT NULL)
ORDER BY next_try_at, id LIMIT :limit FOR UPDATE SKIP LOCKED
;
UPDATE target_retries SET lease_owner = :owner, lease_until = :until
WHERE id IN :selected

-- name: ledger_of_fires
-- The ledger rows of a batch of fires (:rids[i], :fires[i]), oldest first, in one statement (a
-- query per fire cost more than the claim itself). SQLite zips the two JSON lists by position
-- and probes deliveries_fire per pair.
SELECT d.reminder_id, d.fire_at, d.target_id, d.outcome, d.error, d.attempt, d.at, d.retry_at
FROM json_each(:rids) AS r JOIN json_each(:fires) AS f ON f.key = r.key
JOIN deliveries AS d ON d.reminder_id = r.value AND d.fire_at = f.value
ORDER BY d.id

-- name: ledger_of_fires [postgresql]
-- Probes the (reminder_id, fire_at) index once per fire through a LATERAL: a plain join lets
-- the planner hash a sequential scan of the whole ledger once a claim is large, a cost that
-- grows with history (tests/integration/test_pg_plans.py holds the plan). OFFSET 0 keeps the
-- planner from pulling the subquery up into just such a join.
SELECT d.reminder_id, d.fire_at, d.target_id, d.outcome, d.error, d.attempt, d.at, d.retry_at
FROM unnest(CAST(:rids AS bigint[]), CAST(:fires AS bigint[])) AS p(rid, fire)
CROSS JOIN LATERAL (SELECT * FROM deliveries
                    WHERE reminder_id = p.rid AND fire_at = p.fire OFFSET 0) AS d
ORDER BY d.id

-- name: ledger_of_fires [mysql]
-- The range of deliveries_fire over every (reminder, fire) of the two lists: a pair of one
-- fire's reminder with another's instant may match too, and the caller keeps only the fires
-- it asked for (claim_sql._ledgers).
SELECT d.reminder_id, d.fire_at, d.target_id, d.outcome, d.error, d.attempt, d.at, d.retry_at
FROM deliveries AS d
WHERE d.reminder_id IN :rids AND d.fire_at IN :fires
ORDER BY d.id
