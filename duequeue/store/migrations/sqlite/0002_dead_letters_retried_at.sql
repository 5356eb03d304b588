-- Dead letters learn when `retry` re-armed them.
ALTER TABLE dead_letters ADD COLUMN retried_at INTEGER;
