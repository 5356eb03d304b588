"""duequeue: a cron-driven due-time reminder scheduler backed by SQLite."""

__version__ = "0.1.0"
