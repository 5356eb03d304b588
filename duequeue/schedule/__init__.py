"""When reminders fire: `--at` / RRULE / cron rules, recurrence in IANA zones, wall-clock rules.

Kept empty so that loading `schedule.zones` (config checks `DUEQUEUE_TZ`) does not load the
recurrence libraries.
"""
