"""Hostile input to `duequeue serve` as a client sends it (a real server process, aiohttp's
client, raw bytes where no client would send them): every answer a 4xx naming what is wrong,
never a 500, and the log one line per refusal, never a traceback."""

import json
from collections.abc import Iterator

import pytest

from tests.procs import reap
from tests.stores import Db
from tests.webserver import Served

JSON = {"Content-Type": "application/json"}
FORM = {"Content-Type": "application/x-www-form-urlencoded"}
ADD = {"at": "+1h", "emails": ["a@example.com"]}


@pytest.fixture(autouse=True)
def _reaped() -> Iterator[None]:
    yield
    reap()


def _clean(s: Served) -> str:
    assert s.stop() == 0
    assert "Traceback" not in s.log, s.log
    return s.log


@pytest.mark.sqlite_only
def test_json_nested_past_the_bound_is_a_400_naming_the_body(db: Db) -> None:
    with Served(db) as s:
        nested = json.dumps({**ADD, "subject": [1]}).replace("[1]", "[" * 70 + "]" * 70)
        for body, field in [(b"[" * 100_000, "body"), (b'{"x": ' + b"[" * 100_000, "body"),
                            (b'{"a":' * 50_000, "body"), (nested.encode(), "subject")]:  # fmt: skip
            r = s.fetch("POST", "/api/v1/reminders", data=body, headers=JSON)
            assert r.status == 400, r.text
            assert r.headers["Content-Type"].startswith("application/problem+json")
            problem = r.json()
            assert problem["field"] == field and "nested too deeply" in problem["detail"]
        # data's own bound (64) names data.
        deep = {**ADD, "data": json.loads("[" * 65 + "]" * 65)}
        r = s.fetch("POST", "/api/v1/reminders", json_body=deep)
        assert r.status == 400 and r.json()["field"] == "data"
        assert "at most 64 levels" in r.json()["detail"]
        ok = {**ADD, "data": json.loads("[" * 64 + "]" * 64)}
        assert s.fetch("POST", "/api/v1/reminders", json_body=ok).status == 201
        assert s.fetch("GET", "/api/v1/stats").json()["reminders"]["pending"] == 1
    _clean(s)


@pytest.mark.sqlite_only
def test_a_body_in_another_charset_or_not_utf8_is_a_400(db: Db) -> None:
    with Served(db) as s:
        klingon = {"Content-Type": "application/json; charset=klingon"}
        for data, headers in ((json.dumps(ADD).encode(), klingon), (b"\xff\xfe{}", JSON)):
            r = s.fetch("POST", "/api/v1/reminders", data=data, headers=headers)
            assert r.status == 400 and r.json()["field"] == "body", r.text
    _clean(s)


@pytest.mark.sqlite_only
def test_a_header_with_a_nul_byte_is_a_400_and_one_line_in_the_log(db: Db) -> None:
    with Served(db) as s:
        for request in (
            b"GET /api/v1/stats HTTP/1.1\r\nHost: localhost\r\nX-Note: a\x00b\r\n\r\n",
            b"GET /api/v1/stats HTTP/1.1\r\nHost: localhost\r\nX-N\x00te: ab\r\n\r\n",
            b"GET /reminders/\xff HTTP/1.1\r\nHost: localhost\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: localhost\r\nX-Long: " + b"a" * 20_000 + b"\r\n\r\n",
            b"POST /api/v1/reminders HTTP/1.1\r\nHost: localhost\r\n"
            b"Transfer-Encoding: chunked\r\n\r\nzz\r\n",
        ):
            answer = s.raw(request)
            assert answer.split(b"\r\n", 1)[0].endswith(b"400 Bad Request"), answer[:200]
        assert s.fetch("GET", "/api/v1/stats").status == 200  # still serving
    log = _clean(s)
    refused = [line for line in log.splitlines() if "refused a malformed request" in line]
    assert len(refused) == 5, log
    assert all(line.startswith("duequeue serve: ") and "127.0.0.1" in line for line in refused)


