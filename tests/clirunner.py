"""Helpers for end-to-end tests: run the real CLI in-process at a frozen instant."""

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from freezegun import freeze_time
from typer.testing import CliRunner

from duequeue.cli.app import app
from tests.stores import Db

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


class Cli:
    """The duequeue CLI bound to one database, a settings environment and a movable clock."""

    def __init__(self, db: Db, now: datetime, env: Mapping[str, str] | None = None) -> None:
        self.env = {"DUEQUEUE_DB": str(db), **(env or {})}
        self.now = now
        self.runner = CliRunner()

    def __call__(
        self, *args: str, env: Mapping[str, str] | None = None, stdin: str | None = None
    ) -> Result:
        # real_asyncio: the tick's timeouts run on real time while the calendar stays frozen.
        with freeze_time(self.now, real_asyncio=True):
            r = self.runner.invoke(app, list(args), input=stdin, env={**self.env, **(env or {})})
        if r.exception is not None and not isinstance(r.exception, SystemExit):
            raise r.exception
        return Result(r.exit_code, r.stdout, r.stderr)

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)

    def tick(self, *args: str) -> dict[str, Any]:
        r = self("tick", "--json", *args)
        assert r.code == 0, r.err
        summary: dict[str, Any] = r.json()
        return summary

    def add(self, *args: str) -> int:
        r = self("add", *args)
        assert r.code == 0, r.err
        return int(r.out)

    def inspect(self, view: str = "--all") -> list[dict[str, Any]]:
        r = self("inspect", view, "--json")
        assert r.code == 0, r.err
        rows: list[dict[str, Any]] = r.json()
        return rows

    def verify(self, body: bytes, headers: Mapping[str, str]) -> Any:
        """Verify a webhook with the reference implementation, at the CLI's frozen instant."""
        from standardwebhooks.webhooks import Webhook

        with freeze_time(self.now):
            return Webhook(SECRET).verify(body, dict(headers))

    def row(self, rid: int) -> dict[str, Any]:
        (found,) = [r for r in self.inspect("--all") if r["id"] == rid]
        return found


def counts(summary: Mapping[str, Any]) -> dict[str, int]:
    """The row counters of a tick summary, without lateness."""
    keys = ("claimed", "sent", "partial", "retried", "dead", "skipped", "released")
    return {k: summary[k] for k in keys}
