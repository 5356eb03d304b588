"""One reminder, one state (issue 31 item 5), and what it sends (item 7), as a user meets them.

A one-shot with two webhooks, one that takes it and one that refuses it for good: the fire is
sent to one target and dead-lettered for the other. Every view says the same: its schedule is
`done` and it has one dead letter (`dead: true`, `dead_letters: 1`) in `inspect`, `inspect
--all`, their `--json`, `history`, `stats`, `Queue`, the HTTP API and the dashboard; the CLI's
JSON and the API's are the same objects; and each shows its body and data, the password in
the data masked. A real CLI process and a real `duequeue serve` on the same database.
"""

import csv
import html
import io
import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from duequeue import Queue
from tests.procs import reap, run_cli
from tests.servers import HttpSink, Reply
from tests.stores import Db
from tests.webserver import Served

PASSWORD = "hunter2-s3cret"
DATA = (
    '{"amount": 900, "password": "' + PASSWORD + '", '
    '"invoice": "https://ann:' + PASSWORD + '@billing.example.com/42"}'
)
SHOWN_DATA = {
    "amount": 900,
    "password": "****",
    "invoice": "https://ann:****@billing.example.com/42",
}
BODY = "Pay the rent.\nThe landlord's account: see the invoice."


@pytest.fixture(autouse=True)
def _reaped() -> Iterator[None]:
    yield
    reap()


def _cli(db: Db, *args: str) -> str:
    r = run_cli(db, *args)  # type: ignore[arg-type]  # on PostgreSQL, its URL
    assert r.returncode == 0, r.stderr
    return r.stdout


def _table(text: str) -> list[dict[str, str]]:
    """Return a table printed to a pipe (tab-separated, header first) as rows by column."""
    return list(csv.DictReader(io.StringIO(text), delimiter="\t", quoting=csv.QUOTE_NONE))


def _one_sent_one_dead(db: Db, http: HttpSink) -> int:
    http.respond("/ok", Reply(200))
    http.respond("/refuses", Reply(400))  # refused for good: dead at the first attempt
    rid = int(
        _cli(
            db, "add", "--at", "now", "--subject", "Pay rent", "--body", BODY, "--data", DATA,
            "--webhook", http.url("/ok"), "--webhook", http.url("/refuses"),
        )
    )  # fmt: skip
    tick = run_cli(db, "tick")  # type: ignore[arg-type]
    assert tick.returncode == 0 and "partial 1" in tick.stderr + tick.stdout, tick.stderr
    return rid


def _is_done_with_one_dead_letter(r: dict[str, Any]) -> None:
    assert (r["state"], r["dead"], r["dead_letters"]) == ("done", True, 1), r


