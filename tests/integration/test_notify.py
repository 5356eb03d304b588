"""The notify channel (Apprise) through the real CLI, against loopback HTTP servers standing in for
self-hosted ntfy, Gotify, Mattermost and a `json://` receiver: the requests each service's API
expects, retries, no second send, partial success, timeouts off the event loop, masked tokens."""

import json
import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.clirunner import Cli, counts
from tests.servers import HttpSink, Reply
from tests.stores import Db

T0 = datetime(2027, 1, 5, 8, 0, tzinfo=UTC)
TOKEN = "AbCdEfGhIjKlMnOp"  # a Gotify application token: a secret
TOPIC = "reminders-7fq2x9"  # an ntfy topic: on a public server, all it takes to read or post
NOTHING = dict.fromkeys(("claimed", "sent", "partial", "retried", "dead", "skipped", "released"), 0)


@pytest.fixture
def cli(db: Db) -> Cli:
    return Cli(db, T0, {"DUEQUEUE_CHANNEL_TIMEOUT": "2"})


def host(http: HttpSink) -> str:
    return f"127.0.0.1:{http.port}"


def everything_printed(cli: Cli, rid: int) -> str:
    """Every way a reminder and its deliveries are shown."""
    views = ("--all", "--dead", "--due", "--pending")
    return "\n".join(
        [cli("inspect", v).out for v in views]
        + [cli("inspect", v, "--json").out for v in views]
        + [cli("history", str(rid)).out, cli("history", str(rid), "--json").out]
        + [cli("stats").out, cli("next", str(rid)).out]
    )


def test_an_ntfy_server_gets_the_title_and_message_once(cli: Cli, http: HttpSink) -> None:
    url = f"ntfy://{host(http)}/{TOPIC}"
    rid = cli.add("--at", "now", "--notify", url, "--subject", "Standup", "--body", "in 5 min ✓")

    assert counts(cli.tick()) == {**NOTHING, "claimed": 1, "sent": 1}
    assert counts(cli.tick()) == NOTHING  # sent once: nothing goes out again
    [request] = http.requests
    assert (request.method, request.path) == ("POST", "/")  # ntfy's JSON publishing endpoint
    assert json.loads(request.body) == {"topic": TOPIC, "title": "Standup", "message": "in 5 min ✓"}
    assert cli.row(rid)["state"] == "done"
    history = cli("history", str(rid), "--json").json()
    assert [a["outcome"] for a in history["attempts"]] == ["sent"]


def test_gotify_mattermost_and_json_receivers_get_what_their_apis_expect(
    cli: Cli, http: HttpSink
) -> None:
    hook = "3ccdd113474722377935511fc85d3dd4"
    cli.add(
        "--at",
        "now",
        "--subject",
        "Pay rent",
        "--body",
        "Due today",
        "--notify",
        f"gotify://{host(http)}/{TOKEN}",
        "--notify",
        f"mmost://{host(http)}/{hook}",
        "--notify",
        f"json://{host(http)}/inbox",
    )

    summary = cli.tick()

    assert summary["deliveries_sent"] == 3
    by_path = {r.path: r for r in http.requests}
    gotify = by_path["/message"]  # Gotify's REST API: POST /message, the app token in a header
    assert gotify.headers["x-gotify-key"] == TOKEN
    assert json.loads(gotify.body) == {"priority": 5, "title": "Pay rent", "message": "Due today"}
    mattermost = by_path[f"/hooks/{hook}"]  # an incoming webhook: {"text": ...}
    assert json.loads(mattermost.body)["text"] == "Pay rent\r\nDue today"
    inbox = json.loads(by_path["/inbox"].body)
    assert (inbox["title"], inbox["message"], inbox["type"]) == ("Pay rent", "Due today", "info")


def test_a_5xx_is_retried_on_the_backoff_table_and_sent_once(cli: Cli, http: HttpSink) -> None:
    http.respond("/", Reply(503, body=b"busy"), Reply(200))
    rid = cli.add("--at", "now", "--notify", f"ntfy://{host(http)}/{TOPIC}")

    assert counts(cli.tick()) == {**NOTHING, "claimed": 1, "retried": 1}
    row = cli.row(rid)
    assert row["error_count"] == 1
    assert "error=503" in row["last_error"]
    assert counts(cli.tick()) == NOTHING  # backing off: 1 minute
    cli.advance(minutes=1)
    assert counts(cli.tick()) == {**NOTHING, "claimed": 1, "sent": 1}
    cli.advance(minutes=5)
    assert counts(cli.tick()) == NOTHING
    assert len(http.requests) == 2


