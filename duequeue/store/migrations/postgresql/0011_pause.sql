-- `pause` and `resume`: a reminder's pause (its pending fire kept in fire_at, next_fire_at NULL
-- while paused) and the index `stats` and the dashboard count paused rows off. The whole
-- queue's pause is a row of queue_meta ('paused'), which needs no change here.
ALTER TABLE reminders ADD COLUMN paused_at BIGINT;
CREATE INDEX reminders_paused ON reminders (id) WHERE paused_at IS NOT NULL;