def test_one_sent_one_dead_reads_the_same_everywhere(db: Db, http: HttpSink) -> None:
    path = db
    rid = _one_sent_one_dead(path, http)

    # The CLI's tables: the dead view lists the dead fire, --all the reminder; both say it.
    for view in ("--dead", "--all"):
        (row,) = _table(_cli(path, "inspect", view))
        assert (row["id"], row["state"]) == (str(rid), "done, 1 dead letter"), view
    # Their JSON: the same state and dead letters (the dead view adds the dead fire).
    (dead_row,) = _json(path, "inspect", "--json")
    (all_row,) = _json(path, "inspect", "--all", "--json")
    _is_done_with_one_dead_letter(dead_row)
    _is_done_with_one_dead_letter(all_row)
    assert dead_row["dead_fire_at"] is not None and all_row["dead_fire_at"] is None
    history = _json(path, "history", str(rid), "--json")
    _is_done_with_one_dead_letter(history["reminder"])
    assert _cli(path, "history", str(rid)).startswith(
        f"reminder {rid} 'Pay rent': done, 1 dead letter;"
    )
    stats = _json(path, "stats", "--json")
    assert stats["reminders"] == {"pending": 0, "paused": 0, "done": 1, "dead": 0, "cancelled": 0}
    assert (stats["dead_letters"], stats["dead_reminders"]) == (1, 1)
    assert "dead letters awaiting retry: 1 (on 1 reminder)" in _cli(path, "stats")

    # Queue: the same model in the Python API.
    with Queue(db=str(db)) as q:
        (one,) = q.inspect("all")
        (fire,) = q.inspect("dead")
        figures = q.stats()
    for r in (one, fire):
        assert (r.state, r.dead, r.dead_letters) == ("done", True, 1)
        assert r.status == "done, 1 dead letter"
    assert (figures.done, figures.dead) == (1, 0)
    assert (figures.dead_letters, figures.dead_reminders) == (1, 1)

    with Served(path) as s:
        # The API: the CLI's own JSON, object for object.
        listed = s.fetch("GET", "/api/v1/reminders?state=all").json()["reminders"]
        assert listed == [all_row]
        got = s.fetch("GET", f"/api/v1/reminders/{rid}").json()
        assert got.pop("next_fires") == [] and got == all_row
        (dead_listed,) = s.fetch("GET", "/api/v1/reminders?state=dead").json()["reminders"]
        _is_done_with_one_dead_letter(dead_listed)
        assert s.fetch("GET", f"/api/v1/reminders/{rid}/history").json() == history
        served = s.fetch("GET", "/api/v1/stats").json()
        assert {**served, "at": None} == {**_json(path, "stats", "--json"), "at": None}

        # The dashboard: the reminder's page, the dead list and the overview's card agree.
        page = s.fetch("GET", f"/reminders/{rid}").text
        status = re.search(r'<span id="status">(.*?)</span></td>', page)
        assert status is not None and _text(status.group(1)) == "done 1 dead letter"
        assert '<span id="dead-letters">1</span>' in page
        for state in ("dead", "all"):
            listing = s.fetch("GET", f"/reminders?state={state}").text
            (cell,) = re.findall(r'<td>(<span class="state done">.*?)</td>', listing)
            assert _text(cell) == "done 1 dead letter", state
        overview = s.fetch("GET", "/").text
        card = re.search(r'id="count-dead">.*?<div class="n">(\d+)</div>', overview)
        assert card is not None and card.group(1) == "1"
        assert "1 on 1 reminder" in overview
        assert s.stop() == 0


def test_every_view_shows_what_it_sends_with_the_secrets_masked(db: Db, http: HttpSink) -> None:
    path = db
    rid = _one_sent_one_dead(path, http)
    (row,) = _json(path, "inspect", "--all", "--json")
    assert (row["subject"], row["body"], row["data"]) == ("Pay rent", BODY, SHOWN_DATA)
    history = _json(path, "history", str(rid), "--json")
    assert history["reminder"]["data"] == SHOWN_DATA
    text = _cli(path, "history", str(rid))
    assert "  subject  Pay rent\n" in text
    assert "  body     Pay the rent.\n           The landlord's account" in text
    assert '"password": "****"' in text
    with Queue(db=str(db)) as q:
        (one,) = q.inspect("all")
        assert (one.body, one.data) == (BODY, SHOWN_DATA)
        assert q.history(rid).reminder.data == SHOWN_DATA
    with Served(path) as s:
        got = s.fetch("GET", f"/api/v1/reminders/{rid}").json()
        assert (got["body"], got["data"]) == (BODY, SHOWN_DATA)
        page = s.fetch("GET", f"/reminders/{rid}").text
        body = re.search(r'<pre class="sends" id="body">(.*?)</pre>', page, re.S)
        data = re.search(r'<pre class="sends" id="data">(.*?)</pre>', page, re.S)
        assert body is not None and html.unescape(body.group(1)) == BODY
        assert data is not None and '"password": "****"' in html.unescape(data.group(1))
        shown = [page, s.fetch("GET", "/api/v1/reminders?state=all").text,
                 s.fetch("GET", f"/api/v1/reminders/{rid}/history").text]  # fmt: skip
        assert s.stop() == 0
    # The webhook that took it got the data whole: masking is for showing, never for sending.
    (sent,) = http.requests_for("/ok")
    assert PASSWORD in sent.body.decode()
    shown += [_cli(path, "inspect", "--all", "--json"), text]
    assert not [s for s in shown if PASSWORD in s]


def _json(path: Db, *args: str) -> Any:
    return json.loads(_cli(path, *args))


def _text(markup: str) -> str:
    """Return the text of a bit of HTML, its labels' words joined by one space."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", markup)).split())
