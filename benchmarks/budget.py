"""The instruction budget (issue 34): what the hot paths cost in instructions, held in CI.

    python benchmarks/budget.py            # measure and print the figures
    python benchmarks/budget.py --check    # measure; exit 1 with one line per figure over budget
    python benchmarks/budget.py --update   # measure; write the figures into benchmarks/budget.toml
    python benchmarks/budget.py --update --only empty  # the empty tick's alone; the rest kept
    python benchmarks/budget.py --repeat 5 # measure five times; print each run and the spread

Every figure is counted by `valgrind --tool=callgrind` (the instructions a whole process ran,
every thread included): load on a shared machine slows a process but does not change what it
executes. The figures:

- `tick_per_delivery`: instructions a delivered webhook adds to a `duequeue tick`: a tick of
  LARGE due one-shot webhooks minus one of SMALL, over LARGE - SMALL. Beside it `bare_per_post`,
  a default `aiohttp.ClientSession` (benchmarks/bare_http.py) posting the same numbers to the
  same loopback sink, measured the same way. The sink is its own process, not measured.
- `empty_tick`: a whole `duequeue tick` with 1,000 rows, none due (cron's common case), beside
  `python -c "import typer, apsw"` (`import_base`).
- `import_per_line`: instructions a line adds to `duequeue import` (two file sizes again).

What would make the counts differ from run to run is pinned: PYTHONHASHSEED, the environment
(no config file, the same variables), the rows' ids and times, the tick's clock (the wall clock
read by `duequeue.api.queue` is a fixed instant: see _DRIVER), the commit helper (off: its
work would leave the measured process at a moment that depends on timing), the group commit's
time window (the batches close by size alone) and the bytecode (compiled before measuring).
BENCHMARKS.md ("The instruction budget") has the spread that remains and why the tolerances are
what they are.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

if __package__ in (None, ""):  # run as `python benchmarks/budget.py`: find the checkout
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import ROOT, SECRET, compile_all, seed

BUDGET_FILE = ROOT / "benchmarks" / "budget.toml"
# Sizes of the two ticks (and bare clients) whose difference is the per-delivery figure: 200 and
# 600, not issue 34's 1,000 and 3,000, to keep CI's cost to minutes (a fifth of the instructions
# to run under callgrind); the difference repeats as well (BENCHMARKS.md).
DELIVERY_SIZES = (200, 600)
# Sizes of the two imports whose difference is the per-line figure.
IMPORT_SIZES = (1_000, 3_000)
CONCURRENCY = 64  # duequeue's default DUEQUEUE_CONCURRENCY, and the bare client's

# Each figure: what it is. Budgeted figures are checked; the baselines are recorded beside them.
CHECKED = {
    "tick_per_delivery": "instructions per webhook delivered by `duequeue tick`",
    "empty_tick": "instructions of a whole `duequeue tick` with nothing due",
    "import_per_line": "instructions per line of `duequeue import`",
}
BASELINES = {
    "bare_per_post": "instructions per POST of a default aiohttp.ClientSession",
    "import_base": 'instructions of `python -c "import typer, apsw"`',
}
# Which baseline each checked figure is shown against (as a ratio), if any.
AGAINST = {"tick_per_delivery": "bare_per_post", "empty_tick": "import_base"}

# `duequeue tick` as cron runs it, but with the wall clock fixed (the CLI takes no `now`) and the
# group commit's batches closed by size alone (its 5 ms window closes them by time). The rows are
# due long before FIXED_NOW.
FIXED_NOW_MS = 1_800_000_000_000
_DRIVER = f"""
import sys
from datetime import UTC, datetime
from duequeue.api import queue
from duequeue.engine import commit
fixed = datetime.fromtimestamp({FIXED_NOW_MS} / 1000, UTC)
queue._now = lambda: fixed
queue._clock_ms = lambda: {FIXED_NOW_MS}
commit.Committer.__init__.__kwdefaults__["window_s"] = 3600.0
from duequeue.cli.entrypoint import main
sys.argv[0] = "duequeue"
main()
"""

# Issue 34's own measure (`--as-issue`): the same driver, but the tick at its defaults (the
# commit helper from 1,000 claimed rows, the group commit's 5 ms window), the sizes 1,000 and
# 3,000; only the tick budget, the channel timeout and the busy timeout are raised, or
# callgrind's slowdown would end the tick (or stall its sends) before its rows are sent. Not
# budgeted: the helper's share and the window's batches depend on timing (see the module
# docstring). The helper's process is counted with the tick's (--trace-children).
ISSUE_SIZES = (1_000, 3_000)
_ISSUE_DRIVER = _DRIVER.replace(
    'commit.Committer.__init__.__kwdefaults__["window_s"] = 3600.0\n', ""
)


# -- the budget file --------------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    """One budgeted figure: its budget and how far above it a measurement may go (a fraction)."""

    budget: float
    tolerance: float

    @property
    def limit(self) -> float:
        """Return the highest measurement that passes."""
        return self.budget * (1 + self.tolerance)


@dataclass(frozen=True)
class Budget:
    """The budget file: each checked figure's Entry, and the baselines measured with them."""

    entries: Mapping[str, Entry]
    baselines: Mapping[str, float]
    note: str = ""


