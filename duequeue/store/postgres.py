"""The PostgreSQL backend (psycopg 3): many hosts tick one queue.

Claims lock their rows with FOR UPDATE SKIP LOCKED inside the claiming UPDATE, so concurrent
ticks on any number of hosts split the due rows without waiting on each other, and the lease
columns carry the ownership past the transaction exactly as on SQLite.

Every unit of work is one transaction. When the connection breaks (a server restart, a terminated
backend, a network cut) the backend reconnects once and repeats the transaction if the caller
marked it safe to repeat; otherwise, or when the repeat fails too, it raises StoreError. A store
never silently drops a write.

Every wait on the server is bounded below a tick's lease (docs/postgresql.md, "Timeouts"): TCP
keepalives and `tcp_user_timeout` notice a link that went silent, `lock_timeout` and
`statement_timeout` bound the server's side, a connect never outlasts the deadline bound() sets
(whatever the URL's `connect_timeout`), and interrupt() lets a tick past its deadline cut a call
that still hangs (a link that takes bytes and never answers). The session also bounds how long
the server keeps a silent client's open transaction, and its locks: a cut host's rows come free
in seconds without any server setting.
"""

import contextlib
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar
from urllib.parse import parse_qsl, urlsplit

import psycopg
import psycopg.sql
from psycopg.conninfo import conninfo_to_dict

from duequeue.errors import StoreBusyError, StoreError
from duequeue.shared.redact import url as safe_url
from duequeue.store import schema, schema_steps
from duequeue.store.hosts import HOST_PREFIX, SCHEMA_PREFIX, TZ_PREFIX
from duequeue.store.hosts import hosts as hosts_of
from duequeue.store.pg_listen import PgListener
from duequeue.store.records import HealthCheck, HostTick
from duequeue.store.sql import POSTGRES, Row, Run
from duequeue.store.store import Store

SCHEMA_VERSION = schema.VERSION  # one version number across both dialects
APPLICATION = "duequeue"
# pg_advisory_xact_lock key ('dque'): processes starting on a fresh database apply the schema
# one after another instead of racing into "relation already exists".
SCHEMA_LOCK = 0x64717565
CONNECT_TIMEOUT_S = 10
# The longest one connect may wait, whatever the URL asks (libpq's 0, "forever", included); and
# the shortest: psycopg waits at least 2 s, so a connect is not started with less time left.
CONNECT_CEILING_S = 30
CONNECT_FLOOR_S = 2
# A link that stays silent while idle is given up after 5 + 3 x 2 = 11 s; one that leaves sent
# bytes unacknowledged after tcp_user_timeout (see timeouts()).
KEEPALIVES = {"keepalives": "1", "keepalives_idle": "5", "keepalives_interval": "2",
              "keepalives_count": "3"}  # fmt: skip

# psycopg logs a failure it meets while cleaning up after another one (a pipeline or a rollback
# on a connection that just broke) as a warning; with no logging set up Python prints it, three
# lines, on stderr. The error that matters is the one raised, which the store reports in one
# line; an application that configures logging still gets these.
logging.getLogger("psycopg").addHandler(logging.NullHandler())

T = TypeVar("T")
Cursor = psycopg.Cursor[tuple[Any, ...]]


def schema_postgres_sql() -> str:
    """Return the PostgreSQL schema shipped inside the package."""
    return schema.current("postgresql")


