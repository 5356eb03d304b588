"""Queue.overview and Queue.browse, serve's reads, on every store: the counts and charts agree
with what was delivered and what is due, and the list pages by key through every row once, in
each state, with a search that takes `%` and `_` literally."""

from datetime import timedelta

import pytest

from duequeue import Queue
from duequeue.api import jsonforms
from duequeue.errors import BadInputError
from duequeue.web import pages, queues
from tests.servers import HttpSink, Reply
from tests.stores import Db


def test_overview_counts_what_was_sent_and_what_is_due(db: Db, http: HttpSink) -> None:
    http.respond("/bad", Reply(400))
    with Queue(db) as q:
        q.add(at="now", webhooks=[http.url("/ok")])
        q.add(at="now", webhooks=[http.url("/bad")])
        for minutes in (30, 90, 95, 60 * 30):  # the last is beyond the next day
            q.add(at=timedelta(minutes=minutes), emails=["a@example.com"])
        q.tick()
        o = q.overview()
    assert len(o.per_minute) == 1440 and len(o.per_hour) == 24
    assert sum(s for _, s, _f in o.per_minute) == 1
    assert sum(f for _, _s, f in o.per_minute) == 1
    assert [c for _, c in o.per_hour][:2] == [1, 2]
    assert sum(c for _, c in o.per_hour) == 3
    assert o.per_minute[-1][0] <= o.stats.at < o.per_minute[-1][0] + timedelta(minutes=1)
    assert o.max_lateness is not None and o.max_lateness >= timedelta(0)
    assert (o.stats.pending, o.stats.dead_letters, o.stats.done) == (4, 1, 1)


def test_browse_pages_through_every_row_once_in_each_state(db: Db) -> None:
    with Queue(db) as q:
        lines = [
            f'{{"at": "+1h", "emails": ["u{i}@example.com"], "subject": "Bill {i}", "key": "k{i}"}}'
            for i in range(120)
        ]
        q.import_lines(lines)
        q.cancel(*range(1, 121, 10))
        seen, before = [], None
        while True:
            page = q.browse("pending", before=before, limit=50)
            seen += [r.id for r in page.reminders]
            if page.next_before is None:
                break
            before = page.next_before
        assert seen == sorted(set(range(1, 121)) - set(range(1, 121, 10)), reverse=True)
        cancelled = q.browse("cancelled", limit=1000)
        assert [r.id for r in cancelled.reminders] == list(range(111, 0, -10))
        assert cancelled.next_before is None
        assert [r.id for r in q.browse(search="BILL 11", limit=1000).reminders] == [
            *range(120, 110, -1), 12]  # fmt: skip
        assert [r.id for r in q.browse(search="u7@", limit=5).reminders] == [8]
        assert [r.id for r in q.browse(search="k11", limit=1000).reminders][-1] == 12
        assert q.browse(search="Bill%1").reminders == ()  # % is a plain character
        assert q.browse(search="Bill_1").reminders == ()
        assert q.browse("dead").reminders == ()


@pytest.mark.sqlite_only
def test_browse_names_a_bad_argument(db: Db) -> None:
    with Queue(db) as q:
        for kwargs, field in [({"state": "lost"}, "state"), ({"limit": 0}, "limit"),
                              ({"limit": 5000}, "limit"), ({"before": "3"}, "before"),
                              ({"search": "x" * 300}, "search")]:  # fmt: skip
            with pytest.raises(BadInputError) as exc:
                q.browse(**kwargs)  # type: ignore[arg-type]
            assert exc.value.field == field


