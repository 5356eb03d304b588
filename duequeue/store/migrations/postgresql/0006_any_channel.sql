-- targets.channel takes any registered channel's name (channels/registry.py): the CHECK that
-- listed email, webhook and notify goes.
ALTER TABLE targets DROP CONSTRAINT targets_channel_check;
