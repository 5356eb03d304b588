"""What every handler finds on the application: the Queues it calls and the access rules."""

from aiohttp import web

from duequeue.web.auth import Guard
from duequeue.web.queues import Queues

QUEUES = web.AppKey("queues", Queues)
GUARD = web.AppKey("guard", Guard)

# The largest id a database holds (a signed 64-bit integer): a larger one in a URL is no
# reminder, not an overflow in the driver.
MAX_ID = 2**63 - 1


def parse_id(text: str, field: str) -> int | None:
    """Return a reminder id given as text, or None when it is no id (not digits, too large)."""
    if not text.isascii() or not text.isdigit() or len(text) > 19:
        return None
    value = int(text)
    return value if 0 < value <= MAX_ID else None