class PostgresBackend:
    """One PostgreSQL database, open for the store (the tables live in the connection's current
    schema): a connection in autocommit mode with explicit transactions, that survives a
    dropped link. Shared by many hosts, so the server's clock judges what is due."""

    dialect = POSTGRES

    def __init__(self, url: str, busy_timeout_s: float = 5.0) -> None:
        self.url = url
        self.where = safe_url(url)
        self.created = False  # whether opening it created duequeue's tables
        self._passwords = _passwords(url)
        self._settings = timeouts(url, busy_timeout_s)
        self._connect_s, self._hosts = connect_timeout(url)
        self._cut = threading.Event()  # interrupt() was called: no call waits any more
        self._until: float | None = None  # bound(): no wait ends later (time.monotonic())
        self._watchdog: threading.Timer | None = None  # bound(): interrupts at `_until`
        self.conn = self._connect()
        try:
            self._ensure_schema()
        except BaseException:
            self.conn.close()
            raise

    def transact(
        self, work: Callable[[Run], T], *, what: str, write: bool, repeatable: bool = True
    ) -> T:
        # Reads and writes alike run in a transaction (PostgreSQL locks rows, not the database).
        return self.transact_cursor(lambda cur: work(PgRun(cur)), what=what, repeatable=repeatable)

    def health(self, run: Run) -> list[HealthCheck]:
        return health(run, self.where)

    def transact_cursor(self, work: Callable[[Cursor], T], *, what: str, repeatable: bool) -> T:
        """Run `work` on a cursor in one transaction; on a broken connection reconnect once
        and, if the transaction is `repeatable` (safe to run twice), run it again."""
        self._check_cut(what)
        try:
            return self._once(work)
        except psycopg.Error as exc:
            self._check_cut(what, exc)
            if not self._unusable():
                # Lock timeouts, deadlocks, serialization failures, a full disk: the server is
                # there and the same work may succeed later.
                error = StoreBusyError if isinstance(exc, psycopg.OperationalError) else StoreError
                raise error(f"PostgreSQL {self.where}: {what}: {self._line(exc)}") from exc
            if not repeatable:
                raise StoreBusyError(
                    f"lost the connection to PostgreSQL {self.where} during {what}: "
                    f"{self._line(exc)}"
                ) from exc
            lost = exc
        self.conn.close()
        try:
            self.conn = self._connect()
        except StoreError as exc:
            raise StoreBusyError(
                f"lost the connection to PostgreSQL {self.where} during {what} "
                f"({self._line(lost)}) and could not reconnect: {exc}"
            ) from lost
        self._check_cut(what, lost)  # interrupted while connecting: the new link is not used
        try:
            return self._once(work)
        except psycopg.Error as exc:
            raise StoreError(
                f"PostgreSQL {self.where}: {what} failed again after reconnecting: "
                f"{self._line(exc)}"
            ) from exc

    def listener(self) -> PgListener:
        # Its own connection, bounded as the store's (connect, keepalives, statements).
        return PgListener(self.url, {"application_name": f"{APPLICATION} listen", **self._settings})

    def close(self) -> None:
        self.bound(None)
        self.conn.close()

    def _unusable(self) -> bool:
        """Return whether the connection cannot run the next transaction: broken, or left
        stuck by the error (a backend terminated in the middle of a pipeline leaves psycopg
        in pipeline mode, "cannot exit pipeline mode while busy", without marking it broken:
        every later transaction would fail the same way)."""
        conn = self.conn
        if conn.broken or conn.closed:
            return True
        try:
            return (
                conn.pgconn.pipeline_status != psycopg.pq.PipelineStatus.OFF
                or conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE
            )
        except psycopg.Error:
            return True

    def bound(self, until: float | None) -> None:
        """Let no wait end later than `until` (time.monotonic()); None lifts the bound.

        A tick sets its deadline here (lease - margin). A reconnect under way when the deadline
        comes cannot be interrupted (there is no socket to shut yet), so each connect waits at
        most the time left, and none starts with less than CONNECT_FLOOR_S left. A statement
        still waiting then, on a link that takes bytes and never answers, is cut by a watchdog
        (interrupt()): the tick's stages cut theirs too, but its first claim runs before them.
        """
        self._until = until
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None
        if until is not None:
            watchdog = threading.Timer(max(0.0, until - time.monotonic()), self.interrupt)
            watchdog.daemon = True  # never what keeps a process from exiting
            watchdog.start()
            self._watchdog = watchdog

    def drain(self) -> None:
        return None  # the server checkpoints on its own

    def interrupt(self) -> None:
        """Cut the call running on another thread, and fail every later one at once.

        Called by a tick whose deadline passed while a call still waits on a link that took its
        bytes and never answered (no keepalive or TCP timeout fires then). Shutting the socket
        down wakes the waiting thread with an error, safely from here; the connection is not
        reopened: past the deadline the tick's leases are about to end.
        """
        self._cut.set()
        with contextlib.suppress(Exception):
            fd = self.conn.pgconn.socket
            with socket.socket(fileno=os.dup(fd)) as sock:
                sock.shutdown(socket.SHUT_RDWR)

    def _check_cut(self, what: str, cause: BaseException | None = None) -> None:
        if self._cut.is_set():
            raise StoreError(
                f"PostgreSQL {self.where}: {what}: no answer before the tick's deadline"
            ) from cause

    def server_ms(self) -> int:
        """Return the database server's clock, in unix ms (one round trip)."""
        return self.transact_cursor(_server_ms, what="reading the server's clock", repeatable=True)

    def note_tick(self, host: str, host_ms: int, release: str | None = None) -> int:
        """Note `host`'s tick (its clock's offset, the tz release it reads) in duequeue_meta;
        return the server's clock. One round trip: what reading the clock costs."""
        self._check_cut("noting the tick")
        # One round trip, without waiting for the WAL to reach the disk (synchronous_commit
        # off for this transaction alone): a host's last tick lost in a server crash is
        # harmless, and a flush would make the empty tick several times slower. The values
        # are literals: several statements go as one simple query, which takes no parameters.
        query = psycopg.sql.SQL(_NOTE_TICK).format(
            name=psycopg.sql.Literal(HOST_PREFIX + host),
            host_ms=psycopg.sql.Literal(host_ms),
            tz_name=psycopg.sql.Literal(TZ_PREFIX + host),
            release=psycopg.sql.Literal(release),
            schema_name=psycopg.sql.Literal(SCHEMA_PREFIX + host),
            schema=psycopg.sql.Literal(str(SCHEMA_VERSION)),
        )

        def note(cur: Cursor) -> int:
            cur.execute(query)
            while cur.description is None or cur.rowcount != 1:
                if not cur.nextset():
                    raise StoreError(f"PostgreSQL {self.where}: noting the tick returned no row")
            row = cur.fetchone()
            assert row is not None
            return int(row[0])

        try:
            with self.conn.cursor() as cur:
                return note(cur)
        except psycopg.Error:
            if self.conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                with contextlib.suppress(psycopg.Error):
                    self.conn.execute("ROLLBACK")
            # A dropped link: the careful path reconnects once and tries again.
            return self.transact_cursor(note, what="noting the tick", repeatable=True)

    def hosts(self, run: Run, now: int) -> tuple[HostTick, ...]:
        """Return the hosts that ticked in the last day, the latest first."""
        return _hosts(run, now)

    def _once(self, work: Callable[[Cursor], T]) -> T:
        with self.conn.transaction(), self.conn.cursor() as cur:
            return work(cur)

    def _connect(self) -> psycopg.Connection[tuple[Any, ...]]:
        timeout = self._connect_s
        if self._until is not None:
            # psycopg gives each host of the URL the whole timeout: share the time left.
            left = int((self._until - time.monotonic()) / self._hosts)
            if left < CONNECT_FLOOR_S:
                raise StoreError(
                    f"cannot connect to PostgreSQL {self.where}: no time left before the "
                    "tick's deadline"
                )
            timeout = min(timeout, left)
        kwargs: dict[str, Any] = {
            "autocommit": True,
            "application_name": APPLICATION,
            **self._settings,
            "connect_timeout": str(timeout),
        }
        try:
            return psycopg.connect(self.url, **kwargs)
        except psycopg.Error as exc:
            raise StoreError(
                f"cannot connect to PostgreSQL {self.where}: {self._line(exc)}"
            ) from exc

    def _line(self, exc: BaseException) -> str:
        """Return the first line of an error, with any password masked."""
        text = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        text = text.removeprefix("connection failed: ")
        for secret in self._passwords:
            text = text.replace(secret, "****")
        return text

    def _ensure_schema(self) -> None:
        if self._schema_is_current():
            return
        state = self.transact_cursor(
            _schema_state, what="reading the schema version", repeatable=True
        )
        if state is None or state[0] != APPLICATION or _needs_steps(state[1]):

            def apply(cur: Cursor) -> tuple[str, schema_steps.Shape] | None:
                # An upgrade may build indexes on large tables: no statement timeout for it.
                cur.execute("SET LOCAL statement_timeout = 0")
                cur.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
                found = _schema_state(cur)  # another process may have applied it meanwhile
                if found is None:
                    cur.execute(schema_postgres_sql().encode())
                    self.created = True  # for `init` to say so
                    return APPLICATION, schema_steps.shape(schema.FLOOR, schema.VERSION)
                oldest = schema.OLDEST["postgresql"]
                shape = found[1]
                if found[0] == APPLICATION and oldest <= shape.floor and _needs_steps(shape):
                    if not shape.runs():
                        return found  # refused below, nothing written
                    steps = schema_steps.to_expand("postgresql", shape)
                    return APPLICATION, _apply(cur, shape, steps, expand=True)
                return found

            state = self.transact_cursor(apply, what="applying the schema", repeatable=True)
        if state is None or state[0] != APPLICATION:
            raise StoreError(f"PostgreSQL {self.where} holds tables, but not duequeue's")
        if not state[1].runs():
            raise StoreError(schema_steps.refusal(f"PostgreSQL {self.where}", state[1]))
        if state[1].version < SCHEMA_VERSION:
            raise StoreError(
                f"PostgreSQL {self.where} has schema version {state[1].version}, older than "
                f"this duequeue upgrades from ({schema.OLDEST['postgresql']})"
            )

    def _schema_is_current(self) -> bool:
        """Check the schema's marks in one round trip: what every command pays on open."""
        try:
            with self.conn.cursor() as cur:
                cur.execute(_MARKS)
                meta = dict(cur.fetchall())
        except psycopg.errors.UndefinedTable:
            return False  # a fresh, foreign or old database: the careful path decides
        except psycopg.Error as exc:
            raise StoreError(f"PostgreSQL {self.where}: {self._line(exc)}") from exc
        if meta.get("application") != APPLICATION:
            return False
        try:
            floor = int(meta.get("schema_version", ""))
        except ValueError:
            return False
        return not _needs_steps(schema_steps.shape(floor, meta.get(schema.STEPS_KEY)))

    def shape(self, run: Run) -> schema_steps.Shape:
        return _shape(run)

    def contract(self) -> tuple[schema_steps.Shape, list[str]]:
        """Apply the pending contract steps (`migrate --contract`) under the schema lock;
        return the database's shape after them and the names of the steps applied."""

        def apply(cur: Cursor) -> tuple[schema_steps.Shape, list[str]]:
            cur.execute("SET LOCAL statement_timeout = 0")
            cur.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
            found = _schema_state(cur)
            if found is None or found[0] != APPLICATION:
                raise StoreError(f"PostgreSQL {self.where} holds tables, but not duequeue's")
            steps = schema_steps.to_contract("postgresql", found[1])
            return _apply(cur, found[1], steps), [m.name for m in steps]

        return self.transact_cursor(apply, what="contracting the schema", repeatable=True)