def test_a_capped_count_says_it_is_a_lower_bound_and_is_exact_below_the_cap(
    db: Db, http: HttpSink
) -> None:
    with Queue(db) as q:
        q.import_lines(
            f'{{"at": "+1h", "emails": ["u{i}@example.com"], "key": "k{i}"}}' for i in range(5)
        )
        for _ in range(3):
            q.add(at="now", webhooks=[http.url("/ok")])
        q.tick()
        q.cancel(1, 2)
        exact = q.stats()
        capped = q.stats(cap=3)
        shown = q.overview(cap=2).stats
        with pytest.raises(BadInputError):
            q.stats(cap=0)
    assert (exact.pending, exact.cancelled, exact.done, exact.sent_last_day) == (3, 2, 3, 3)
    assert exact.lower_bounds == () and not exact.estimate
    # pending (3) and done (3) fit a cap of 3; nothing is over it
    assert capped.lower_bounds == () and (capped.pending, capped.done) == (3, 3)
    # Over a cap of 2: pending, done and the ledger's 3 rows; cancelled (2) is exact.
    assert set(shown.lower_bounds) == {
        "pending", "done", "sent_last_day", "failed_last_day", "sent_last_hour",
        "failed_last_hour"}  # fmt: skip
    assert (shown.pending, shown.done, shown.cancelled) == (2, 2, 2) and shown.estimate


@pytest.mark.sqlite_only
def test_serve_shows_counts_exact_up_to_its_cap(db: Db, monkeypatch: pytest.MonkeyPatch) -> None:
    with Queue(db) as q:
        # One an hour: each hour of the due chart (cap // 10, at least 1) is exact too.
        q.import_lines(
            f'{{"at": "+{30 + 60 * i}m", "emails": ["u{i}@example.com"]}}' for i in range(4)
        )
        q.cancel(1)
        monkeypatch.setattr(queues, "COUNT_CAP", 3)
        low = pages.render_overview(q.overview(cap=queues.COUNT_CAP))
        low_json = jsonforms.stats(q.stats(cap=queues.COUNT_CAP))
        monkeypatch.setattr(queues, "COUNT_CAP", 4)
        roomy = pages.render_overview(q.overview(cap=queues.COUNT_CAP))
        roomy_json = jsonforms.stats(q.stats(cap=queues.COUNT_CAP))
    # 3 pending under a cap of 3: exact; the cancelled one too
    assert '<div class="n">3</div><div class="l">pending' in low
    assert 'id="estimate"' not in low and low_json["estimate"] is False
    assert low_json["lower_bounds"] == [] and low_json["reminders"]["pending"] == 3
    assert 'id="estimate"' not in roomy and roomy_json["estimate"] is False


