"""The MySQL / MariaDB backend (PyMySQL): many hosts tick one queue, as on PostgreSQL.

`mysql://user:password@host:port/database` (MySQL >= 8.0, MariaDB >= 10.6). Claims pick their
rows with SELECT ... FOR UPDATE SKIP LOCKED and lease them in the same transaction (no UPDATE ...
RETURNING here: statements/claim.sql), so concurrent ticks on any number of hosts split the due
rows without waiting on each other; the lease columns carry the ownership past the transaction
exactly as on the other two. The server's clock decides what is due.

Every session is set up the same whatever the server's defaults (docs/mysql.md): READ COMMITTED
(a claim's locking read sees what other claims committed; no gap locks between ticks),
sql_mode with ANSI_QUOTES and PIPES_AS_CONCAT (the shared SQL's "names" and ||) and strict
tables, time zone UTC, innodb_lock_wait_timeout and lock_wait_timeout at the busy timeout, and
on MariaDB idle_transaction_timeout (a cut client's locks come free in seconds).

Every unit of work is one transaction. When the connection breaks the backend reconnects once
and repeats the transaction if the caller marked it safe to repeat; otherwise, or when the repeat
fails too, it raises StoreError. Every wait on the server is bounded: connect, read and write
timeouts on the socket, the lock waits above, and interrupt() shuts the socket down for a tick
past its deadline.
"""

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar
from urllib.parse import parse_qsl, unquote, urlsplit

import pymysql
import pymysql.cursors

from duequeue.errors import StoreBusyError, StoreError
from duequeue.shared.redact import url as safe_url
from duequeue.store import schema, schema_steps
from duequeue.store.hosts import HOST_PREFIX, SCHEMA_PREFIX, TZ_PREFIX
from duequeue.store.hosts import READ as READ_HOSTS
from duequeue.store.hosts import hosts as hosts_of
from duequeue.store.records import HealthCheck, HostTick
from duequeue.store.sql import MYSQL, Row, Run
from duequeue.store.store import Store

SCHEMA_VERSION = schema.VERSION
APPLICATION = "duequeue"
# GET_LOCK's name: processes starting on a fresh database apply the schema one after another.
SCHEMA_LOCK = "duequeue_schema"
CONNECT_TIMEOUT_S = 10
CONNECT_FLOOR_S = 2
# The tables schema_mysql.sql creates: a database holding only some of them and no marker is a
# schema cut half made (DDL is not transactional), which the next open completes.
TABLES = frozenset(
    {"duequeue_meta", "reminders", "targets", "deliveries", "dead_letters", "target_retries",
     "queue_meta", "fire_moves", "reminder_changes", "tick_marks", "reminder_search"}
)  # fmt: skip
SQL_MODE = (
    "ANSI_QUOTES,PIPES_AS_CONCAT,STRICT_ALL_TABLES,NO_ZERO_DATE,NO_ZERO_IN_DATE,"
    "ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION"
)
# Server errors after which the same work may succeed later: lock wait timeout, deadlock (InnoDB
# rolled the transaction back), too many connections, a query cut by max_statement_time.
_BUSY = {1205, 1213, 1040, 1969, 3024}
# Client errors of a link that broke: can't connect, server gone away, lost connection.
_LOST = {2003, 2006, 2013, 2055, 4031}

T = TypeVar("T")
Cursor = pymysql.cursors.Cursor
_NOW_MS = "CAST(UNIX_TIMESTAMP(SYSDATE(3)) * 1000 AS SIGNED)"


def schema_mysql_sql() -> str:
    """Return the MySQL schema shipped inside the package."""
    return schema.current("mysql")


