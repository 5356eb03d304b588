"""Instants and spans as every renderer prints them: ISO 8601 UTC to the millisecond, and
seconds to the millisecond in the JSON (api/jsonforms.py's, which the API prints too)."""

from duequeue.api.jsonforms import iso, seconds

__all__ = ["iso", "seconds"]
