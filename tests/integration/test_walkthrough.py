"""docs/walkthrough.md's walkthrough, run as written: every `$ duequeue ...` line it shows runs, and
the output under it is what that run prints, so the page cannot drift from the program.

The commands and the settings come out of the page. The stand-ins: `duequeue` is the CLI run
in-process on a clock the test moves (a person's pace: a second between commands, 12 s
between the repeated ticks the page asks for), on an 80-column terminal
(DUEQUEUE_FORCE_TTY=80) except where the page pipes; the page's servers are real ones on
loopback: an SMTP server for port 2525, an HTTP receiver for 8099 and, from where the page says
to start it, one for 8098 (until then nothing listens there); when 8098 is taken, another free
port of four digits stands in for it, so every table is as wide as the page's. `...` in a line
of the page stands for any text.

After a change to what the commands print, rewrite the page's outputs from a run:
    WRITE_WALKTHROUGH=1 python -m pytest tests/integration/test_walkthrough.py
(lines that still match, `...` and all, are kept), then read the diff.
"""

import contextlib
import os
import random
import re
import shlex
import socket
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from tests.clirunner import Cli
from tests.paths import ROOT
from tests.servers import HttpSink, SmtpSink

PAGE = ROOT / "docs" / "walkthrough.md"
HEADING = "## Walkthrough: a delivered reminder, then a failure found, fixed and retried\n"
T0 = datetime(2026, 11, 26, 17, 45, 45, tzinfo=UTC)  # the first command comes a second later
VENV = "python -m venv ~/dq && ~/dq/bin/pip install . && export PATH=~/dq/bin:$PATH"
AGAIN = "# and again after 10 s, and again after 10 more"
START_8098 = "Start the receiver on port 8098"
WRITE = "WRITE_WALKTHROUGH"


@dataclass
class Step:
    """One `$ ` line of the page, what the page shows under it, and where that is."""

    command: str  # as typed, continuation lines joined
    shown: list[str]
    first: int  # the page's line index of the first output line
    after_prose: str = ""  # the prose since the previous step
    printed: list[str] = field(default_factory=list)


def _steps(lines: list[str]) -> tuple[list[str], list[Step]]:
    """Return the section's setup lines (its first code block) and its steps, in order."""
    start = lines.index(HEADING.rstrip("\n")) + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("## ")), len(lines))
    setup: list[str] = []
    steps: list[Step] = []
    prose = ""
    i = start
    while i < end:
        line = lines[i]
        if not line.startswith("    "):
            prose += line + "\n"
            i += 1
            continue
        if not line.startswith("    $ "):
            if steps and not prose.strip():
                steps[-1].shown.append(line[4:])
            else:
                setup.append(line[4:])
            i += 1
            # A blank line inside a code block belongs to it when the block goes on after it.
            while i < end and lines[i] == "" and i + 1 < end and lines[i + 1].startswith("    "):
                if steps and not prose.strip():
                    steps[-1].shown.append("")
                i += 1
            continue
        command = line[6:]
        while command.endswith("\\"):
            i += 1
            command = command[:-1] + lines[i].strip()
        steps.append(Step(command, [], i + 1, prose))
        prose = ""
        i += 1
        while i < end and lines[i] == "" and i + 1 < end and lines[i + 1].startswith("    "):
            i += 1  # a blank line between two commands of one block
    return setup, steps


def _matches(shown: str, printed: str) -> bool:
    """Return whether a page line says what a printed line does, `...` standing for any text."""
    pattern = ".*".join(re.escape(part) for part in shown.split("..."))
    return re.fullmatch(pattern, printed) is not None


def _four_digit_port() -> int:
    """Return 8098 if it is free, else another free port of four digits (as wide)."""
    for port in [8098, *random.sample(range(1024, 10_000), 200)]:
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise AssertionError("no free port of four digits on 127.0.0.1")