# The marks of the schema, read on every open: the application, the floor, the newest step.
_MARKS = f"""SELECT name, value FROM duequeue_meta WHERE name IN ('application', 'schema_version')
    UNION ALL SELECT name, value FROM queue_meta WHERE name = '{schema.STEPS_KEY}'"""


def _needs_steps(found: schema_steps.Shape) -> bool:
    """Say whether this code must expand the database `found` (or refuse it) before running."""
    return not found.runs() or found.version < SCHEMA_VERSION


class PgRun:
    """A cursor as the Run that SQL written once goes through (see sql.py)."""

    __slots__ = ("_cur",)

    def __init__(self, cur: Cursor) -> None:
        self._cur = cur

    def __call__(self, sql: str, args: Mapping[str, Any], /) -> list[Row]:
        self._cur.execute(sql.encode(), args)
        return self._cur.fetchall() if self._cur.description is not None else []

    def many(self, sql: str, rows: Sequence[Mapping[str, Any]], /) -> list[Row]:
        if not rows:
            return []
        # Pipelined: the batch costs about one round trip, not one per row.
        self._cur.executemany(sql.encode(), rows, returning=True)
        found: list[Row] = []
        while True:
            if self._cur.description is not None:
                found.extend(self._cur.fetchall())
            if not self._cur.nextset():
                return found

    def changed(self) -> int:
        return self._cur.rowcount


