"""The API's JSON beyond api/jsonforms.py (the forms it shares with the CLI's `--json`): what a
retry, cancel or enable did. Errors are problems.py's."""

from typing import Any

from duequeue.api.jsonforms import iso
from duequeue.api.results import Change


def change(c: Change) -> dict[str, Any]:
    """Return what retry, cancel, enable, pause or resume did to one reminder."""
    return {
        "id": c.reminder_id,
        "applied": c.applied,
        "fire_at": iso(c.fire_at),
        "skipped": c.skipped,
    }
