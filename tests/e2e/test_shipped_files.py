"""crontab.example, duequeue.service and duequeue.logrotate work as shipped on README's install.

README.md, "Running from cron", makes one install: a venv at /opt/duequeue/venv, a `duequeue`
user, the database in /var/lib/duequeue, logs in /var/log/duequeue, the settings in
/etc/duequeue/config.toml. The tests run the shipped files' own lines against that install moved
into tmp_path: the crontab's jobs under an empty environment plus only the crontab's variables
(`env -i`, as cron does, `%` handled as cron does), the unit through `systemd-analyze verify`
and its ExecStart under its Environment=, the logrotate stanza through logrotate itself.
`systemd-analyze` and `logrotate` are on CI's machine (Debian 12: systemd 252, logrotate 3.21);
where one is missing locally its test skips and says so.
"""

import base64
import grp
import os
import pwd
import re
import shutil
import signal
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from pathlib import Path

import pytest

from duequeue.config.settings import Settings
from tests.procs import LIMIT_S, ROOT
from tests.servers import HttpSink, SmtpSink

CRONTAB = ROOT / "crontab.example"
UNIT = ROOT / "duequeue.service"
LOGROTATE = ROOT / "duequeue.logrotate"
README = (ROOT / "README.md").read_text(encoding="utf-8")

# The install every shipped file assumes, and nothing else under these top directories.
VENV = "/opt/duequeue/venv"
DATA = "/var/lib/duequeue"
LOGS = "/var/log/duequeue"
ETC = "/etc/duequeue"
TEXTFILE = "/var/lib/node_exporter/textfile"  # node_exporter's, for the optional stats job
CONFIG = f"{ETC}/config.toml"
STAMP = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ) (.*)$")
JOB = re.compile(r"^((?:[0-9*/,-]+\s+){5})(\S.*)$")  # five schedule fields, then the command


@dataclass(frozen=True)
class Job:
    schedule: str
    command: str
    active: bool  # False: shipped commented out, for the operator to enable


@dataclass(frozen=True)
class Crontab:
    env: dict[str, str]
    jobs: list[Job]


def parse_crontab(text: str) -> Crontab:
    """Return a crontab's variable assignments and its job lines, commented-out ones included."""
    env: dict[str, str] = {}
    jobs: list[Job] = []
    for raw in text.splitlines():
        line = raw.strip()
        active = not line.startswith("#")
        body = line.lstrip("#").strip()
        job = JOB.match(body)
        if job:
            jobs.append(Job(job.group(1).strip(), job.group(2), active))
        elif active and "=" in line:
            name, value = line.split("=", 1)
            env[name.strip()] = value.strip()
    return Crontab(env, jobs)


def cron_command(command: str) -> tuple[str, str]:
    """Split a job's command as cron does: `\\%` is `%`, the first bare `%` starts stdin."""
    parts: list[str] = []
    i = 0
    while i < len(command):
        if command.startswith("\\%", i):
            parts.append("%")
            i += 2
        elif command[i] == "%":
            return "".join(parts), command[i + 1 :].replace("%", "\n")
        else:
            parts.append(command[i])
            i += 1
    return "".join(parts), ""


def test_cron_command_unescapes_percent_and_sends_the_rest_to_stdin() -> None:
    assert cron_command(r"date +\%H && cat%one%two") == ("date +%H && cat", "one\ntwo")


# --------------------------------------------------------------------------------------------
# the install, moved into tmp_path


@dataclass
class Install:
    root: Path
    places: dict[str, Path]

    def localize(self, text: str) -> str:
        """Move the install's paths in `text` into tmp_path; fail on any other system path."""
        for path in sorted(self.places, key=len, reverse=True):
            text = text.replace(path, str(self.places[path]))
        stray = re.findall(r"(?<![\w.])/(?:opt|etc|var|srv|home|root)/\S*", text)
        assert stray == [], f"a path outside the install: {stray}"
        return text

    @property
    def config(self) -> Path:
        return self.places[ETC] / "config.toml"

    @property
    def logs(self) -> Path:
        return self.places[LOGS]