def _shape(run: Run) -> schema_steps.Shape:
    """Return the shape of an open duequeue schema (schema_steps.py)."""
    found = run("SELECT value FROM duequeue_meta WHERE name = 'schema_version'", {})
    steps = run(f"SELECT value FROM queue_meta WHERE name = '{schema.STEPS_KEY}'", {})
    return schema_steps.shape(int(found[0][0]) if found else 0, steps[0][0] if steps else None)


def health(run: Run, where: str) -> list[HealthCheck]:
    """Check the schema version, the server, and the index that holds the core rule."""
    shape = _shape(run)
    pending = schema_steps.to_contract("postgresql", shape) if shape.runs() else []
    older: list[str] = []
    if pending:
        now = int(run("SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint", {})[0][0])
        needed = pending[-1].version
        older = [h.host for h in _hosts(run, now) if h.schema is None or h.schema < needed]
    checks = [schema_steps.check(where, shape, pending, older)]
    server = run("SHOW server_version", {})[0]
    checks.append(
        HealthCheck("database server", True, f"PostgreSQL {server[0] if server else '?'}")
    )
    # The "one sent per target and fire" rule lives in this unique index; a failed concurrent
    # rebuild can leave it invalid, and then nothing stops a second `sent`.
    found = run(
        """SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
           WHERE c.relname = 'deliveries_sent_once'
             AND c.relnamespace = current_schema()::regnamespace""",
        {},
    )
    index = found[0] if found else None
    ok = bool(index and index[0])
    checks.append(
        HealthCheck(
            "database integrity",
            ok,
            "index deliveries_sent_once: valid"
            if ok
            else "index deliveries_sent_once: " + ("invalid" if index else "missing"),
            None
            if ok
            else "stop cron, then in psql `REINDEX INDEX deliveries_sent_once` (if invalid) or "
            "create it as schema_postgres.sql does (if missing)",
        )
    )
    checks.append(_search_check(run))
    return checks


