"""What every handler finds on the application (the Queues it calls, the access rules, the
trusted proxies, the login throttle) and on a request (the role its token grants)."""

from aiohttp import web

from duequeue.web.auth import Guard, Role
from duequeue.web.proxy import Trusted
from duequeue.web.queues import Queues
from duequeue.web.throttle import Throttle

QUEUES = web.AppKey("queues", Queues)
GUARD = web.AppKey("guard", Guard)
PROXIES = web.AppKey("proxies", Trusted)
THROTTLE = web.AppKey("throttle", Throttle)
# The role of the request's token ("admin", or "read": reads only), set by app.py's _access.
ROLE = "duequeue.role"

# The largest id a database holds (a signed 64-bit integer): a larger one in a URL is no
# reminder, not an overflow in the driver.
MAX_ID = 2**63 - 1


def parse_id(text: str, field: str) -> int | None:
    """Return a reminder id given as text, or None when it is no id (not digits, too large)."""
    if not text.isascii() or not text.isdigit() or len(text) > 19:
        return None
    value = int(text)
    return value if 0 < value <= MAX_ID else None


def role(request: web.Request) -> Role:
    """Return the role the request's token grants (admin when no token is set)."""
    found: Role = request.get(ROLE, "read")
    return found


def may_change(request: web.Request) -> bool:
    """Return whether the request may change anything: an admin's, on a server not read-only."""
    return role(request) == "admin" and not request.app[GUARD].read_only
