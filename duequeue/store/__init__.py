"""Stores: where reminders, targets and the delivery ledger live.

One store (store.py) over a backend per database, chosen by the scheme of the `--db` URL
from the registry below; a plain path is an SQLite file.
"""

import importlib
import os
from urllib.parse import urlsplit

from duequeue.errors import BadInputError, StoreError
from duequeue.store.store import Store

# URL scheme -> the module whose connect(db, busy_timeout_s, create) opens a store on it. Imported
# only on demand: the SQLite path never loads psycopg or PyMySQL (optional dependencies).
BACKENDS: dict[str, str] = {
    "sqlite": "duequeue.store.sqlite",
    "postgresql": "duequeue.store.postgres",
    "postgres": "duequeue.store.postgres",
    "mysql": "duequeue.store.mysql",
    "mariadb": "duequeue.store.mysql",
}
# What a backend module needs installed, for the error that says how to install it.
_EXTRAS = {
    "duequeue.store.postgres": "a postgresql:// database needs psycopg: "
    "pip install 'duequeue[postgres]'",
    "duequeue.store.mysql": "a mysql:// database needs PyMySQL: pip install 'duequeue[mysql]'",
}


def register(scheme: str, module: str) -> None:
    """Open `scheme://` databases with `module`'s connect(db, busy_timeout_s, create)."""
    BACKENDS[scheme.lower()] = module


def scheme(db: str) -> str:
    """Return the backend scheme a --db value names: a URL's scheme, or sqlite for a path."""
    if "://" not in db:
        return "sqlite"
    return urlsplit(db).scheme.lower()


def is_postgres_url(db: str) -> bool:
    """Return whether a --db value names a PostgreSQL database rather than an SQLite file."""
    return scheme(db) in ("postgresql", "postgres")


def safe_url(url: str) -> str:
    """Return a --db value fit to print: a URL with its password masked."""
    from duequeue.shared import redact  # lazy: only a URL to print needs it, not cron's tick

    return redact.url(url)


def open_store(
    db: str | os.PathLike[str], busy_timeout_s: float = 5.0, create: bool = True
) -> Store:
    """Open the store a --db value names, through the backend its URL scheme selects.

    `busy_timeout_s` is how long a write waits for another process's lock before failing (SQLite;
    PostgreSQL locks rows, not the database). Without `create`, a missing SQLite file is an error
    instead of a new empty database.
    """
    db = os.fspath(db)
    name = BACKENDS.get(scheme(db))
    if name is None:
        known = ", ".join(sorted(f"{s}://" for s in BACKENDS))
        raise BadInputError(f"--db {safe_url(db)}: no backend for that scheme (known: {known})")
    head, colon, rest = db.partition(":")
    if colon and "://" not in db and head.lower() in BACKENDS and head.lower() != "sqlite":
        # `postgresql:/host/db` is a mistyped URL far more often than a file named so: refused,
        # or the add would go into a new SQLite file that no tick reads.
        raise BadInputError(
            f"--db {safe_url(db)}: a {head} URL starts {head}:// (write {head}://{rest.lstrip('/')};"
            f" a file of that name: ./{db})"
        )
    try:
        module = importlib.import_module(name)
    except ImportError as exc:
        raise StoreError(_EXTRAS.get(name, f"cannot load {name}: {exc}")) from exc
    store: Store = module.connect(db, busy_timeout_s, create)
    return store


def backend_module(db: str) -> None:
    """Raise the error that says how to install the driver of the backend `db` names, when it
    is missing."""
    name = BACKENDS[scheme(db)]
    try:
        importlib.import_module(name)
    except ImportError as exc:
        raise StoreError(_EXTRAS.get(name, f"cannot load {name}: {exc}")) from exc