def _search_check(run: Run) -> HealthCheck:
    """Say whether serve's search has its trigram index (the schema leaves it out where pg_trgm
    could not be added: a search then reads reminder_search whole)."""
    found = run(
        """SELECT 1 FROM pg_class c WHERE c.relname = 'reminder_search_trigrams'
             AND c.relnamespace = current_schema()::regnamespace""",
        {},
    )
    if found:
        return HealthCheck("search index", True, "reminder_search_trigrams (pg_trgm)")
    return HealthCheck(
        "search index",
        True,
        "no trigram index: serve's search reads every reminder's search text",
        "as a role that may: `CREATE EXTENSION pg_trgm; CREATE INDEX reminder_search_trigrams "
        "ON reminder_search USING gin (text gin_trgm_ops)`",
        warning=True,
    )


def _apply(
    cur: Cursor, found: schema_steps.Shape, steps: list[schema.Migration], *, expand: bool = False
) -> schema_steps.Shape:
    """Run migration `steps` on the schema `found`, in one transaction (the caller's); record
    and return its shape after them (`expand`: to_expand's steps, see schema_steps.after)."""
    done = schema_steps.after(found, steps, expanded=expand)
    if done == found:
        return found
    for step in steps:
        cur.execute(step.sql.encode())
    cur.execute(
        "UPDATE duequeue_meta SET value = %s WHERE name = 'schema_version'", (str(done.floor),)
    )
    row = done.steps_row()
    if row is None:
        cur.execute("DELETE FROM queue_meta WHERE name = %s", (schema.STEPS_KEY,))
    else:
        cur.execute(
            "INSERT INTO queue_meta (name, value) VALUES (%s, %s) "
            "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
            (schema.STEPS_KEY, row),
        )
    return done


