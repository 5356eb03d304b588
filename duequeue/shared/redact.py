"""Secrets out of what duequeue prints: the one way a URL is shown.

A message that may quote a token-bearing URL (an Apprise one, say) goes through `secrets`;
channels/notify.py masks Apprise URLs themselves, as only Apprise knows their parts.

A postgresql:// --db URL or an smtp:// DUEQUEUE_SMTP_URL may carry a password, in its user part
or (libpq) as a `password=` query parameter; `inspect`, `config`, `doctor`, the worker's log and
every error message show the URL with those masked. A file path is shown as given. The address
of a target whose channel this process does not know is shown as the mask alone (`whole`).

A reminder's `--data` is shown (inspect, history, serve) with `data`: the value of a key whose
name says it holds a secret masked whole, and the password of any URL in it masked.
"""

import re
from typing import Any
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


# A key of --data whose value is a secret by its name: password, api_key, accessToken,
# client_secret, Authorization, private-key... ("key" alone, "monkey" or "keyword" are not).
_SECRET_KEY = re.compile(
    r"pass(word|wd|phrase)?$|pwd|secret|token|api[-_]?key|private[-_]?key|access[-_]?key"
    r"|auth(orization)?$|credential|cookie|session|signature|^otp$|^pin$",
    re.IGNORECASE,
)


def data(value: Any) -> Any:
    """Return a --data value fit to show: each value under a secret-looking key (and all it
    holds) as MASK, each URL's password masked, the rest as given."""
    if isinstance(value, dict):
        return {
            k: MASK if _SECRET_KEY.search(str(k)) and value[k] is not None else data(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [data(v) for v in value]
    if isinstance(value, str) and "://" in value:
        return " ".join(url(part) if "://" in part else part for part in value.split(" "))
    return value