class MySQLBackend:
    """One MySQL or MariaDB database, open for the store: a connection in autocommit mode with
    explicit transactions, that survives a dropped link. Shared by many hosts, so the server's
    clock judges what is due."""

    dialect = MYSQL

    def __init__(self, url: str, busy_timeout_s: float = 5.0) -> None:
        self.url = url
        self.where = safe_url(url)
        self.created = False
        self._params = parameters(url)
        self._busy_s = max(1, round(busy_timeout_s))
        self._cut = threading.Event()
        self._until: float | None = None
        self._watchdog: threading.Timer | None = None
        self.mariadb = False
        self.conn = self._connect()
        try:
            self._ensure_schema()
        except BaseException:
            self.conn.close()
            raise

    def transact(
        self, work: Callable[[Run], T], *, what: str, write: bool, repeatable: bool = True
    ) -> T:
        return self.transact_cursor(lambda cur: work(MyRun(cur)), what=what, repeatable=repeatable)

    def transact_cursor(self, work: Callable[[Cursor], T], *, what: str, repeatable: bool) -> T:
        """Run `work` on a cursor in one transaction; on a broken connection reconnect once
        and, if the transaction is `repeatable`, run it again."""
        self._check_cut(what)
        try:
            return self._once(work)
        except pymysql.Error as exc:
            self._check_cut(what, exc)
            if not _lost(exc):
                error = StoreBusyError if _code(exc) in _BUSY else StoreError
                raise error(f"MySQL {self.where}: {what}: {_line(exc)}") from exc
            if not repeatable:
                raise StoreBusyError(
                    f"lost the connection to MySQL {self.where} during {what}: {_line(exc)}"
                ) from exc
            lost = exc
        with contextlib.suppress(Exception):
            self.conn.close()
        try:
            self.conn = self._connect()
        except StoreError as exc:
            raise StoreBusyError(
                f"lost the connection to MySQL {self.where} during {what} ({_line(lost)}) "
                f"and could not reconnect: {exc}"
            ) from lost
        self._check_cut(what, lost)
        try:
            return self._once(work)
        except pymysql.Error as exc:
            raise StoreError(
                f"MySQL {self.where}: {what} failed again after reconnecting: {_line(exc)}"
            ) from exc

    def _once(self, work: Callable[[Cursor], T]) -> T:
        conn = self.conn
        conn.begin()
        try:
            with conn.cursor() as cur:
                result = work(cur)
            conn.commit()
        except BaseException:
            with contextlib.suppress(Exception):
                conn.rollback()
            raise
        return result

    def shape(self, run: Run) -> schema_steps.Shape:
        found = run("SELECT value FROM duequeue_meta WHERE name = 'schema_version'", {})
        steps = run(f"SELECT value FROM queue_meta WHERE name = '{schema.STEPS_KEY}'", {})
        return schema_steps.shape(int(found[0][0]) if found else 0, steps[0][0] if steps else None)

    def contract(self) -> tuple[schema_steps.Shape, list[str]]:
        # MySQL's first schema version is 11: it has no step to contract yet. The first MySQL
        # migration brings opening and contracting here in line with postgres.py.
        found = self.transact(self.shape, what="reading the schema", write=False)
        if schema_steps.to_contract("mysql", found):
            raise StoreError(f"MySQL {self.where}: contract steps are not supported on MySQL yet")
        return found, []

    def health(self, run: Run) -> list[HealthCheck]:
        shape = self.shape(run)
        pending = schema_steps.to_contract("mysql", shape) if shape.runs() else []
        checks = [schema_steps.check(self.where, shape, pending)]
        (server,) = run("SELECT VERSION()", {})
        checks.append(HealthCheck("database server", True, f"MySQL protocol: {server[0]}"))
        # The "one sent per target and fire" rule lives in this unique index.
        found = run(
            """SELECT count(*) FROM information_schema.statistics
               WHERE table_schema = DATABASE() AND table_name = 'deliveries'
                 AND index_name = 'deliveries_sent_once' AND non_unique = 0""",
            {},
        )
        ok = bool(found and int(found[0][0]) == 3)
        checks.append(
            HealthCheck(
                "database integrity",
                ok,
                "index deliveries_sent_once: unique"
                if ok
                else "index deliveries_sent_once: missing",
                None if ok else "stop cron, then create it as schema_mysql.sql does",
            )
        )
        checks.append(
            HealthCheck(
                "search index",
                True,
                "none on MySQL: serve's search reads a bounded window of reminder_search",
            )
        )
        return checks

    def server_ms(self) -> int:
        def read(cur: Cursor) -> int:
            cur.execute(f"SELECT {_NOW_MS}")
            row = cur.fetchone()
            assert row is not None
            return int(row[0])

        return self.transact_cursor(read, what="reading the server's clock", repeatable=True)

    def note_tick(self, host: str, host_ms: int, release: str | None = None) -> int:
        """Note `host`'s tick (its clock's offset, the tz release it reads) in duequeue_meta;
        return the server's clock."""

        def note(cur: Cursor) -> int:
            # The schema version this host runs (docs/upgrading.md), with its tz release.
            if release is not None:
                cur.execute(
                    """INSERT INTO duequeue_meta (name, value) VALUES (%s, %s), (%s, %s)
                       ON DUPLICATE KEY UPDATE value = VALUES(value)""",
                    (TZ_PREFIX + host, release, SCHEMA_PREFIX + host, str(SCHEMA_VERSION)),
                )
            else:
                cur.execute(
                    """INSERT INTO duequeue_meta (name, value) VALUES (%s, %s)
                       ON DUPLICATE KEY UPDATE value = VALUES(value)""",
                    (SCHEMA_PREFIX + host, str(SCHEMA_VERSION)),
                )
            cur.execute(f"SELECT {_NOW_MS}")
            row = cur.fetchone()
            assert row is not None
            ms = int(row[0])
            cur.execute(
                """INSERT INTO duequeue_meta (name, value) VALUES (%s, %s)
                   ON DUPLICATE KEY UPDATE value = VALUES(value)""",
                (HOST_PREFIX + host, f"{ms} {host_ms - ms}"),
            )
            return ms

        return self.transact_cursor(note, what="noting the tick", repeatable=True)

    def hosts(self, run: Run, now: int) -> tuple[HostTick, ...]:
        return hosts_of(run(READ_HOSTS.replace("%", "%%"), {}), now)

    def bound(self, until: float | None) -> None:
        """Let no wait end later than `until` (time.monotonic()); None lifts the bound (as
        PostgresBackend.bound: each connect waits at most the time left, a watchdog interrupts
        a statement still waiting then)."""
        self._until = until
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None
        if until is not None:
            watchdog = threading.Timer(max(0.0, until - time.monotonic()), self.interrupt)
            watchdog.daemon = True
            watchdog.start()
            self._watchdog = watchdog

    def drain(self) -> None:
        return None  # the server checkpoints on its own

    def interrupt(self) -> None:
        """Cut the call running on another thread (its socket shut down), and fail every later
        one at once."""
        self._cut.set()
        with contextlib.suppress(Exception):
            sock = getattr(self.conn, "_sock", None)  # PyMySQL's socket: no public name
            if sock is not None:
                sock.shutdown(socket.SHUT_RDWR)

    def listener(self) -> None:
        return None  # no LISTEN: `worker` polls

    def close(self) -> None:
        self.bound(None)
        with contextlib.suppress(Exception):
            self.conn.close()

    def _check_cut(self, what: str, cause: BaseException | None = None) -> None:
        if self._cut.is_set():
            raise StoreError(
                f"MySQL {self.where}: {what}: no answer before the tick's deadline"
            ) from cause

    def _connect(self) -> "pymysql.connections.Connection[Cursor]":
        timeout = int(self._params.pop("connect_timeout", CONNECT_TIMEOUT_S))
        self._params["connect_timeout"] = timeout
        if self._until is not None:
            left = int(self._until - time.monotonic())
            if left < CONNECT_FLOOR_S:
                raise StoreError(
                    f"cannot connect to MySQL {self.where}: no time left before the tick's deadline"
                )
            timeout = min(timeout, left)
        # A statement waits at most its lock wait and 6 x the busy timeout (30 s at least) on
        # the socket, as on PostgreSQL.
        io_s = max(30, 6 * self._busy_s) + 5
        try:
            conn = pymysql.connect(
                **{**self._params, "connect_timeout": timeout},
                autocommit=True,
                charset="utf8mb4",
                read_timeout=io_s,
                write_timeout=io_s,
                sql_mode=SQL_MODE,
                init_command=(
                    f"SET SESSION time_zone = '+00:00', "
                    f"innodb_lock_wait_timeout = {self._busy_s}, "
                    f"lock_wait_timeout = {max(30, 6 * self._busy_s)}"
                ),
                program_name=APPLICATION,
            )
        except pymysql.Error as exc:
            raise StoreError(f"cannot connect to MySQL {self.where}: {_line(exc)}") from exc
        try:
            with conn.cursor() as cur:
                cur.execute("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")
                cur.execute("SELECT VERSION()")
                row = cur.fetchone()
                self.mariadb = "mariadb" in str(row[0] if row else "").lower()
                if self.mariadb:
                    # A client cut mid-transaction never sends its COMMIT: the server ends its
                    # session after the busy timeout + 2 s, and its locks come free.
                    cur.execute(f"SET SESSION idle_transaction_timeout = {self._busy_s + 2}")
        except pymysql.Error as exc:
            conn.close()
            raise StoreError(f"cannot set up the MySQL session {self.where}: {_line(exc)}") from exc
        return conn

    def _ensure_schema(self) -> None:
        state = self.transact_cursor(
            _schema_state, what="reading the schema version", repeatable=True
        )
        if state == (APPLICATION, SCHEMA_VERSION):
            return
        if state is None:
            # DDL commits on its own: the statements run one by one, serialized across
            # processes by a named lock, and each may run again (IF NOT EXISTS).
            with self.conn.cursor() as cur:
                try:
                    cur.execute("SELECT GET_LOCK(%s, 60)", (SCHEMA_LOCK,))
                    state = _schema_state(cur)
                    if state is None:
                        for step in _statements(schema_mysql_sql()):
                            cur.execute(step)
                        self.created = True
                        state = APPLICATION, SCHEMA_VERSION
                except pymysql.Error as exc:
                    raise StoreError(
                        f"MySQL {self.where}: applying the schema: {_line(exc)}"
                    ) from exc
                finally:
                    with contextlib.suppress(pymysql.Error):
                        cur.execute("SELECT RELEASE_LOCK(%s)", (SCHEMA_LOCK,))
        if state is None or state[0] != APPLICATION:
            raise StoreError(f"MySQL {self.where} holds tables, but not duequeue's")
        if state[1] != SCHEMA_VERSION:
            raise StoreError(
                f"MySQL {self.where} has schema version {state[1]}; "
                f"this duequeue knows {SCHEMA_VERSION}"
            )


