"""The command line's frame around typer: help text for people and usage errors on one line.

typer (0.29 vendors click as typer._click) prints a four-line usage block for a mistyped flag, a
pydantic sentence for a bad number, and type labels such as `<list[int]>` in help. Every other
duequeue error is one line, `duequeue: error: ...`, with exit code 2 for bad input; these classes
make the parser's own errors and help read the same way.
"""

import sys
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import typer
from typer._click import exceptions as click_errors
from typer._click.core import Context
from typer._click.formatting import HelpFormatter
from typer.core import TyperCommand, TyperGroup

import duequeue
from duequeue.cli.report import report
from duequeue.errors import DuequeueError

PROG = "duequeue"
F = TypeVar("F", bound=Callable[..., Any])


class Command(TyperCommand):
    """A command whose help names arguments by their metavar, without Python types, and that
    takes the root's --db and --config after its name too (`inspect --db e.db`)."""

    def parse_args(self, ctx: Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, _take_global_options(self, ctx, args))

    def collect_usage_pieces(self, ctx: Context) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if param.param_type_name == "argument":
                name = _argument_name(param)
                pieces.append(name if param.required else f"[{name}]")
        return pieces

    def format_options(self, ctx: Context, formatter: HelpFormatter) -> None:
        args, opts = [], []
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            if param.param_type_name == "argument":
                args.append((_argument_name(param), record[1]))
            else:
                opts.append(record)
        if args:
            with formatter.section("Arguments"):
                formatter.write_dl(args)
        if opts:
            with formatter.section("Options"):
                formatter.write_dl(opts)


# The root's options a command also takes after its name, as users type them (`duequeue
# inspect --db e.db`), and as fastargs.py takes them for cron's plain tick.
GLOBAL_OPTIONS = ("--db", "--config")


def _take_global_options(command: Any, ctx: Context, args: list[str]) -> list[str]:
    """Set the root's --db / --config from a command's own arguments; return the rest.

    The command's own options that take a value keep it, so `--subject --db` stays a subject;
    nothing after `--` is an option.
    """
    valued = {
        name
        for p in command.params
        if p.param_type_name == "option" and not getattr(p, "is_flag", False)
        for name in p.opts
    }
    root = ctx.find_root().params
    rest: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        name, eq, value = arg.partition("=")
        if arg == "--":
            rest += args[i:]
            break
        if name in GLOBAL_OPTIONS:
            if not eq:
                if i + 1 >= len(args):
                    raise click_errors.BadOptionUsage(name, f"{name} requires an argument", ctx)
                value = args[i + 1]
                i += 1
            root[name.removeprefix("--")] = value
        else:
            rest.append(arg)
            if arg in valued and i + 1 < len(args):
                rest.append(args[i + 1])
                i += 1
        i += 1
    return rest


def _argument_name(param: Any) -> str:
    name = str(param.metavar or param.name).upper()
    return f"{name}..." if param.nargs != 1 else name


class Group(TyperGroup):
    """The top-level command: whole command descriptions, and one-line usage errors."""

    def format_commands(self, ctx: Context, formatter: HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            cmd = self.get_command(ctx, name)
            if cmd is None or cmd.hidden:
                continue
            # The first paragraph whole, wrapped by the formatter, never cut with "...".
            first = (cmd.help or "").strip().split("\n\n", 1)[0]
            rows.append((name, " ".join(first.split())))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def invoke(self, ctx: Context) -> Any:
        # The one place a command's DuequeueError becomes a line on stderr and an exit code.
        try:
            return super().invoke(ctx)
        except DuequeueError as exc:
            raise typer.Exit(report(exc)) from exc

    def main(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        prog_name = prog_name or PROG  # not "python -m duequeue" in usage lines
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        try:
            code = super().main(args, prog_name, complete_var, False, **extra)
        except click_errors.UsageError as exc:
            typer.echo(f"{PROG}: error: {usage_message(exc)}", err=True)
            sys.exit(2)
        except click_errors.ClickException as exc:
            typer.echo(f"{PROG}: error: {_one_line(exc.format_message())}", err=True)
            sys.exit(exc.exit_code)
        except typer.Abort:
            typer.echo(f"{PROG}: aborted", err=True)
            sys.exit(1)
        # Without standalone mode a command's typer.Exit comes back as its code; a command
        # that returns normally returns None.
        sys.exit(code if isinstance(code, int) else 0)


def usage_message(exc: click_errors.UsageError) -> str:
    """Return one line for a parser error, naming the flag or argument at fault."""
    ctx = exc.ctx
    see = f"; see {ctx.command_path} --help" if ctx is not None else ""
    if isinstance(exc, click_errors.NoSuchOption):
        near = [name for name in exc.possibilities or () if name != "--help"]
        guess = f" (did you mean {' or '.join(sorted(near))}?)" if near else ""
        return f"{exc.option_name}: no such option{guess}{see}"
    if isinstance(exc, click_errors.MissingParameter) and exc.param is not None:
        return f"{_param_name(exc.param)}: required{see}"
    if isinstance(exc, click_errors.BadParameter) and exc.param is not None:
        return f"{_param_name(exc.param)}: {_bad_value(exc)}"
    if isinstance(exc, click_errors.BadOptionUsage):
        needs = "requires an argument" in exc.message
        return f"{exc.option_name}: {'needs a value' if needs else _lower(exc.message)}{see}"
    return f"{_lower(exc.format_message())}{see}"


def _param_name(param: Any) -> str:
    if param.param_type_name == "argument":
        return _argument_name(param).removesuffix("...")
    return str(param.opts[0])


def _bad_value(exc: click_errors.BadParameter) -> str:
    cause = exc.__cause__
    errors = getattr(cause, "errors", None)
    if callable(errors):  # a pydantic ValidationError from typer's coercion
        first = errors()[0]
        got = first.get("input")
        kind, bounds = first.get("type"), first.get("ctx") or {}
        if kind in ("int_parsing", "int_from_float", "int_type"):
            return f"{got!r} is not a whole number"
        if kind == "greater_than_equal":
            return f"must be at least {bounds.get('ge')}, not {got}"
        if kind == "less_than_equal":
            return f"must be at most {bounds.get('le')}, not {got}"
        return f"{got!r}: {_lower(first.get('msg', ''))}"
    return _lower(exc.message)


def _lower(text: str) -> str:
    line = _one_line(text).rstrip(".")
    return line[:1].lower() + line[1:]


def _one_line(text: str) -> str:
    return " ".join(text.split())


class Typer(typer.Typer):
    """A typer app whose commands default to `Command` (help without Python types)."""

    def command(self, *args: Any, **kwargs: Any) -> Callable[[F], F]:
        kwargs.setdefault("cls", Command)
        decorator: Callable[[F], F] = super().command(*args, **kwargs)
        return decorator


def print_version(value: bool) -> None:
    """Print the version and stop (the eager --version option's callback)."""
    if value:
        typer.echo(f"{PROG} {duequeue.__version__}")
        raise typer.Exit()