@pytest.fixture
def install(tmp_path: Path) -> Install:
    """Make README's install under tmp_path, its venv's `duequeue` running this checkout."""
    places = {p: tmp_path / "sys" / p.strip("/") for p in (VENV, DATA, LOGS, ETC, TEXTFILE)}
    for place in places.values():
        place.mkdir(parents=True)
    script = places[VENV] / "bin" / "duequeue"
    script.parent.mkdir()
    # What pip writes as a console script, with this checkout first on the path: cron's empty
    # environment carries no PYTHONPATH.
    script.write_text(
        f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(ROOT)!r})\n"
        "from duequeue.cli.entrypoint import main\nsys.exit(main())\n"
    )
    script.chmod(0o755)
    return Install(tmp_path, places)


def run_job(
    install: Install, env: dict[str, str], command: str
) -> subprocess.CompletedProcess[str]:
    """Run one crontab command line as cron would: `env -i`, the crontab's variables, SHELL -c."""
    shell_text, stdin = cron_command(install.localize(command))
    assignments = [f"{k}={install.localize(v)}" for k, v in env.items()]
    return subprocess.run(
        ["env", "-i", *assignments, env.get("SHELL", "/bin/sh"), "-c", shell_text],
        input=stdin,
        cwd=install.root,
        capture_output=True,
        text=True,
        timeout=LIMIT_S,
        check=False,
    )