class MyRun:
    """A cursor as the Run that SQL written once goes through (see sql.py).

    A statement of parts separated by a line holding only `;` (statements.py) runs them in
    order: a SELECT ... FOR UPDATE, then the UPDATE of `:selected` (the ids it returned); or an
    INSERT, then the SELECT of what it made. Neither database has UPDATE ... RETURNING: a shared
    statement that has one runs as a SELECT ... FOR UPDATE of the RETURNING columns and the
    UPDATE of those rows (the values returned are those before the update: every such statement
    returns columns it does not set).
    """

    __slots__ = ("_changed", "_cur")

    def __init__(self, cur: Cursor) -> None:
        self._cur = cur
        self._changed = 0

    def __call__(self, sql: str, args: Mapping[str, Any], /) -> list[Row]:
        if sql == MYSQL.snapshot:
            # The first statement of a read (Dialect.snapshot): the transaction just begun is
            # ended and one at REPEATABLE READ begun instead, its reads one snapshot.
            self._cur.execute("COMMIT")
            self._cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            self._cur.execute(sql)
            return []
        if "\n;\n" in sql:
            return self._parts(sql.split("\n;\n"), args)
        split = _update_returning(sql)
        if split is None:
            return self._execute(sql, args)
        # The SELECT returns the ids first, for `:selected`; the caller gets its columns.
        return [row[1:] for row in self._parts(split, args)]

    def _parts(self, parts: Sequence[str], args: Mapping[str, Any]) -> list[Row]:
        """Run the parts of a statement in order (statements.py): each after a SELECT gets
        `:selected`, the first column of its rows, and none runs after a SELECT that found
        nothing; return the rows of the last part that returned any."""
        rows: list[Row] = []
        selected = False
        for part in parts:
            if selected and not rows:
                break
            found = self._execute(part, {**args, "selected": tuple(r[0] for r in rows)})
            if self._cur.description is not None:
                rows, selected = found, True
        return rows

    def _execute(self, sql: str, args: Mapping[str, Any]) -> list[Row]:
        self._cur.execute(sql, args)
        self._changed = self._cur.rowcount
        return list(self._cur.fetchall()) if self._cur.description is not None else []

    def many(self, sql: str, rows: Sequence[Mapping[str, Any]], /) -> list[Row]:
        # One statement a row: PyMySQL batches only plain INSERT ... VALUES, and the returned
        # rows of each are wanted in order.
        found: list[Row] = []
        for row in rows:
            found.extend(self(sql, row))
        return found

    def changed(self) -> int:
        return self._changed


