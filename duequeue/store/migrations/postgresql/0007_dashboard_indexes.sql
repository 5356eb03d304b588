-- serve's dashboard (issue 25): the ledger by time (the overview's charts, the lateness of the
-- last ticks, stats' last hour and day), the rarer states a person filters the list by, and the
-- open dead letters, and stats' count of each state, each read off an index instead of a scan
-- of the table.
CREATE INDEX deliveries_at ON deliveries (at, outcome);
CREATE INDEX reminders_cancelled ON reminders (id) WHERE cancelled_at IS NOT NULL;
CREATE INDEX reminders_done ON reminders (cancelled_at, id) WHERE done_at IS NOT NULL;
CREATE INDEX reminders_retrying ON reminders (id)
    WHERE error_count > 0 AND next_fire_at IS NOT NULL;
CREATE INDEX dead_letters_open ON dead_letters (reminder_id) WHERE retried_at IS NULL;