@pytest.mark.sqlite_only
def test_query_parameters_are_what_the_openapi_document_says(db: Db) -> None:
    with Served(db) as s:
        spec = s.fetch("GET", "/api/v1/openapi.json").json()
        params = spec["paths"]["/api/v1/reminders"]["get"]["parameters"]
        assert {p["name"]: p["schema"].get("type") for p in params if p["in"] == "query"} == {
            "state": None, "search": "string", "before": "integer", "limit": "integer"}  # fmt: skip
        for query, field in [("limit=", "limit"), ("before=", "before"),
                             ("limit=&before=", "before"), ("limit=%205", "limit"),
                             ("limit=%D9%A5", "limit"), ("before=1e3", "before"),
                             ("state=", "state"), ("search=a%00b", "search"),
                             ("search=%1B%5B2J", "search")]:  # fmt: skip
            r = s.fetch("GET", f"/api/v1/reminders?{query}")
            assert r.status == 400, (query, r.text)
            assert r.json()["field"] == field, (query, r.text)
        for path in ("/reminders?before=", "/reminders?search=%00", "/retry-all?search=%07"):
            page = s.fetch("GET", path)
            assert page.status == 400 and "Bad input" in page.text, path
        assert s.fetch("GET", "/api/v1/reminders?limit=5&search=").status == 200
    _clean(s)


def test_a_search_the_database_would_refuse_is_a_400_not_a_503(db: Db) -> None:
    """A NUL in a search reached PostgreSQL, which refused it: a 503, which clients retry."""
    with Served(db) as s:
        r = s.fetch("GET", "/api/v1/reminders?search=%00")
        assert r.status == 400 and r.json()["field"] == "search", r.text
        assert "Retry-After" not in r.headers
        assert s.fetch("GET", "/reminders?state=dead&search=a%00").status == 400
    _clean(s)


@pytest.mark.sqlite_only
def test_a_form_no_browser_would_send_is_a_400(db: Db) -> None:
    with Served(db) as s:
        page = s.fetch("GET", "/reminders")
        jar = {"dq_session": page.cookies["dq_session"].value}
        csrf = s.fetch("GET", "/retry-all", cookies=jar).text
        csrf = csrf.split('name="csrf" value="', 1)[1].split('"', 1)[0]
        multipart = {"Content-Type": "multipart/form-data; boundary=b"}
        for data, headers in [
            (f"csrf={csrf}&search=\xff".encode("latin-1"), FORM),  # not UTF-8
            (f"csrf={csrf}".encode(), {"Content-Type": FORM["Content-Type"] + "; charset=klingon"}),
            (b"--b\r\nbroken", multipart),
            (b"x", {"Content-Type": "multipart/form-data"}),  # no boundary
        ]:
            r = s.fetch("POST", "/retry-all", data=data, headers=headers, cookies=jar)
            assert r.status == 400, (data, r.text[:300])
        r = s.fetch("POST", "/retry-all", data={"csrf": csrf, "search": "a\x00"}, cookies=jar)
        assert r.status == 400
        # A search of no control character is done as asked.
        done = s.fetch("POST", "/retry-all", data={"csrf": csrf, "search": "rent"}, cookies=jar)
        assert done.status == 200 and "0 of 0 changed" in done.text
    _clean(s)


@pytest.mark.sqlite_only
def test_a_forged_session_cookie_is_replaced_not_a_500(db: Db) -> None:
    with Served(db) as s:
        for cookie in (b"\xff\xfe", b"%00", b"x" * 300, b"short"):
            answer = s.raw(b"GET /reminders HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
                           b"Cookie: dq_session=" + cookie + b"\r\n\r\n")  # fmt: skip
            head = answer.split(b"\r\n\r\n", 1)[0]
            assert head.startswith(b"HTTP/1.1 200"), head
            assert b"Set-Cookie: dq_session=" in head  # a fresh one
    _clean(s)
