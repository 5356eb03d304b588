-- A failed attempt says when the target may be tried again for that fire (the backoff,
-- Retry-After): each target's own retries are paced and counted by the ledger.
ALTER TABLE deliveries ADD COLUMN retry_at INTEGER;