def _schema_state(cur: Cursor) -> tuple[str, schema_steps.Shape] | None:
    """Return (application, shape) of the current schema; None when it is empty.

    A schema with tables but no duequeue marker reads as ('', floor 0): foreign.
    """
    cur.execute("SELECT current_schema()")
    row = cur.fetchone()
    if row is None or row[0] is None:
        raise StoreError("PostgreSQL: no schema on the search_path to create tables in")
    cur.execute(
        """SELECT count(*), count(*) FILTER (WHERE tablename = 'duequeue_meta'),
                  count(*) FILTER (WHERE tablename = 'queue_meta')
           FROM pg_tables WHERE schemaname = current_schema()"""
    )
    tables, marked, has_queue_meta = cur.fetchone() or (0, 0, 0)
    if not tables:
        return None
    if not marked:
        return "", schema_steps.shape(0)
    cur.execute("SELECT name, value FROM duequeue_meta")
    meta: dict[str, str] = dict(cur.fetchall())
    steps = None
    if has_queue_meta:
        cur.execute("SELECT value FROM queue_meta WHERE name = %s", (schema.STEPS_KEY,))
        found = cur.fetchone()
        steps = found[0] if found else None
    try:
        return str(meta.get("application", "")), schema_steps.shape(
            int(meta.get("schema_version", 0)), steps
        )
    except ValueError:
        return "", schema_steps.shape(0)


# One row per host in duequeue_meta (store/hosts.py), written in one round trip.
_NOTE_TICK = """BEGIN; SET LOCAL synchronous_commit = off;
    INSERT INTO duequeue_meta (name, value)
    SELECT n, v FROM (VALUES ({tz_name}, {release}::text), ({schema_name}, {schema})) AS r (n, v)
        WHERE v IS NOT NULL
    ON CONFLICT (name) DO UPDATE SET value = excluded.value
        WHERE duequeue_meta.value IS DISTINCT FROM excluded.value;
    WITH t AS (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS ms)
    INSERT INTO duequeue_meta (name, value)
    SELECT {name}, t.ms || ' ' || ({host_ms} - t.ms) FROM t
    ON CONFLICT (name) DO UPDATE SET value = excluded.value
    RETURNING split_part(value, ' ', 1)::bigint;
    COMMIT"""


def _hosts(run: Run, now: int) -> tuple[HostTick, ...]:
    """Return the hosts that ticked in the last day, the latest first (store/hosts.py)."""
    rows = run(
        """SELECT name, value FROM duequeue_meta
           WHERE left(name, 5) = 'host:' OR left(name, 8) = 'host_tz:'
              OR left(name, 12) = 'host_schema:'""",
        {},
    )
    return hosts_of(rows, now)


def _server_ms(cur: Cursor) -> int:
    cur.execute("SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint")
    row = cur.fetchone()
    assert row is not None
    return int(row[0])


