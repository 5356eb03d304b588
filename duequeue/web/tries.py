"""A token given is a try, judged under the throttle (throttle.py): the key a request's tries
are counted under, the 429 of a client that must wait, and the log line of a wrong token."""

import logging

from aiohttp import web

from duequeue.web.keys import THROTTLE
from duequeue.web.throttle import client_key

log = logging.getLogger("duequeue.serve")


def key(request: web.Request, device: str | None = None) -> str:
    """Return whose tries a request's token counts among: its browser's, when it carries a
    device cookie this server signed, else its client address's (as trusted proxies saw it)."""
    return f"device {device}" if device else f"address {client_key(request.remote)}"


def too_many(wait: int) -> web.HTTPTooManyRequests:
    """Return the 429 of a client that must wait `wait` seconds before its next token."""
    return web.HTTPTooManyRequests(
        headers={"Retry-After": str(wait)},
        text=f"too many wrong tokens from here: try again in {wait} s",
    )


def failed(request: web.Request, key: str, where: str) -> int:
    """Count a wrong token under `key`; log it; return the wait it starts (0: none)."""
    wait = request.app[THROTTLE].failed(key)
    then = f"; its next try waits {wait} s" if wait else ""
    log.warning("a wrong token for %s from %s%s", where, request.remote, then)
    return wait