class BudgetFileError(ValueError):
    """The budget file is missing a figure or holds a value that is not one."""


def parse_budget(text: str) -> Budget:
    """Parse the budget file's text; raise BudgetFileError naming what is wrong."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise BudgetFileError(f"not TOML: {exc}") from exc
    entries = {}
    for name in CHECKED:
        table = data.get(name)
        if not isinstance(table, dict):
            raise BudgetFileError(f"no [{name}] table")
        budget, tolerance = table.get("budget"), table.get("tolerance")
        if not isinstance(budget, int | float) or isinstance(budget, bool) or budget <= 0:
            raise BudgetFileError(f"[{name}] budget must be a positive number, not {budget!r}")
        if not isinstance(tolerance, int | float) or isinstance(tolerance, bool):
            tolerance = -1
        if not 0 <= tolerance < 1:
            raise BudgetFileError(
                f"[{name}] tolerance must be a fraction from 0 to 1, not {table.get('tolerance')!r}"
            )
        entries[name] = Entry(float(budget), float(tolerance))
    baselines = data.get("baselines", {})
    if not isinstance(baselines, dict) or not all(
        isinstance(v, int | float) and not isinstance(v, bool) for v in baselines.values()
    ):
        raise BudgetFileError("[baselines] must map names to numbers")
    note = data.get("note", "")
    return Budget(entries, {k: float(v) for k, v in baselines.items()}, str(note))


def render_budget(budget: Budget) -> str:
    """Return the budget file's text for `budget` (parse_budget reads it back unchanged)."""
    lines = [
        "# The instruction budget: `python benchmarks/budget.py --check` (in .ci/run) fails when a",
        "# figure measures above budget * (1 + tolerance). Lower a budget with `--update` in the",
        "# commit that makes the code cheaper; the tolerances are the spread of five runs, kept by",
        '# --update (BENCHMARKS.md, "The instruction budget").',
        "",
    ]
    if budget.note:
        lines += [f"note = {_toml_string(budget.note)}", ""]
    for name, entry in budget.entries.items():
        lines += [
            f"[{name}]  # {CHECKED.get(name, '')}",
            f"budget = {_toml_number(entry.budget)}",
            f"tolerance = {entry.tolerance:g}",
            "",
        ]
    lines.append("[baselines]  # measured with them, not checked")
    lines += [f"{name} = {_toml_number(value)}" for name, value in budget.baselines.items()]
    return "\n".join(lines) + "\n"


def _toml_number(value: float) -> str:
    return str(round(value)) if value >= 1000 else f"{value:.1f}"


def _toml_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