def test_a_4xx_the_service_will_repeat_is_permanent_and_a_dead_letter(
    cli: Cli, http: HttpSink
) -> None:
    http.respond("/", Reply(400, body=b'{"error":"bad topic"}'))
    rid = cli.add("--at", "now", "--notify", f"ntfy://{host(http)}/{TOPIC}")

    assert counts(cli.tick()) == {**NOTHING, "claimed": 1, "dead": 1}
    [dead] = cli.inspect("--dead")
    assert dead["id"] == rid
    assert "error=400" in dead["last_error"]
    assert len(http.requests) == 1


def test_a_failed_notify_beside_a_sent_webhook_retries_alone(cli: Cli, http: HttpSink) -> None:
    http.respond("/", Reply(503), Reply(200))
    rid = cli.add(
        "--at", "now", "--notify", f"ntfy://{host(http)}/{TOPIC}", "--webhook", http.url("/hook")
    )

    assert counts(cli.tick()) == {**NOTHING, "claimed": 1, "partial": 1}
    cli.advance(minutes=1)
    summary = cli.tick()
    assert summary["target_retries"] == 1
    assert summary["deliveries_sent"] == 1
    assert len(http.requests_for("/hook")) == 1  # the webhook never gets it twice
    assert len(http.requests_for("/")) == 2
    assert cli("history", str(rid), "--json").json()["target_retries"] == []


def test_tokens_never_show_in_inspect_history_or_errors(cli: Cli, http: HttpSink) -> None:
    http.respond("/message", Reply(500, body=TOKEN.encode()))  # a service echoing the token
    rid = cli.add(
        "--at",
        "now",
        "--notify",
        f"gotify://{host(http)}/{TOKEN}",
        "--notify",
        f"ntfy://127.0.0.1:1/{TOPIC}",  # connection refused: the error names the URL
    )
    cli.tick()

    shown = everything_printed(cli, rid)
    assert TOKEN not in shown
    assert TOPIC not in shown
    assert f"gotify://{host(http)}/A...p" in shown
    assert "ntfy://127.0.0.1:1/r...9" in shown
    row = cli.row(rid)
    assert row["error_count"] == 1
    assert "notify" in row["last_error"]


def test_data_goes_to_notify_targets_only_when_asked(cli: Cli, http: HttpSink) -> None:
    url = f"json://{host(http)}/inbox"
    cli.add("--at", "now", "--notify", url, "--body", "b", "--data", '{"invoice": 42}')
    cli.tick()
    cli.add("--at", "now", "--notify", url, "--body", "b", "--data", '{"invoice": 43}')
    cli("tick", env={"DUEQUEUE_NOTIFY_DATA": "true"})

    first, second = (json.loads(r.body)["message"] for r in http.requests)
    assert first == "b"
    assert second == 'b\n\n{\n  "invoice": 43\n}'


def test_a_hung_service_times_out_without_stalling_the_other_deliveries(
    cli: Cli, http: HttpSink
) -> None:
    # Held until every webhook has arrived: were Apprise's blocking call on the event loop, no
    # webhook could go out while it waits, and the release would never come.
    http.respond("/", Reply(hold=True))
    hooks = [f"/hook{i}" for i in range(10)]

    def release_after_the_webhooks() -> None:
        http.wait_for_requests(1 + len(hooks))
        http.release()

    releaser = threading.Thread(target=release_after_the_webhooks)
    releaser.start()
    try:
        rid = cli.add("--at", "now", "--notify", f"ntfy://{host(http)}/{TOPIC}")
        for path in hooks:
            cli.add("--at", "now", "--webhook", http.url(path))
        summary = cli.tick()
    finally:
        http.release()
        releaser.join()

    assert summary["deliveries_sent"] + summary["deliveries_failed"] == 11
    assert all(len(http.requests_for(p)) == 1 for p in hooks)
    history = cli("history", str(rid), "--json").json()
    [attempt] = history["attempts"]
    # Answered after the webhooks (sent), or cut at the 2 s timeout first: never lost.
    assert attempt["outcome"] == "sent" or attempt["error"] == (
        "notify timeout after 2s (delivery unknown)"
    )


