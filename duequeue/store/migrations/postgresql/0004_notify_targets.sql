-- Notify targets (Apprise) and a webhook's own signing secret. The CHECK of CREATE TABLE got
-- PostgreSQL's default name, <table>_<column>_check.
ALTER TABLE targets ADD COLUMN secret TEXT;
CREATE INDEX targets_notify ON targets (address) WHERE channel = 'notify';
ALTER TABLE targets DROP CONSTRAINT targets_channel_check,
    ADD CONSTRAINT targets_channel_check CHECK (channel IN ('email', 'webhook', 'notify'));
