"""`import` is a bulk path (issue 34: time fields and addresses computed once a batch, rows
written in batches) with `add`'s result line for line: every column of every row it writes, and
the same refusal for a bad line."""

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from freezegun import freeze_time

from duequeue.api.queue import Queue
from duequeue.errors import BadInputError
from tests.pg import admin_connect
from tests.stores import Db, is_sqlite

T0 = datetime(2027, 1, 5, 8, 0, 0, 123000, tzinfo=UTC)
HOOK = "https://hooks.example.com/r/"
SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

# Lines of every kind, most of them repeating time fields and addresses (what the batch
# computes once), some with a key given twice with the same content (skipped by both).
LINES: list[dict[str, Any]] = [
    {"at": "2027-01-06T09:00", "tz": "Europe/Berlin", "webhooks": [HOOK + "0"], "key": "k0"},
    {"at": "2027-01-06T09:00", "tz": "Europe/Berlin", "webhooks": [HOOK + "0"], "key": "k1"},
    {"at": "2027-01-06T09:00", "tz": "Europe/Berlin", "webhooks": [HOOK + "1"], "subject": "S"},
    {"at": "2027-01-06T09:00", "webhooks": HOOK + "1", "body": "line\nbreak"},  # default zone
    {"at": "2027-01-06T09:00+05:30", "emails": ["a@example.com", "b@example.com"]},
    {"at": "+15m", "webhooks": [HOOK + "2"], "key": "rel"},
    {"at": "now", "tz": "America/New_York", "notify": ["mailto://u:p@example.com"]},
    {"at": "tomorrow 9am", "tz": "Asia/Tokyo", "webhooks": [HOOK + "0"], "data": {"n": [1, 2]}},
    {"at": "2027-03-28T02:30", "tz": "Europe/Berlin", "webhooks": [HOOK + "3"]},  # in the gap
    {"at": "2027-03-28T02:30", "tz": "Europe/Berlin", "webhooks": [HOOK + "3"], "key": "gap"},
    {"at": "2027-01-06T09:00", "tz": "Europe/Berlin", "rrule": "FREQ=DAILY", "webhooks": [HOOK]},
    {"at": "2027-01-06T09:00", "tz": "Europe/Berlin", "rrule": "FREQ=DAILY", "webhooks": [HOOK]},
    {"cron": "30 8 * * 1-5", "tz": "Europe/London", "webhooks": [HOOK + "4"], "key": "cron"},
    {"at": "2027-02-01T00:00Z", "cron": "0 */6 * * *", "targets": [["webhook", HOOK + "5"]]},
    {"at": "2027-01-06T09:00", "tz": "Europe/Berlin", "webhooks": [HOOK + "0", HOOK + "6"],
     "webhook_secret": SECRET},
    {"at": "2027-01-06T09:00", "tz": "Europe/Berlin", "webhooks": [HOOK + "0"],
     "misfire_grace": "1h", "key": "grace"},
    {"at": "2027-01-06T09:00", "tz": "Europe/Berlin", "webhooks": [HOOK + "0"], "key": "k0"},
    {"at": "+15m", "webhooks": [HOOK + "2"], "key": "rel"},
    {"at": "2027-01-07", "tz": "UTC", "email": "c@example.com", "key": "old names"},
]  # fmt: skip

# Lines add refuses, each after good ones (so the batch has computed their fields before).
BAD: list[dict[str, Any]] = [
    {"at": "2027-01-06T09:00", "tz": "Europe/Nowhere", "webhooks": [HOOK + "0"]},
    {"at": "2027-01-06T25:00", "tz": "Europe/Berlin", "webhooks": [HOOK + "0"]},
    {"at": "2027-01-06T09:00", "tz": "Europe/Berlin", "webhooks": ["ftp://x.example/"]},
    {"at": "2027-01-06T09:00", "tz": "Europe/Berlin", "webhooks": [HOOK + "0", "nope"]},
    {"at": "2027-01-06T09:00", "tz": "Europe/Berlin", "webhooks": [HOOK + "0"], "subject": "a\nb"},
    {"at": "2027-01-06T09:00", "tz": "Europe/Berlin", "webhooks": [HOOK + "0"], "rrule": "FREQ=X"},
    {"at": "2027-01-06T09:00", "tz": "Europe/Berlin", "emails": ["not an address"]},
    {"at": "2027-01-06T09:00", "tz": "Europe/Berlin", "webhooks": [], "key": "no target"},
    {"at": "2027-01-06T09:00", "tz": "Europe/Berlin", "webhooks": [HOOK + "0"],
     "misfire_grace": "soon"},
    {"at": "2027-01-06T25:00", "tz": "Europe/Berlin", "webhooks": ["nope"]},  # two faults
    {"at": "2027-01-06T09:00", "tz": "Europe/Berlin", "webhooks": [HOOK + "0"],
     "webhook_secret": "short"},
    {"tz": "Europe/Berlin", "webhooks": [HOOK + "0"]},  # no time
]  # fmt: skip