@dataclass(frozen=True)
class Exceeded:
    """A figure measured above its budget's limit."""

    name: str
    budget: float
    measured: float
    tolerance: float

    @property
    def ratio(self) -> float:
        """Return measured / budget."""
        return self.measured / self.budget

    def line(self) -> str:
        """Return the one line --check prints for it."""
        return (
            f"budget exceeded: {self.name}: budget {self.budget:,.0f}, measured "
            f"{self.measured:,.0f}, ratio {self.ratio:.3f} (allowed up to {1 + self.tolerance:.3f})"
        )


def compare(budget: Budget, measured: Mapping[str, float]) -> list[Exceeded]:
    """Return the checked figures measured above budget * (1 + tolerance), in the file's order.

    A figure the file budgets but the measurement lacks is an error, not a pass."""
    missing = [name for name in budget.entries if name not in measured]
    if missing:
        raise BudgetFileError("not measured: " + ", ".join(missing))
    return [
        Exceeded(name, entry.budget, measured[name], entry.tolerance)
        for name, entry in budget.entries.items()
        if measured[name] > entry.limit
    ]


def updated(old: Budget | None, measured: Mapping[str, float], note: str) -> Budget:
    """Return the budget set to `measured`, keeping the old tolerances (default 2%).

    A figure not measured (`--update --only empty`) keeps the old budget, and so does a baseline
    not measured."""
    entries = {}
    for name in CHECKED:
        if name in measured:
            entries[name] = Entry(measured[name], old.entries[name].tolerance if old else 0.02)
        elif old is not None and name in old.entries:
            entries[name] = old.entries[name]
        else:
            raise BudgetFileError(f"{name} is neither measured nor in the budget file")
    kept = old.baselines if old is not None else {}
    baselines = {
        name: measured[name] if name in measured else kept[name]
        for name in BASELINES
        if name in measured or name in kept
    }
    return Budget(entries, baselines, note)


# -- measuring --------------------------------------------------------------------------------


def _valgrind() -> str:
    found = shutil.which("valgrind")
    if found is None:
        raise SystemExit("budget: error: valgrind is not installed (apt-get install valgrind)")
    return found


@dataclass(frozen=True)
class Counted:
    """One process run under callgrind: the instructions it executed, and what it printed."""

    instructions: int
    out: str