def timeouts(url: str, busy_timeout_s: float) -> dict[str, str]:
    """Return the libpq parameters that bound every wait on the server; what the URL sets wins
    (connect_timeout is connect_timeout()'s).

    The client's side:
    - keepalives: an idle link that went silent is noticed in 11 s (KEEPALIVES);
    - tcp_user_timeout: sent bytes unacknowledged for the busy timeout + 10 s break the link.
    The server's side, set for this session (`options`), so no server setting is needed:
    - lock_timeout: a lock is waited for at most the busy timeout (SQLite's rule);
    - statement_timeout: one statement runs at most 6 x the busy timeout, and 30 s at least;
    - idle_in_transaction_session_timeout: the busy timeout + 2 s. A client cut (or frozen)
      mid-transaction never sends its COMMIT; the server ends its session then, and the rows it
      locked come free. Below the margin a tick keeps before its lease ends (busy timeout + 5 s,
      engine/tick.py), so the rows of a commit cut at the tick's deadline are free again before
      its lease ends; no transaction of duequeue idles that long between two statements.
    - tcp_keepalives_* and tcp_user_timeout, the client's values: the server notices a silent
      client as fast as the client notices a silent server.

    With the default busy timeout (5 s) the longest a tick's statement can wait is 30 s, far
    below the default lease (325 s); a tick's deadline (engine/commit.py) covers a link that
    acknowledges bytes and never answers.
    """
    given = conninfo_to_dict(url)
    busy_ms = max(1, round(busy_timeout_s * 1000))
    user_timeout_ms = busy_ms + 10_000
    wanted: dict[str, str] = {**KEEPALIVES, "tcp_user_timeout": str(user_timeout_ms)}
    found = {k: v for k, v in wanted.items() if k not in given}
    options = str(given.get("options") or "")
    server = {
        "lock_timeout": busy_ms,
        "statement_timeout": max(30_000, 6 * busy_ms),
        "idle_in_transaction_session_timeout": busy_ms + 2_000,
        "tcp_keepalives_idle": KEEPALIVES["keepalives_idle"],
        "tcp_keepalives_interval": KEEPALIVES["keepalives_interval"],
        "tcp_keepalives_count": KEEPALIVES["keepalives_count"],
        "tcp_user_timeout": user_timeout_ms,
    }
    extra = " ".join(f"-c {k}={v}" for k, v in server.items() if k not in options)
    if extra:
        found["options"] = f"{options} {extra}".strip()
    return found


def connect_timeout(url: str) -> tuple[int, int]:
    """Return how long one connect may wait, in whole seconds, and how many hosts the URL names.

    The URL's `connect_timeout` (10 s when it gives none) clamped to CONNECT_FLOOR_S ..
    CONNECT_CEILING_S: libpq's 0 ("wait forever") and a minute are what a cut link would cost a
    tick. A tick bounds it further by its deadline (PostgresBackend.bound).
    """
    given = conninfo_to_dict(url)
    try:
        asked = int(float(str(given.get("connect_timeout", CONNECT_TIMEOUT_S))))
    except ValueError:
        asked = CONNECT_TIMEOUT_S  # libpq itself refuses it, with its own message
    if asked <= 0:
        asked = CONNECT_CEILING_S
    seconds = min(max(asked, CONNECT_FLOOR_S), CONNECT_CEILING_S)
    hosts = str(given.get("host") or given.get("hostaddr") or "")
    return seconds, max(1, hosts.count(",") + 1)


def _passwords(url: str) -> list[str]:
    parts = urlsplit(url)
    found = [v for k, v in parse_qsl(parts.query) if k == "password" and v]
    if parts.password:
        found.append(parts.password)
    return found


def connect(db: str, busy_timeout_s: float = 5.0, create: bool = True) -> Store:
    """Open the store on the PostgreSQL database the URL `db` names (it always exists)."""
    return Store(PostgresBackend(db, busy_timeout_s))
