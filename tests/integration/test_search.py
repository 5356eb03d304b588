"""Search finds what the list shows and nothing else, on every store (issue 31 item 2): a part of
a reminder's subject, key or a target's address as shown finds it; no part of a secret (a
notify URL's password, a Telegram bot token, SMTP credentials in a mailto:// URL, a webhook's
signing secret) does, so a search cannot test a secret one character at a time. Edits keep the
searched text current, a database of an older version gets it on open, and a search that reads
its window before the page is full says so and goes on from there on the next page."""

import base64
import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import apsw
import pytest
from freezegun import freeze_time

from duequeue import Queue
from duequeue.api.results import Page, Reminder
from duequeue.store import search_sql
from tests.pg import admin_connect
from tests.stores import Db, is_sqlite

PASSWORD = "S3cretPassQ"
BOT_TOKEN = "AAHbotTok7Zq"
SMTP_PASSWORD = "MailPw99Xk"
SIGNING = "whsec_" + base64.b64encode(b"signing-key-0123456789-abc").decode()
SECRETS = (PASSWORD, BOT_TOKEN, SMTP_PASSWORD, SIGNING)
T0 = datetime(2030, 3, 1, 9, 0, tzinfo=UTC)


def _add_with_secrets(q: Queue) -> int:
    return q.add(
        at="+1d",
        subject="Quarterly report",
        key="report-q3",
        notify=[
            f"json://jsonuser:{PASSWORD}@hooks.example.com/path",
            f"tgram://123456789:{BOT_TOKEN}/987654321",
            f"mailto://mailuser:{SMTP_PASSWORD}@smtp.example.net",
        ],
        webhooks=["https://receiver.example.org/in"],
        webhook_secret=SIGNING,
    ).id


def shown(r: Reminder) -> str:
    """Return what the list shows of a reminder: subject, key and each target as shown."""
    return "\n".join([r.subject, r.key or "", *(f"{t.channel}: {t.display}" for t in r.targets)])


def _parts(text: str, shortest: int) -> Iterator[str]:
    for size in range(shortest, len(text) + 1):
        for start in range(len(text) - size + 1):
            yield text[start : start + size]


def test_search_finds_what_is_shown_and_no_part_of_a_secret(db: Db) -> None:
    with Queue(db) as q:
        rid = _add_with_secrets(q)
        q.add(at="+1d", subject="Other", webhooks=["https://elsewhere.example.org/x"])
        (listed,) = q.browse(search="quarterly").reminders
        text = shown(listed).lower()
        for secret in SECRETS:
            assert secret.lower() not in text
        tried = found = 0
        for secret in SECRETS:
            for part in set(_parts(secret, 2)):
                hit = [r.id for r in q.browse(search=part).reminders if r.id == rid]
                assert bool(hit) == (part.lower() in text), part
                tried += 1
                found += bool(hit)
        # Most parts of a secret are nowhere in what is shown, and find nothing.
        assert tried > 400 and found < tried / 10
        # The probe, one character further each time: never a match past the user.
        for probe in ("jsonuser:S", "jsonuser:S3", "jsonuser:S3c", f"{BOT_TOKEN[:4]}"):
            assert q.browse(search=probe).reminders == (), probe
        # What the list shows finds it, whatever part and case.
        for part in ("jsonuser:****", "hooks.example.com", "TGRAM://", "mailuser", "REPORT-Q3",
                     "receiver.example.org/in", "notify: ", "terly rep"):  # fmt: skip
            assert [r.id for r in q.browse(search=part).reminders] == [rid], part


def test_an_edit_changes_what_search_finds(db: Db) -> None:
    with Queue(db) as q:
        rid = q.add(at="+1d", subject="Pay rent", webhooks=["https://a.example.com/rent"]).id
        q.edit(rid, subject="Pay the landlord")
        assert q.browse(search="rent").reminders[0].id == rid  # still in the webhook's URL
        assert q.browse(search="pay rent").reminders == ()
        assert [r.id for r in q.browse(search="LANDLORD").reminders] == [rid]
        q.edit(rid, notify=[f"json://u:{PASSWORD}@b.example.com/x"])
        assert q.browse(search="a.example.com").reminders == ()
        assert [r.id for r in q.browse(search="b.example.com").reminders] == [rid]
        assert q.browse(search=PASSWORD[:5]).reminders == ()
        assert [r.id for r in q.browse(search="landlord").reminders] == [rid]


def test_import_writes_what_search_finds_masked(db: Db) -> None:
    with Queue(db) as q:
        q.import_lines(
            [
                f'{{"at": "+1h", "notify": ["json://u:{PASSWORD}@c.example.com/p"], '
                '"subject": "Imported one"}',
                '{"at": "+1h", "emails": ["ann@example.com"], "subject": "Imported two"}',
            ]
        )
        assert [r.subject for r in q.browse(search="c.example.com").reminders] == ["Imported one"]
        assert [r.subject for r in q.browse(search="ann@ex").reminders] == ["Imported two"]
        assert q.browse(search=PASSWORD[2:7]).reminders == ()


def _all_pages(q: Queue, **kw: object) -> tuple[list[int], list[Page]]:
    ids: list[int] = []
    pages: list[Page] = []
    before = None
    while True:
        page = q.browse(before=before, **kw)  # type: ignore[arg-type]
        pages.append(page)
        ids += [r.id for r in page.reminders]
        if page.next_before is None:
            return ids, pages
        before = page.next_before


