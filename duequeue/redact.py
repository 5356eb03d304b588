"""Secrets out of what duequeue prints: the one way a URL is shown.

A postgresql:// --db URL or an smtp:// DUEQUEUE_SMTP_URL may carry a password, in its user part
or (libpq) as a `password=` query parameter; `inspect`, `config`, `doctor`, the worker's log and
every error message show the URL with those masked. A file path is shown as given.
"""

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