def stamped_lines(log: Path) -> list[tuple[datetime, str]]:
    lines = []
    for line in log.read_text().splitlines():
        match = STAMP.match(line)
        assert match, f"a log line without a time stamp: {line!r}"
        stamp = datetime.strptime(match.group(1), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        lines.append((stamp, match.group(2)))
    return lines


def whole_seconds_now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


CRON = parse_crontab(CRONTAB.read_text())
TICK = next(j for j in CRON.jobs if "duequeue tick" in j.command)
# README's step 4 makes the database as the duequeue user: `sudo -u duequeue COMMAND`.
INIT = re.search(r"sudo -u duequeue (\S+/duequeue --db \S+ init)\n", README)


def init_database(install: Install) -> None:
    """Run README's `duequeue init` (ticks refuse a missing database)."""
    assert INIT, "README's route makes the database with `duequeue init`"
    made = run_job(install, {"PATH": "/usr/bin:/bin"}, INIT.group(1))
    assert (made.returncode, made.stderr) == (0, ""), made.stderr
    assert made.stdout.endswith(": created\n")


# --------------------------------------------------------------------------------------------
# crontab.example


def test_the_crontab_agrees_with_the_install() -> None:
    assert CRON.env["SHELL"] == "/bin/sh"
    path = CRON.env["PATH"].split(":")
    assert path[0] == f"{VENV}/bin"
    assert all(p.startswith("/") for p in path), "cron does not expand ~ or relative entries"
    assert CRON.env["DUEQUEUE_DB"].startswith(f"{DATA}/")
    assert CRON.env["DUEQUEUE_CONFIG"] == CONFIG
    # Every config file the comments speak of is the one the crontab reads.
    assert set(re.findall(r"[^\s=]*config\.toml", CRONTAB.read_text())) == {CONFIG}
    assert TICK.active and TICK.schedule == "* * * * *"
    for job in CRON.jobs:
        for log in re.findall(r">> (\S+)", job.command):
            assert log.startswith(f"{LOGS}/")


def test_the_sample_settings_in_the_crontab_are_settings() -> None:
    sample = "\n".join(
        line.lstrip("#").strip()
        for line in CRONTAB.read_text().splitlines()
        if re.match(r"^#\s+\w+ = ", line)
    )
    keys = set(tomllib.loads(sample))
    assert keys and keys <= {f.name for f in fields(Settings)} - {"extra"}


def test_the_tick_job_delivers_under_crons_bare_environment_and_logs_a_time_stamped_line(
    install: Install,
) -> None:
    secret = "whsec_" + base64.b64encode(os.urandom(24)).decode()
    with SmtpSink(credentials=("dq", "s3cret")) as smtp, HttpSink() as http:
        install.config.write_text(
            f'smtp_url = "smtp://dq:s3cret@127.0.0.1:{smtp.port}"\n'
            'email_from = "reminders@example.com"\n'
            f'webhook_secret = "{secret}"\n'
        )
        install.config.chmod(0o640)
        init_database(install)
        added = run_job(
            install,
            CRON.env,
            f"duequeue add --at now --email ann@example.com --webhook {http.url('/r')} "
            "--subject rent",
        )
        assert (added.returncode, added.stdout, added.stderr) == (0, "1\n", "")

        before = whole_seconds_now()
        first = run_job(install, CRON.env, TICK.command)
        second = run_job(install, CRON.env, TICK.command)
        after = datetime.now(UTC)

        # Nothing reaches cron's mail; everything went to the log.
        assert (first.returncode, first.stdout, first.stderr) == (0, "", "")
        assert (second.returncode, second.stdout, second.stderr) == (0, "", "")
        assert len(smtp.messages) == 1 and smtp.logins == ["dq"]
        assert len(http.requests_for("/r")) == 1
    lines = stamped_lines(install.logs / "tick.log")
    assert [text.split(":")[0:2] for _, text in lines] == [
        ["tick", " claimed 1"],
        ["tick", " claimed 0"],
    ]
    assert "sent 1," in lines[0][1]
    assert all(before <= stamp <= after for stamp, _ in lines)
    assert lines[0][0] <= lines[1][0]


def test_a_tick_that_fails_is_logged_with_its_time_and_goes_to_crons_mail(
    install: Install,
) -> None:
    # No config file where the crontab says: every tick exits 1, and the log says why.
    init_database(install)
    result = run_job(install, CRON.env, TICK.command)

    [(stamp, text)] = stamped_lines(install.logs / "tick.log")
    assert text == f"duequeue: error: config file {install.config} does not exist"
    # cron mails any output: a failing tick prints one line on stderr, its time and its error.
    assert (result.returncode, result.stdout) == (0, "")
    assert result.stderr == (
        f"duequeue tick failed (exit 1) at {stamp:%Y-%m-%dT%H:%M:%SZ}: {text}\n"
    )


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file of any mode")
def test_a_config_file_the_tick_cannot_read_goes_to_crons_mail(install: Install) -> None:
    # Issue 24: the config made mode 0600 by another user; every tick failed and nobody was told.
    init_database(install)
    install.config.write_text('email_from = "reminders@example.com"\n')
    install.config.chmod(0o000)

    result = run_job(install, CRON.env, TICK.command)

    assert result.stderr.startswith("duequeue tick failed (exit 1) at ")
    assert f"config file {install.config}" in result.stderr
    assert result.stderr.count("\n") == 1


def test_a_missing_database_fails_the_tick_and_goes_to_crons_mail(install: Install) -> None:
    install.config.write_text('email_from = "reminders@example.com"\n')

    result = run_job(install, CRON.env, TICK.command)

    db = install.places[DATA] / "duequeue.db"
    assert not db.exists()
    assert f"database {db} does not exist" in result.stderr
    assert "`duequeue init` creates it" in result.stderr


def test_a_tick_that_succeeds_mails_nothing(install: Install) -> None:
    install.config.write_text('email_from = "reminders@example.com"\n')
    init_database(install)

    result = run_job(install, CRON.env, TICK.command)

    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    [(_, text)] = stamped_lines(install.logs / "tick.log")
    assert text.startswith("tick: claimed 0")


def test_a_missing_log_directory_fails_loudly_for_crons_mail(install: Install) -> None:
    install.logs.rmdir()

    result = run_job(install, CRON.env, TICK.command)

    # cron mails any output to MAILTO (or logs it to syslog when the machine has no mailer);
    # the exit status of a job it ignores.
    assert str(install.logs / "tick.log") in result.stderr


@pytest.mark.parametrize(
    "job",
    [j for j in CRON.jobs if j is not TICK],
    ids=lambda j: re.findall(r"duequeue (\w+)", j.command)[0],
)
def test_each_optional_job_works_once_uncommented(install: Install, job: Job) -> None:
    install.config.write_text('email_from = "reminders@example.com"\n')
    # Only `init` (and add, import) create the database: ticks and read-only jobs never do (a
    # typo in DUEQUEUE_DB must fail, not tick an empty queue or publish zeros).
    init_database(install)
    assert run_job(install, CRON.env, TICK.command).returncode == 0
    before = whole_seconds_now()

    result = run_job(install, CRON.env, job.command)

    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    logs = re.findall(r">> (\S+)$", install.localize(job.command))
    if logs:
        [(stamp, text)] = stamped_lines(Path(logs[0]))
        assert before <= stamp and not text.startswith("duequeue: error")
    else:
        [target] = re.findall(r"--prometheus (\S+)", install.localize(job.command))
        assert "duequeue_" in Path(target).read_text()


# --------------------------------------------------------------------------------------------
# README's route


def _cron_section() -> str:
    match = re.search(r"^## Running from cron\n(.*?)(?=^## )", README, re.S | re.M)
    assert match
    return match.group(1)


def test_the_readme_route_makes_what_the_shipped_files_use() -> None:
    section = _cron_section()
    for step in (
        f"sudo /usr/bin/python3 -m venv {VENV}",
        f"sudo {VENV}/bin/pip install .",
        "sudo useradd --system --user-group --home-dir /var/lib/duequeue "
        "--shell /usr/sbin/nologin duequeue",
        f"sudo install -d -o duequeue -g duequeue -m 0750 {DATA} {LOGS}",
        f"sudo install -m 0640 -o root -g duequeue /dev/null {CONFIG}",
        f"sudo -u duequeue {VENV}/bin/duequeue --db {CRON.env['DUEQUEUE_DB']} init",
        "sudo crontab -u duequeue crontab.example",
        "sudo cp duequeue.logrotate /etc/logrotate.d/duequeue",
        f"--db {CRON.env['DUEQUEUE_DB']} --config {CONFIG}",
    ):
        assert step in section
    # The log lines README shows are what the crontab writes.
    assert STAMP.match(section.split("\n\n")[1].strip())


# --------------------------------------------------------------------------------------------
# duequeue.service


def _unit_values(key: str) -> list[str]:
    return [
        line.split("=", 1)[1]
        for line in UNIT.read_text().splitlines()
        if line.startswith(f"{key}=")
    ]


def test_the_unit_agrees_with_the_install() -> None:
    [exec_start] = _unit_values("ExecStart")
    assert exec_start.split()[0] == f"{VENV}/bin/duequeue"
    # ProtectHome=true hides /home and /root from the service: nothing it runs may live there.
    assert not exec_start.startswith(("/home/", "/root/"))
    assert sorted(_unit_values("Environment")) == [
        f"DUEQUEUE_CONFIG={CONFIG}",
        f"DUEQUEUE_DB={CRON.env['DUEQUEUE_DB']}",
    ]
    assert _unit_values("User") == ["duequeue"]
    assert _unit_values("StateDirectory") == [DATA.rsplit("/", 1)[1]]


def _verify(tmp_path: Path, unit_text: str) -> subprocess.CompletedProcess[str]:
    """Run `systemd-analyze verify` on `unit_text` in a root holding the system's units and
    every program the unit names (the install's programs, as README puts them there)."""
    root = tmp_path / "root"
    shutil.copytree("/usr/lib/systemd/system", root / "usr/lib/systemd/system", symlinks=True)
    unit = root / "etc/systemd/system/duequeue.service"
    unit.parent.mkdir(parents=True)
    unit.write_text(unit_text)
    program = root / VENV.strip("/") / "bin/duequeue"
    program.parent.mkdir(parents=True)
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    return subprocess.run(
        ["systemd-analyze", "verify", "--man=no", "--generators=no", f"--root={root}", str(unit)],
        capture_output=True,
        text=True,
        timeout=LIMIT_S,
        check=False,
    )


@pytest.mark.skipif(
    shutil.which("systemd-analyze") is None or not Path("/usr/lib/systemd/system").is_dir(),
    reason="systemd-analyze is not installed here (CI's machine has it)",
)
def test_the_unit_passes_systemd_analyze_verify(tmp_path: Path) -> None:
    shipped = _verify(tmp_path / "shipped", UNIT.read_text())
    # The same check catches a unit whose program no README route installs.
    elsewhere = _verify(
        tmp_path / "elsewhere",
        UNIT.read_text().replace(f"{VENV}/bin/duequeue", "/usr/local/bin/duequeue"),
    )

    assert (shipped.returncode, shipped.stdout, shipped.stderr) == (0, "", "")
    assert elsewhere.returncode != 0
    assert "/usr/local/bin/duequeue is not executable" in elsewhere.stderr


@pytest.fixture
def worker(install: Install) -> Iterator["subprocess.Popen[str]"]:
    """Start the unit's ExecStart under only its Environment= lines (and systemd's PATH)."""
    install.config.write_text('email_from = "reminders@example.com"\n')
    init_database(install)
    [exec_start] = _unit_values("ExecStart")
    env = dict(v.split("=", 1) for v in _unit_values("Environment"))
    env = {k: install.localize(v) for k, v in env.items()}
    env["PATH"] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    proc = subprocess.Popen(
        install.localize(exec_start).split(),
        env=env,
        cwd=install.root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    yield proc
    if proc.poll() is None:
        proc.kill()
    proc.wait(LIMIT_S)
    assert proc.stdout and proc.stderr
    proc.stdout.close()
    proc.stderr.close()


def test_the_units_worker_ticks_with_the_units_settings_and_stops_on_sigterm(
    install: Install, worker: "subprocess.Popen[str]"
) -> None:
    assert worker.stdout
    started = worker.stdout.readline()
    ticked = worker.stdout.readline()  # the first tick runs at once

    worker.send_signal(signal.SIGTERM)

    assert worker.wait(LIMIT_S) == 0
    assert started.startswith("worker: ticking every 10s on ")
    assert started.rstrip().endswith(str(install.places[DATA] / "duequeue.db"))
    assert " tick: claimed 0" in ticked


# --------------------------------------------------------------------------------------------
# duequeue.logrotate


@pytest.mark.skipif(
    shutil.which("logrotate") is None,
    reason="logrotate is not installed here (CI's machine has it)",
)
def test_the_logrotate_stanza_rotates_the_logs_and_the_next_tick_appends_anew(
    install: Install,
) -> None:
    me = pwd.getpwuid(os.getuid()).pw_name
    group = grp.getgrgid(os.getgid()).gr_name
    # The stanza as shipped, with the install in tmp_path and this user standing in for duequeue.
    shipped = "".join(
        line for line in LOGROTATE.read_text().splitlines(keepends=True) if not line.startswith("#")
    )
    stanza = install.localize(shipped).replace("duequeue duequeue", f"{me} {group}")
    install.config.write_text('email_from = "reminders@example.com"\n')
    init_database(install)
    conf = install.root / "logrotate.conf"
    conf.write_text(stanza)
    log = install.logs / "tick.log"
    log.write_text("2027-01-05T08:00:00Z tick: claimed 0: ...\n")

    rotated = subprocess.run(
        ["logrotate", "--force", "--state", str(install.root / "state"), str(conf)],
        capture_output=True,
        text=True,
        timeout=LIMIT_S,
        check=False,
    )
    result = run_job(install, CRON.env, TICK.command)

    assert (rotated.returncode, rotated.stderr) == (0, "")
    assert (install.logs / "tick.log.1").read_text().startswith("2027-01-05T08:00:00Z tick:")
    assert log.stat().st_mode & 0o777 == 0o640
    assert result.returncode == 0
    [(_, text)] = stamped_lines(log)  # the tick after the rotation starts the new file
    assert text.startswith("tick: claimed 0")