_OLD = {"email": "emails", "webhook": "webhooks"}


def as_add(line: dict[str, Any]) -> dict[str, Any]:
    """Return a line's fields as Queue.add's arguments (what import reads them as)."""
    args = {_OLD.get(k, k): v for k, v in line.items()}
    for name in ("emails", "webhooks", "notify"):
        if isinstance(args.get(name), str):
            args[name] = [args[name]]
    if "targets" in args:
        args["targets"] = [tuple(pair) for pair in args["targets"]]
    return args


@pytest.fixture
def second(db: Db, tmp_path: Path) -> Callable[[], Db]:
    """Return a function that gives an empty database on the same store (the same one again:
    on PostgreSQL its schema is emptied)."""

    def fresh() -> Db:
        if is_sqlite(db):
            return tmp_path / "second.db"
        with admin_connect(str(db)) as conn:
            conn.execute("DROP SCHEMA IF EXISTS public CASCADE")
            conn.execute("CREATE SCHEMA public")
        return db

    return fresh


def rows(db: Db) -> dict[str, Any]:
    """Return every row import and add write, ids as positions (ids are the store's to give)."""

    def read(sql: str) -> list[tuple[Any, ...]]:
        if is_sqlite(db):
            import apsw

            conn = apsw.Connection(str(db))
            try:
                cur = conn.execute(sql)
                names = [c[0] for c in cur.getdescription()]
                return [tuple(zip(names, r, strict=True)) for r in cur]
            finally:
                conn.close()
        import psycopg

        with psycopg.connect(str(db)) as conn:
            cur = conn.execute(sql)
            names = [c.name for c in cur.description or ()]
            return [tuple(zip(names, r, strict=True)) for r in cur.fetchall()]

    reminders = read("SELECT * FROM reminders ORDER BY id")
    position = {dict(r)["id"]: n for n, r in enumerate(reminders)}
    search_id = "rowid" if is_sqlite(db) else "reminder_id"
    return {
        "reminders": [tuple(c for c in r if c[0] != "id") for r in reminders],
        "targets": [
            (position[dict(t)["reminder_id"]], *(c for c in t if c[0] not in ("id", "reminder_id")))
            for t in read("SELECT * FROM targets ORDER BY reminder_id, id")
        ],
        "search": [
            (position[rid], text)
            for rid, text in (
                (dict(r)["rid"], dict(r)["text"])
                for r in read(
                    f"SELECT {search_id} AS rid, text FROM reminder_search ORDER BY {search_id}"
                )
            )
        ],
        "meta": read("SELECT name, value FROM queue_meta WHERE name LIKE 'zone:%' ORDER BY name"),
    }


def test_an_import_writes_what_adding_each_line_writes(db: Db, second: Callable[[], Db]) -> None:
    lines = LINES * 3  # the memo's second and third rounds; every key repeated
    with freeze_time(T0), Queue(db) as q:
        for line in lines:
            q.add(**as_add(line))
    added = rows(db)
    keys = {line["key"] for line in LINES if "key" in line}
    assert len(added["reminders"]) == len(keys) + 3 * sum("key" not in line for line in LINES)
    assert added["meta"]  # the zones' digests under the release in use
    other = second()
    with freeze_time(T0), Queue(other) as q:
        result = q.import_lines(json.dumps(line) for line in lines)
    assert (result.imported, result.skipped) == (
        len(added["reminders"]),
        len(lines) - result.imported,
    )
    assert rows(other) == added


@pytest.mark.parametrize("bad", BAD, ids=range(len(BAD)))
def test_a_bad_line_is_refused_as_add_refuses_it(db: Db, bad: dict[str, Any]) -> None:
    with freeze_time(T0), Queue(db) as q:
        with pytest.raises(BadInputError) as by_add:
            q.add(**as_add(bad))
        # After the good lines, whose time fields and addresses the batch has kept.
        with pytest.raises(BadInputError) as by_import:
            q.import_lines(json.dumps(line) for line in [*LINES, bad, LINES[0]])
    assert by_import.value.line == len(LINES) + 1
    assert (by_import.value.fields, by_import.value.detail) == (
        by_add.value.fields,
        by_add.value.detail,
    )


def test_of_several_fields_that_are_not_text_the_first_in_add_order_is_named(db: Db) -> None:
    line = {"key": 3, "subject": 7, "webhooks": [HOOK], "at": 5}  # the line's order differs
    with freeze_time(T0), Queue(db) as q, pytest.raises(BadInputError) as refused:
        q.import_lines([json.dumps(LINES[0]), json.dumps(line)])
    assert (refused.value.line, refused.value.fields) == (2, ("at",))
    assert refused.value.detail == "expected a string, got 5"