def _subject(i: int) -> str:
    """The subject of the i-th imported reminder (id i + 1): invoices first, then receipts."""
    return f"Invoice {i}" if i < 150 else f"Receipt {i}"


@pytest.mark.parametrize("term", ["invoice", "7", "nv"])  # the index; a range of ids
def test_a_search_pages_through_every_match_once_and_a_page_cut_by_its_window_says_so(
    db: Db, term: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(search_sql, "WINDOW", 40)
    rng = random.Random(7)
    with Queue(db) as q:
        q.import_lines(
            f'{{"at": "+1h", "emails": ["u{i}@example.com"], "subject": "{_subject(i)}"}}'
            for i in range(300)
        )
        # Ids 1-3 and 200-299: the invoices in it are few and far down both indexes.
        q.cancel(1, 2, 3, *range(200, 300))
        q.cancel(*rng.sample(range(152, 200), 12))  # receipts
        for state, limit in (("cancelled", 5), ("pending", 50), ("all", 7), ("done", 5)):
            ids, pages = _all_pages(q, state=state, search=term, limit=limit)
            every = [r.id for r in q.browse(state, limit=1000).reminders]
            expected = [
                i
                for i in every
                if term in f"{_subject(i - 1)}\n\nemail: u{i - 1}@example.com".lower()
            ]
            assert ids == expected, (state, term)
            assert all(len(p.reminders) <= limit for p in pages)
            # A page is short only when it says why: the window, or the last page.
            for p in pages[:-1]:
                assert p.partial or len(p.reminders) == limit
        # Both ways to the cancelled invoices (the term's matches, the state's rows) read more
        # than the window before they reach ids 1-3: pages end at it, each saying so.
        ids, pages = _all_pages(q, state="cancelled", search="invoice", limit=5)
        assert ids == [3, 2, 1]
        assert pages[0].partial and pages[0].next_before is not None


@pytest.mark.sqlite_only
def test_a_database_of_version_9_gets_its_search_text_on_open(db: Db) -> None:
    path = Path(str(db))
    with Queue(db) as q:
        rid = _add_with_secrets(q)
    conn = apsw.Connection(str(path))
    conn.execute("DROP TRIGGER reminder_search_delete; DROP TABLE reminder_search;")
    # And version 11's pause, so the database is version 9's all through.
    conn.execute("DROP INDEX reminders_paused; ALTER TABLE reminders DROP COLUMN paused_at;")
    conn.execute("PRAGMA user_version = 9")
    conn.close()
    with Queue(db) as q:  # the migration backfills every reminder
        assert [r.id for r in q.browse(search="receiver.example.org").reminders] == [rid]
        assert [r.id for r in q.browse(search="REPORT-Q3").reminders] == [rid]
        # A notify URL is masked to its scheme: SQL cannot ask Apprise which parts are secret.
        (listed,) = q.browse(search="tgram://").reminders
        assert listed.id == rid
        text = shown(listed).lower()
        for secret in SECRETS:
            for part in set(_parts(secret, 3)):
                if part.lower() not in text:  # "Mail" is in "mailto://", shown
                    assert q.browse(search=part).reminders == (), part


def test_a_postgresql_schema_of_version_9_gets_its_search_text_on_open(pg_url: str) -> None:
    db = pg_url
    with Queue(db) as q:
        rid = _add_with_secrets(q)
    with admin_connect(str(db)) as conn:
        conn.execute("DROP TABLE reminder_search")
        # And version 11's pause, so the schema is version 9's all through.
        conn.execute("DROP INDEX reminders_paused")
        conn.execute("ALTER TABLE reminders DROP COLUMN paused_at")
        conn.execute("UPDATE duequeue_meta SET value = '9' WHERE name = 'schema_version'")
    with Queue(db) as q:
        assert [r.id for r in q.browse(search="receiver.example.org").reminders] == [rid]
        assert [r.id for r in q.browse(search="tgram://").reminders] == [rid]
        assert q.browse(search=PASSWORD[1:6]).reminders == ()
    with admin_connect(str(db)) as conn:
        found = conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE indexname = 'reminder_search_trigrams'"
        ).fetchall()
        assert found and "gin_trgm_ops" in found[0][0]


def test_a_deleted_reminder_leaves_no_search_text(db: Db) -> None:
    with Queue(db) as q:
        with freeze_time(T0):
            gone = q.add(at="now", subject="Old one", webhooks=["https://x.example.com/"]).id
            q.cancel(gone)
            kept = q.add(at="+1w", subject="New one", webhooks=["https://x.example.com/"]).id
        with freeze_time(T0 + timedelta(days=2)):
            assert q.prune("1d").cancelled == 1
            assert [r.id for r in q.browse(search="one").reminders] == [kept]
    if is_sqlite(db):
        conn = apsw.Connection(str(db))
        rows = conn.execute("SELECT rowid FROM reminder_search").fetchall()
    else:
        with admin_connect(str(db)) as pg:
            rows = pg.execute("SELECT reminder_id FROM reminder_search").fetchall()
    assert [int(r[0]) for r in rows] == [kept]