def instructions(
    args: Sequence[str], env: Mapping[str, str], workdir: Path, *, children: bool = False
) -> Counted:
    """Run `args` under callgrind; return the instructions it executed (all its threads, and
    with `children`, every process it started as well: the commit helper).

    The command must succeed: a run that fails measures nothing."""
    trace = ["--trace-children=yes"] if children else []
    done = subprocess.run(
        [
            _valgrind(),
            "--tool=callgrind",
            *trace,
            f"--callgrind-out-file={workdir / 'callgrind.out.%p'}",
            *args,
        ],
        env=env,
        cwd=workdir,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed under callgrind:\n{done.stderr[-3000:]}")
    total, outs = 0, sorted(workdir.glob("callgrind.out.*"))
    for out in outs:
        match = re.search(r"^totals:\s*(\d+)", out.read_text(), re.M)
        out.unlink()
        if match is None:
            raise RuntimeError("callgrind wrote no totals")
        total += int(match.group(1))
    if not outs:
        raise RuntimeError("callgrind wrote no totals")
    return Counted(total, done.stdout)


def fixed_env(workdir: Path, **extra: str) -> dict[str, str]:
    """Return the same small environment for every measured process: the checkout on the path,
    a fixed hash seed, no config file, no stray DUEQUEUE_* setting."""
    env = {
        "PATH": "/usr/bin:/bin",  # the measured commands are absolute paths
        "HOME": str(workdir),
        "LANG": "C.UTF-8",
        # The checkout through a link of the same length wherever it was cloned: every import
        # joins, stats and hashes paths under it, and a CI clone's longer path alone cost the
        # empty tick 0.27% more instructions (a fresh clone at /tmp/bcheck/duequeue-fresh-clone
        # against /work/wt/budget), more than the spread the budget allows.
        "PYTHONPATH": str(_checkout(workdir.parent)),
        "PYTHONHASHSEED": "0",
        "XDG_CONFIG_HOME": str(workdir / "no-config-here"),
        "XDG_DATA_HOME": str(workdir / "no-data-here"),
    }
    env.update(extra)
    return env


def _checkout(folder: Path) -> Path:
    """Return a link to this checkout in `folder` (the run's temporary folder, whose name has
    the same length every run), made on first use."""
    link = folder / "src"
    if not link.is_symlink():
        with contextlib.suppress(FileExistsError):  # the other lane made it a moment ago
            link.symlink_to(ROOT, target_is_directory=True)
    return link


def _tick_env(workdir: Path, db: Path) -> dict[str, str]:
    return fixed_env(
        workdir,
        DUEQUEUE_DB=str(db),
        DUEQUEUE_WEBHOOK_SECRET=SECRET,
        DUEQUEUE_CONCURRENCY=str(CONCURRENCY),
        DUEQUEUE_TICK_BUDGET="3600",  # callgrind is ~50x slower: the whole batch, one tick
        DUEQUEUE_CHANNEL_TIMEOUT="600",  # ... and no send of it timed out
        DUEQUEUE_COMMIT_HELPER_ROWS="1000000000",  # commits and claims stay in this process
        # A commit batch slower than the busy timeout (+1 s) stalls the tick's sends: under
        # callgrind on a loaded machine one can be, and the tick would stop early.
        DUEQUEUE_BUSY_TIMEOUT="600",
        DUEQUEUE_CLOCK="host",
    )


# One measured process: it runs in the folder given, and returns the instructions it executed.
Job = Callable[[Path], int]


def _issue_env(workdir: Path, db: Path) -> dict[str, str]:
    return fixed_env(
        workdir,
        DUEQUEUE_DB=str(db),
        DUEQUEUE_WEBHOOK_SECRET=SECRET,
        DUEQUEUE_TICK_BUDGET="3600",
        DUEQUEUE_CHANNEL_TIMEOUT="600",
        DUEQUEUE_BUSY_TIMEOUT="600",  # a batch unanswered past it (+1 s) stops the sends
    )


def _tick_job(url: str, n: int, as_issue: bool = False) -> Job:
    """A `duequeue tick` delivering `n` due webhooks to `url`, every one of them sent."""

    def run(workdir: Path) -> int:
        db = workdir / "tick.db"
        seed(db, n, webhook=url)
        driver, env = (_ISSUE_DRIVER, _issue_env) if as_issue else (_DRIVER, _tick_env)
        counted = instructions(
            [sys.executable, "-c", driver, "tick", "--json"],
            env(workdir, db),
            workdir,
            children=as_issue,
        )
        sent = json.loads(counted.out)["deliveries_sent"]
        if sent != n:
            raise RuntimeError(f"a tick of {n} due webhooks sent {sent}: {counted.out}")
        return counted.instructions

    return run


def _bare_job(url: str, n: int) -> Job:
    """The bare aiohttp client posting `n` bodies to `url` (it fails unless all got a 2xx)."""

    def run(workdir: Path) -> int:
        args = [sys.executable, "-m", "benchmarks.bare_http", url, str(n), str(CONCURRENCY), "3600"]
        return instructions(args, fixed_env(workdir), workdir).instructions

    return run


def _empty_job(workdir: Path) -> int:
    """`duequeue tick` as cron runs it every minute, with 1,000 rows none due.

    A first tick runs unmeasured: a queue's first tick (and the first after a tz data update)
    records the tz release and its zones' digests, a pass that loads zoneinfo and happens once,
    not every minute (BENCHMARKS.md, "Issue 34: the empty tick, step by step")."""
    db = workdir / "empty.db"
    seed(db, 0, pending=1000, webhook="http://127.0.0.1:9/hook")
    args = [sys.executable, "-m", "duequeue", "tick"]
    env = fixed_env(workdir, DUEQUEUE_DB=str(db))
    subprocess.run(args, env=env, cwd=workdir, capture_output=True, check=True)
    return instructions(args, env, workdir).instructions


def _base_job(workdir: Path) -> int:
    """The imports an empty tick cannot do without."""
    args = [sys.executable, "-c", "import typer, apsw"]
    return instructions(args, fixed_env(workdir), workdir).instructions


def _import_job(n: int) -> Job:
    """`duequeue import` of `n` lines into a new database."""

    def run(workdir: Path) -> int:
        source, db = workdir / "lines.jsonl", workdir / "import.db"
        write_lines(source, n)
        args = [sys.executable, "-c", _DRIVER, "import", str(source)]
        return instructions(args, fixed_env(workdir, DUEQUEUE_DB=str(db)), workdir).instructions

    return run


def write_lines(path: Path, n: int) -> None:
    """Write `n` import lines: a one-shot webhook each, in a zone, with a key."""
    with path.open("w", encoding="utf-8") as f:
        for i in range(n):
            line = {
                "at": "2030-01-05T09:00",
                "tz": "Europe/Berlin",
                "webhooks": [f"https://hooks.example.com/r/{i % 100}"],
                "subject": f"Reminder {i}",
                "key": f"bench-{i:06d}",
            }
            f.write(json.dumps(line) + "\n")


def per_unit(small: int, large: int, sizes: Sequence[int]) -> float:
    """Return the instructions one unit adds: the difference of two sizes over theirs."""
    return (large - small) / (sizes[1] - sizes[0])


PARTS = ("delivery", "empty", "import")


def measure(
    parts: Sequence[str] = PARTS,
    delivery_sizes: Sequence[int] = DELIVERY_SIZES,
    parallel: int = 2,
    show: Callable[[str], None] | None = None,
    as_issue: bool = False,
) -> dict[str, float]:
    """Measure the figures of `parts` once, `parallel` processes at a time (the counts do not
    depend on what runs beside them), each in a folder of its own."""
    from benchmarks.sinks import sink_process

    with (
        tempfile.TemporaryDirectory(prefix="duequeue-budget-") as tmp,
        contextlib.ExitStack() as stack,
    ):
        jobs: dict[str, Job] = {}  # the longest first, so that the two lanes end together
        if "delivery" in parts:
            ports = stack.enter_context(sink_process("http_sink", "1"))
            url = f"http://127.0.0.1:{ports[0]}/hook"
            small, large = delivery_sizes
            jobs |= {
                "tick_large": _tick_job(url, large, as_issue),
                "bare_large": _bare_job(url, large),
            }
        if "import" in parts:
            jobs["import_large"] = _import_job(IMPORT_SIZES[1])
        if "delivery" in parts:
            jobs |= {
                "tick_small": _tick_job(url, small, as_issue),
                "bare_small": _bare_job(url, small),
            }
        if "import" in parts:
            jobs["import_small"] = _import_job(IMPORT_SIZES[0])
        if "empty" in parts:
            jobs |= {"empty_tick": _empty_job, "import_base": _base_job}
        counts = _run(jobs, Path(tmp), parallel)
    if show is not None:
        for name, count in counts.items():
            show(f"  {name}: {count:,} instructions")
    figures: dict[str, float] = {}
    if "delivery" in parts:
        for figure, job in (("tick_per_delivery", "tick"), ("bare_per_post", "bare")):
            figures[figure] = per_unit(
                counts[f"{job}_small"], counts[f"{job}_large"], delivery_sizes
            )
    if "empty" in parts:
        figures |= {"empty_tick": counts["empty_tick"], "import_base": counts["import_base"]}
    if "import" in parts:
        figures["import_per_line"] = per_unit(
            counts["import_small"], counts["import_large"], IMPORT_SIZES
        )
    return figures


def _run(jobs: Mapping[str, Job], workdir: Path, parallel: int) -> dict[str, int]:
    def one(name: str) -> int:
        folder = workdir / name
        folder.mkdir()
        try:
            return jobs[name](folder)
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    with ThreadPoolExecutor(parallel) as pool:
        futures = {name: pool.submit(one, name) for name in jobs}
        return {name: future.result() for name, future in futures.items()}


# -- the command ------------------------------------------------------------------------------


def _show(figures: Mapping[str, float]) -> None:
    for name, value in figures.items():
        against = AGAINST.get(name, "")
        ratio = f" ({value / figures[against]:.3f}x {against})" if against in figures else ""
        print(f"{name}: {value:,.0f}{ratio}", flush=True)


def _spread(runs: Sequence[Mapping[str, float]]) -> None:
    for name in runs[0]:
        values = [run[name] for run in runs]
        low, high = min(values), max(values)
        print(
            f"{name}: median {statistics.median(values):,.0f}, min {low:,.0f}, max {high:,.0f}, "
            f"spread {(high - low) / low:.2%}",
            flush=True,
        )


def _commit() -> str:
    done = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    )
    return done.stdout.strip() or "unknown"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python benchmarks/budget.py",
        description="Measure the instruction budget's figures under callgrind.",
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="exit 1 if a figure is over budget")
    mode.add_argument("--update", action="store_true", help=f"write the figures to {BUDGET_FILE}")
    parser.add_argument("--repeat", type=int, default=1, help="measure N times, show the spread")
    parser.add_argument("--only", choices=sorted(PARTS), nargs="+", help="measure these parts")
    parser.add_argument("--file", type=Path, default=BUDGET_FILE, help="the budget file")
    parser.add_argument(
        "--counts", action="store_true", help="print each measured process's instructions too"
    )
    parser.add_argument(
        "--parallel", type=int, default=2, help="processes measured at once (default 2)"
    )
    parser.add_argument(
        "--as-issue",
        action="store_true",
        help="tick_per_delivery as issue 34 measured it: the tick at its defaults (commit "
        "helper, 5 ms window), 1,000 and 3,000 rows (not budgeted)",
    )
    parser.add_argument(
        "--delivery-sizes",
        type=int,
        nargs=2,
        metavar=("SMALL", "LARGE"),
        help="the two tick sizes (to try others; the budget is measured at the defaults)",
    )
    args = parser.parse_args(argv)
    if args.check and (args.only or args.repeat != 1 or args.delivery_sizes or args.as_issue):
        parser.error("--check measures every figure once")
    if args.update and (args.repeat != 1 or args.delivery_sizes or args.as_issue):
        parser.error("--update measures once, at the default sizes (--only: those parts)")
    budget = None
    if args.check or (args.update and args.file.exists()):
        try:
            budget = parse_budget(args.file.read_text(encoding="utf-8"))
        except (OSError, BudgetFileError) as exc:
            print(f"budget: error: {args.file}: {exc}", file=sys.stderr)
            return 2
    compile_all()
    runs = []
    for _ in range(args.repeat):
        try:
            figures = measure(
                args.only or PARTS,
                args.delivery_sizes or (ISSUE_SIZES if args.as_issue else DELIVERY_SIZES),
                args.parallel,
                print if args.counts else None,
                args.as_issue,
            )
        except RuntimeError as exc:  # a measured process failed: nothing was measured
            print(f"budget: error: {exc}", file=sys.stderr)
            return 2
        runs.append(figures)
        _show(figures)
    if args.repeat > 1:
        _spread(runs)
    figures = runs[0]
    if args.update:
        note = f"measured at {_commit()}"
        if args.only and budget is not None:
            note = f"{', '.join(sorted(args.only))} measured at {_commit()}; {budget.note}"
        try:
            new = updated(budget, figures, note)
        except BudgetFileError as exc:
            print(f"budget: error: {exc}", file=sys.stderr)
            return 2
        args.file.write_text(render_budget(new), encoding="utf-8")
        print(f"budget: wrote {args.file}")
    if args.check:
        assert budget is not None
        over = compare(budget, figures)
        for exceeded in over:
            print(exceeded.line(), file=sys.stderr)
        if over:
            return 1
        print("budget: every figure within its budget")
    return 0


if __name__ == "__main__":
    sys.exit(main())