def _cut(text: str, fields: list[int]) -> list[str]:
    return ["\t".join(line.split("\t")[f - 1] for f in fields) for line in text.splitlines()]


def _run(steps: list[Step], setup: list[str], db_path: Path) -> None:
    """Run every step, the way the page says, recording what each printed."""
    down = _four_digit_port()
    standup = HttpSink(port=down)  # nothing listens on it until the page says to start it
    with SmtpSink() as smtp, HttpSink() as rent, contextlib.closing(standup):
        env: dict[str, str] = {}
        for line in setup[1:]:
            words = shlex.split(line, comments=True)
            assert words[0] == "export", line
            env.update(w.partition("=")[::2] for w in words[1:])
        assert env.pop("DUEQUEUE_DB") == "~/dq/dq.db"
        assert env.pop("DUEQUEUE_SMTP_URL") == "smtp://127.0.0.1:2525"
        env["DUEQUEUE_SMTP_URL"] = smtp.url
        cli = Cli(db_path, T0, env)
        ports = {"8099": str(rent.port), "8098": str(down)}

        for step in steps:
            if START_8098 in step.after_prose:
                standup.start()
            words = shlex.split(step.command, comments=True)
            repeat = 3 if step.command.endswith(AGAIN) else 1
            piped = "|" in words
            if piped:
                words, rest = words[: words.index("|")], words[words.index("|") + 1 :]
                assert rest[:1] == ["cut"] and rest[1].startswith("-f"), step.command
            assert words[0] == "duequeue", step.command
            args = [re.sub(r"127\.0\.0\.1:(809[89])", lambda m: f"127.0.0.1:{ports[m[1]]}", w)
                    for w in words[1:]]  # fmt: skip
            for n in range(repeat):
                cli.advance(seconds=12 if n else 1)
                r = cli(*args, env={} if piped else {"DUEQUEUE_FORCE_TTY": "80"})
                assert r.code == 0, (step.command, r.err)
                out = r.out.replace(str(db_path), "~/dq/dq.db")  # as the page names it
                out = out.replace(f"127.0.0.1:{down}/", "127.0.0.1:8098/")
                out = out.replace(f"127.0.0.1:{rent.port}/", "127.0.0.1:8099/")
                if piped:
                    step.printed += _cut(out, [int(f) for f in rest[1][2:].split(",")])
                else:
                    step.printed += out.splitlines()

        # What the page says the servers got: the mail, the POST to /rent, and after the
        # retry one POST to /standup (the failed attempts never reached it).
        (mail,) = smtp.messages
        assert mail["Subject"] == "Pay rent"
        assert [q.method for q in rent.requests_for("/rent")] == ["POST"]
        assert len(standup.requests_for("/standup")) == 1


def _merged(step: Step) -> list[str]:
    """Return the page's lines where they still say what was printed, else the printed ones."""
    if len(step.shown) == len(step.printed) and all(
        _matches(s, p) for s, p in zip(step.shown, step.printed, strict=True)
    ):
        return step.shown
    return [s if _matches(s, p) else p for s, p in zip(step.shown, step.printed, strict=False)] + (
        step.printed[len(step.shown) :]
    )


def test_the_walkthrough_shows_what_a_run_of_it_prints(db_path: Path) -> None:
    lines = PAGE.read_text(encoding="utf-8").splitlines()
    setup, steps = _steps(lines)
    assert setup[0] == VENV  # checked, not run: this checkout is the code under test
    assert len(steps) >= 12
    assert any(s.command.endswith(AGAIN) for s in steps)
    assert any(START_8098 in s.after_prose for s in steps)

    _run(steps, setup, db_path)

    if os.environ.get(WRITE):
        for step in reversed(steps):
            lines[step.first : step.first + len(step.shown)] = [
                f"    {line}".rstrip() for line in _merged(step)
            ]
        PAGE.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert [(s.command, _merged(s)) for s in steps] == [(s.command, s.shown) for s in steps]