@pytest.mark.sqlite_only
def test_serve_says_plainly_when_a_count_is_at_least_the_cap(
    db: Db, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Queue(db) as q:
        q.import_lines(f'{{"at": "+1h", "emails": ["u{i}@example.com"]}}' for i in range(5))
        monkeypatch.setattr(queues, "COUNT_CAP", 3)
        shown = pages.render_overview(q.overview(cap=queues.COUNT_CAP))
        found = jsonforms.stats(q.stats(cap=queues.COUNT_CAP))
        exact = jsonforms.stats(q.stats())
    assert '<div class="n">3+</div><div class="l">pending' in shown
    assert 'id="estimate"' in shown and "counting stops at 3 rows" in shown
    assert "0 sent and 0 failed in the last 24 hours" in shown  # the ledger is under the cap
    assert found["estimate"] is True and found["lower_bounds"] == ["reminders.pending"]
    assert found["reminders"]["pending"] == 3 and found["reminders"]["cancelled"] == 0
    assert exact["reminders"]["pending"] == 5 and exact["estimate"] is False


def test_the_dead_letters_of_a_cancelled_reminder_are_not_counted(db: Db, http: HttpSink) -> None:
    http.respond("/gone", Reply(400))  # permanent: dead at once
    with Queue(db) as q:
        ids = [q.add(at="now", webhooks=[http.url("/gone")]).id for _ in range(3)]
        q.tick()
        q.cancel(ids[1])
        exact, capped = q.stats(), q.stats(cap=100)
    # Counted the same way with a cap as without (SQLite probes reminders_cancelled for it).
    for found in (exact, capped):
        assert (found.dead_letters, found.dead_reminders, found.cancelled) == (2, 2, 1)
        assert found.lower_bounds == ()


def test_each_hour_of_the_due_chart_stops_at_its_cap_and_says_so(db: Db) -> None:
    with Queue(db) as q:
        q.import_lines(f'{{"at": "+{20 + i}m", "emails": ["u{i}@example.com"]}}' for i in range(4))
        q.add(at="+90m", emails=["a@example.com"])
        q.add(at="+150m", emails=["b@example.com"])
        q.add(at="+151m", emails=["c@example.com"])
        exact = q.overview()
        capped = q.overview(cap=20)  # each hour of the chart stops at a tenth: 2
        roomy = q.overview(cap=40)
    assert [c for _, c in exact.per_hour][:3] == [4, 1, 2] and exact.per_hour_lower_bounds == ()
    # The first hour holds 4, more than 2: at least 2; the third holds exactly 2: exact.
    assert [c for _, c in capped.per_hour][:3] == [2, 1, 2]
    assert capped.per_hour_lower_bounds == (capped.per_hour[0][0],)
    assert not capped.stats.estimate  # the counts by state are under 20
    assert [c for _, c in roomy.per_hour][:3] == [4, 1, 2] and roomy.per_hour_lower_bounds == ()


@pytest.mark.sqlite_only
def test_serve_says_when_the_due_chart_is_at_least_what_it_shows(
    db: Db, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Queue(db) as q:
        q.import_lines(f'{{"at": "+{20 + i}m", "emails": ["u{i}@example.com"]}}' for i in range(4))
        monkeypatch.setattr(queues, "COUNT_CAP", 20)
        shown = pages.render_overview(q.overview(cap=queues.COUNT_CAP))
        monkeypatch.setattr(queues, "COUNT_CAP", 40)
        exact = pages.render_overview(q.overview(cap=queues.COUNT_CAP))
    assert 'id="estimate"' in shown and "each hour of the due chart" in shown
    assert '<path class="due capped"' in shown
    assert "Fires due per hour, next 24 h, counted to 2 (max 2" in shown
    assert "at least 2 fires due in the next 24 hours; 1 of the hours hold" in shown
    assert 'id="estimate"' not in exact and "due capped" not in exact
    assert "4 fires due in the next 24 hours; at most 4 in one hour" in exact


def test_the_overview_walks_the_ledger_once_and_agrees_with_stats(db: Db, http: HttpSink) -> None:
    with Queue(db) as q:
        for _ in range(4):
            q.add(at="now", webhooks=[http.url("/ok")])
        q.tick()
        exact, capped = q.overview(), q.overview(cap=2)
        alone = q.stats(cap=2)
    assert sum(s for _, s, _f in exact.per_minute) == exact.stats.sent_last_day == 4
    assert exact.stats.sent_last_hour == 4 and exact.stats.lower_bounds == ()
    # Capped at 2, the walk reads 3 rows (one over, to know it reached the cap): the chart
    # holds those, and the counts say they are at least that, as stats' own walk does.
    assert sum(s for _, s, _f in capped.per_minute) == 3
    ledger = ("sent_last_hour", "failed_last_hour", "sent_last_day", "failed_last_day")
    assert [getattr(capped.stats, f) for f in ledger] == [getattr(alone, f) for f in ledger]
    assert set(ledger) <= set(capped.stats.lower_bounds) == set(alone.lower_bounds)


@pytest.mark.sqlite_only
def test_serve_says_when_the_deliveries_chart_holds_the_newest_only(
    db: Db, http: HttpSink, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Queue(db) as q:
        for _ in range(4):
            q.add(at="now", webhooks=[http.url("/ok")])
        q.tick()
        monkeypatch.setattr(queues, "COUNT_CAP", 2)
        shown = pages.render_overview(q.overview(cap=queues.COUNT_CAP))
        monkeypatch.setattr(queues, "COUNT_CAP", 10)
        exact = pages.render_overview(q.overview(cap=queues.COUNT_CAP))
    assert "the newest 3 deliveries of the last 24 hours (counting stops there)" in shown
    assert "Deliveries per 10 minutes, the newest 3 of 24 h" in shown
    assert "4 sent and 0 failed in the last 24 hours" in exact