def test_a_service_slower_than_the_timeout_is_a_failure_recorded_as_unknown(
    cli: Cli, http: HttpSink
) -> None:
    http.respond("/", Reply(hang=True))
    rid = cli.add("--at", "now", "--notify", f"ntfy://{host(http)}/{TOPIC}")

    summary = cli.tick()

    assert counts(summary) == {**NOTHING, "claimed": 1, "retried": 1}
    row = cli.row(rid)
    # Cut by the channel's 2 s bound on the attempt, or by Apprise's own 2 s read timeout.
    assert row["error_count"] == 1
    assert row["last_error"].startswith("notify ntfy://")


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("foo://x/y", "--notify: foo://...: unknown service 'foo'"),
        ("slack://T1/", "--notify: slack://...: not a valid slack:// URL for Apprise"),
        ("just-words", "--notify: just-words://...: not a URL"),
        ("ntfy://host/top ic", "--notify: the URL contains spaces or control characters"),
    ],
)
def test_a_bad_notify_url_exits_2_and_writes_nothing(cli: Cli, url: str, message: str) -> None:
    result = cli("add", "--at", "now", "--notify", url)

    assert result.code == 2
    assert result.err.startswith(f"duequeue: error: {message}")
    assert result.err.count("\n") == 1
    listed = cli("inspect", "--all", "--json")  # an SQLite file was not even created
    assert listed.code == 1 or listed.json() == []


def test_import_takes_notify_targets(cli: Cli, http: HttpSink, tmp_path: Path) -> None:
    lines = tmp_path / "r.jsonl"
    url = f"ntfy://{host(http)}/{TOPIC}"
    lines.write_text(json.dumps({"at": "now", "notify": [url], "subject": "s"}) + "\n")

    assert cli("import", str(lines)).code == 0
    assert cli.tick()["deliveries_sent"] == 1
    assert json.loads(http.requests[0].body)["topic"] == TOPIC


def test_doctor_checks_the_schemes_of_notify_targets(cli: Cli, http: HttpSink) -> None:
    cli.add("--at", "+1d", "--notify", f"ntfy://{host(http)}/{TOPIC}")

    result = cli("doctor", "--json")

    checks = {c["name"]: c for c in result.json()["checks"]}
    assert checks["notify targets"]["ok"] is True
    assert "ntfy" in checks["notify targets"]["detail"]
    assert TOPIC not in result.out


def test_the_private_address_block_refuses_notify_targets_at_add_and_at_tick(
    cli: Cli, http: HttpSink
) -> None:
    url = f"json://{host(http)}/inbox"
    block = {"DUEQUEUE_WEBHOOK_BLOCK_PRIVATE": "true"}
    refused = cli("add", "--at", "now", "--notify", url, env=block)
    rid = cli.add("--at", "now", "--notify", url)  # added before the block was switched on

    summary = cli("tick", "--json", env=block).json()

    assert refused.code == 2
    assert "--notify: refused while DUEQUEUE_WEBHOOK_BLOCK_PRIVATE is on" in refused.err
    assert counts(summary) == {**NOTHING, "claimed": 1, "dead": 1}
    assert "refused while DUEQUEUE_WEBHOOK_BLOCK_PRIVATE is on" in cli.row(rid)["last_error"]
    assert http.requests == []  # Apprise was never called


def test_reading_a_notify_url_during_a_tick_leaves_apprise_logging_on() -> None:
    # A notify channel's threads read each failure from what Apprise logs: masking a URL for a
    # write-back error meanwhile (on the loop's thread) must not switch that logging off.
    import asyncio
    import logging

    from duequeue.channels.apprise_urls import apprise_module, instantiate, masked
    from duequeue.channels.notify_sender import NotifyChannel

    logger = logging.getLogger("apprise")

    async def during() -> tuple[bool, bool]:
        async with NotifyChannel(timeout=1):
            seen = []

            class Spy(logging.Handler):
                def emit(self, record: logging.LogRecord) -> None:
                    seen.append(logger.disabled)

            spy = Spy()
            logger.addHandler(spy)
            try:
                masked.cache_clear()
                masked("ntfy://127.0.0.1:1/some-topic")
                instantiate(apprise_module(), "slack://T1/")  # refused: Apprise logs why
            finally:
                logger.removeHandler(spy)
            return logger.disabled, bool(seen)

    disabled, logged = asyncio.run(during())

    assert disabled is False
    assert logged  # the refusal reached the handlers instead of being switched off
    assert logger.disabled is False