_RETURNING_CACHE: dict[str, tuple[str, str] | None] = {}


def _update_returning(sql: str) -> tuple[str, str] | None:
    """Split `UPDATE t SET ... WHERE cond RETURNING cols` into a locking SELECT of `id, cols`
    and the UPDATE of the selected ids; None for any other statement."""
    if sql in _RETURNING_CACHE:
        return _RETURNING_CACHE[sql]
    found = None
    text = sql.strip()
    if text[:6].upper() == "UPDATE" and " RETURNING " in text.replace("\n", " "):
        import re  # lazy: only the first run of such a statement parses it

        match = re.match(
            r"UPDATE\s+(\w+)\s+SET\s+(.*)\s+WHERE\s+(.*?)\s+RETURNING\s+(.*)$", text, re.S
        )
        if match is not None:
            table, sets, where, cols = match.groups()
            found = (
                f"SELECT id, {cols} FROM {table} WHERE {where} FOR UPDATE",
                f"UPDATE {table} SET {sets} WHERE id IN %(selected)s",
            )
    _RETURNING_CACHE[sql] = found
    return found


def _schema_state(cur: Cursor) -> tuple[str, int] | None:
    """Return (application, version) of the database's schema; None when it is empty or holds
    only duequeue's tables without the marker (a schema cut half made); ('', 0): foreign."""
    cur.execute("SELECT DATABASE()")
    row = cur.fetchone()
    if row is None or row[0] is None:
        raise StoreError("MySQL: the URL names no database to create tables in")
    cur.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE()")
    tables = {str(r[0]) for r in cur.fetchall()}
    if not tables:
        return None
    meta: dict[str, str] = {}
    if "duequeue_meta" in tables:
        cur.execute("SELECT name, value FROM duequeue_meta")
        meta = {str(n): str(v) for n, v in cur.fetchall()}
    if not meta:
        return None if tables <= TABLES else ("", 0)
    try:
        return str(meta.get("application", "")), int(meta.get("schema_version", 0))
    except ValueError:
        return "", 0


