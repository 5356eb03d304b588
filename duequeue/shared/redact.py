"""Secrets out of what duequeue prints: the one way a URL is shown.

A message that may quote a token-bearing URL (an Apprise one, say) goes through `secrets`;
channels/notify.py masks Apprise URLs themselves, as only Apprise knows their parts.

A postgresql:// --db URL or an smtp:// DUEQUEUE_SMTP_URL may carry a password, in its user part
or (libpq) as a `password=` query parameter; `inspect`, `config`, `doctor`, the worker's log and
every error message show the URL with those masked. A file path is shown as given. The address
of a target whose channel this process does not know is shown as the mask alone (`whole`).
"""

import re
from urllib.parse import parse_qsl, urlsplit

MASK = "****"


def url(value: str) -> str:
    """Return `value` fit to print: any password in a URL masked, anything else as given."""
    if "://" not in value:
        return value  # a file path
    try:
        parts = urlsplit(value)
        password = parts.password
    except ValueError:
        return value.split("://", 1)[0] + "://" + MASK  # unparsable: show nothing of it
    netloc = parts.netloc
    if password is not None:
        user, _, host = netloc.rpartition("@")
        netloc = user.split(":", 1)[0] + f":{MASK}@" + host
    query = parts.query
    if query:
        query = "&".join(f"{k}={MASK if k == 'password' else v}" for k, v in parse_qsl(query, True))
    return parts._replace(netloc=netloc, query=query).geturl()


def whole(value: str) -> str:
    """Return nothing of `value`: an address whose channel this process does not know (only
    its channel knows which parts are secret), shown as the mask alone."""
    return MASK


def secrets(text: str, url: str) -> str:
    """Return `text` on one line with every token-like part of `url` replaced by ***.

    For messages of a library or service that may quote the URL, or the URL it was turned into
    (an Apprise `slack://A/B/C` is posted to https://hooks.slack.com/services/A/B/C): each
    piece of the URL between separators that could be a token (6 characters or more, no dot,
    so host names and addresses stay readable) is masked wherever it appears.
    """
    text = " ".join(text.split())
    pieces = {url, *re.split(r"[/?&=@:#,;+]+", url.split("://", 1)[-1])}
    for piece in sorted(pieces, key=len, reverse=True):
        if len(piece) >= 6 and ("." not in piece or piece == url):
            text = text.replace(piece, "***")
    return text
