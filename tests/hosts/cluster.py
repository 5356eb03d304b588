"""A PostgreSQL cluster of the harness's own, in a namespace: initdb and pg_ctl into a temp folder.

The installed server's binaries (/usr/lib/postgresql/<newest>/bin) run as the `postgres` user
(initdb refuses root) inside the database's namespace, listening on that namespace's address only,
with trust auth for the harness's subnet. The harness itself talks to it over the cluster's Unix
socket (a file, outside any network namespace), so cutting links never cuts the test's own view.
"""

import contextlib
import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.hosts.netns import SUBNET, Host, run

PORT = 5432


def pg_bin() -> Path | None:
    """The newest installed PostgreSQL's bin folder, or None."""
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4])
    )
    return Path(found[-1]).parent if found else None


class Cluster:
    """One PostgreSQL server the harness starts and stops; see the module's docstring."""

    def __init__(
        self, host: Host, *, settings: dict[str, str] | None = None, data: Path | None = None
    ) -> None:
        binary = pg_bin()
        if binary is None:
            raise RuntimeError("no PostgreSQL under /usr/lib/postgresql/*/bin")
        self.bin = binary
        self.host = host
        self.root = Path(tempfile.mkdtemp(prefix="dq-hosts-pg-"))
        os.chmod(self.root, 0o755)
        pw = pwd.getpwnam("postgres")
        os.chown(self.root, pw.pw_uid, pw.pw_gid)
        self.data = data or self.root / "data"
        self.socket = self.root
        self.log = self.root / "server.log"
        self.settings = {
            "listen_addresses": host.addr["db"],
            "port": str(PORT),
            "unix_socket_directories": str(self.socket),
            "fsync": "off",  # a test cluster: its files need not survive the machine
            "max_connections": "200",
            "shared_preload_libraries": "pg_stat_statements",
            "log_min_messages": "warning",
            **(settings or {}),
        }

    def _as_postgres(self, *args: str, netns: bool = False, timeout: float = 120) -> str:
        prefix = self.host.exec_prefix() if netns else []
        cmd = [*prefix, "runuser", "-u", "postgres", "--", *args]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
        if done.returncode != 0:
            raise RuntimeError(
                f"{' '.join(args[:2])}: {done.stderr.strip() or done.stdout.strip()}"
            )
        return done.stdout

    def init(self) -> "Cluster":
        """Make the data folder (initdb) with trust auth for the harness's subnets."""
        self._as_postgres(
            str(self.bin / "initdb"), "-D", str(self.data), "-U", "postgres", "-A", "trust"
        )
        self.configure()
        return self

    def clone(self, primary: "Cluster") -> "Cluster":
        """Make this data folder a streaming standby of `primary` (pg_basebackup -R)."""
        self._as_postgres(
            str(self.bin / "pg_basebackup"), "-h", primary.host.addr["db"], "-p", str(PORT),
            "-U", "postgres", "-D", str(self.data), "-R", "-X", "stream", netns=True,
        )  # fmt: skip
        self.configure()
        return self

    def configure(self) -> None:
        """Write the settings and the host-based auth every start reads."""
        auto = self.data / "postgresql.auto.conf"
        # A standby's pg_basebackup -R wrote where its primary is: kept.
        kept = [x for x in auto.read_text().splitlines() if x.startswith("primary_conninfo")]
        conf = "".join(f"{k} = '{v}'\n" for k, v in self.settings.items())
        auto.write_text(conf + "".join(x + "\n" for x in kept))
        hba = "local all all trust\nlocal replication all trust\n"
        for net in SUBNET.values():
            hba += f"host all all {net}.0/24 trust\nhost replication all {net}.0/24 trust\n"
        (self.data / "pg_hba.conf").write_text(hba)

    def ctl(self, *args: str) -> None:
        """pg_ctl in the database's namespace (a started server listens there)."""
        self._as_postgres(
            str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.log),
            "-w", "-t", "60", *args, netns=True,
        )  # fmt: skip

    def start(self) -> "Cluster":
        self.ctl("start")
        return self

    def url(self, db: str = "postgres") -> str:
        """What ticking hosts use: TCP to the namespace's address."""
        return f"postgresql://postgres@{self.host.addr['db']}:{PORT}/{db}"

    def local_url(self, db: str = "postgres") -> str:
        """What the harness uses: the Unix socket, outside any network."""
        return f"postgresql://postgres@/{db}?host={self.socket}&port={PORT}"

    def connect(self, db: str = "postgres") -> Any:
        import psycopg

        return psycopg.connect(self.local_url(db), autocommit=True, connect_timeout=5)

    def server_pids(self) -> list[int]:
        """The postmaster and its children (backends included): for CPU accounting."""
        first = (self.data / "postmaster.pid").read_text().split("\n", 1)[0]
        main = int(first)
        kids = run("pgrep", "-P", str(main), check=False).stdout.split()
        return [main, *map(int, kids)]

    def stop(self) -> None:
        if (self.data / "postmaster.pid").exists():
            with contextlib.suppress(RuntimeError):
                self.ctl("stop", "-m", "immediate")

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)

    def wait_ready(self, timeout: float = 60) -> None:
        """Wait until the server answers on its socket (after a start or a promote)."""
        deadline = time.monotonic() + timeout
        while True:
            done = run(
                str(self.bin / "pg_isready"),
                "-q",
                "-h",
                str(self.socket),
                "-p",
                str(PORT),
                check=False,
            )
            if done.returncode == 0:
                return
            if time.monotonic() > deadline:
                raise AssertionError("the cluster did not become ready")
            time.sleep(0.1)