def _statements(text: str) -> list[str]:
    """Split a schema file into its statements (each ends with `;` at the end of a line)."""
    body = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("--"))
    return [s.strip() for s in body.split(";\n") if s.strip().rstrip(";")]


def _code(exc: BaseException) -> int:
    args = getattr(exc, "args", ())
    return int(args[0]) if args and isinstance(args[0], int) else 0


def _lost(exc: BaseException) -> bool:
    return isinstance(exc, pymysql.err.InterfaceError) or _code(exc) in _LOST


def _line(exc: BaseException) -> str:
    args: tuple[Any, ...] = tuple(getattr(exc, "args", ()))
    if len(args) >= 2:
        return f"({args[0]}) {args[1]}"
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def parameters(url: str) -> dict[str, Any]:
    """Return PyMySQL's connect arguments for a mysql:// URL (its query may set
    connect_timeout, unix_socket, ssl_ca, ssl_disabled)."""
    parts = urlsplit(url)
    database = unquote(parts.path.lstrip("/"))
    if not database:
        raise StoreError(f"--db {safe_url(url)}: name a database (mysql://user@host/database)")
    found: dict[str, Any] = {
        "host": parts.hostname or "127.0.0.1",
        "port": parts.port or 3306,
        "user": unquote(parts.username or "root"),
        "password": unquote(parts.password or ""),
        "database": database,
    }
    for name, value in parse_qsl(parts.query):
        if name == "connect_timeout":
            found[name] = max(CONNECT_FLOOR_S, min(30, int(float(value))))
        elif name in ("unix_socket", "ssl_ca", "ssl_cert", "ssl_key"):
            found[name] = value
        elif name == "ssl_disabled":
            found[name] = value.lower() in ("1", "true", "yes")
    return found


def connect(db: str, busy_timeout_s: float = 5.0, create: bool = True) -> Store:
    """Open the store on the MySQL / MariaDB database the URL `db` names (it must exist)."""
    return Store(MySQLBackend(db, busy_timeout_s))
