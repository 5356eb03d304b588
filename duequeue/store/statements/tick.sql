-- What every tick writes, read first and alone (statements.py): an empty tick on SQLite reads
-- no other statement file.

-- name: mark_tick
-- A tick that ended without error; a later one's mark stays (overlapping ticks end in any
-- order).
INSERT INTO tick_marks (id, last_ok_at) VALUES (1, :now)
ON CONFLICT (id) DO UPDATE SET last_ok_at = excluded.last_ok_at
WHERE tick_marks.last_ok_at < excluded.last_ok_at

-- name: mark_tick [mysql]
INSERT INTO tick_marks (id, last_ok_at) VALUES (1, :now)
ON DUPLICATE KEY UPDATE last_ok_at = GREATEST(last_ok_at, VALUES(last_ok_at))
