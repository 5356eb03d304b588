"""The typer app: every command registered here, explicitly, and DuequeueError mapped to one
line and an exit code in one place (shell.Group.invoke, through context.report)."""

from duequeue.cli import commands, operator_commands, shell

app = shell.Typer(
    name="duequeue",
    cls=shell.Group,
    help="Deliver reminders on time from cron: email and signed webhooks, never twice.",
    invoke_without_command=True,  # bare `duequeue` prints help on stdout, exit 0 (root)
    context_settings={"help_option_names": ["-h", "--help"]},
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

app.callback()(commands.root)
app.command()(commands.add)
app.command()(commands.tick)
app.command()(commands.inspect)
app.command("next")(commands.next_)
app.command()(commands.migrate)
app.command("import")(operator_commands.import_)
app.command()(operator_commands.history)
app.command()(operator_commands.retry)
app.command()(operator_commands.cancel)
app.command()(operator_commands.enable)
app.command()(operator_commands.stats)
app.command()(operator_commands.prune)
app.command()(operator_commands.recompute)
app.command()(operator_commands.doctor)
app.command()(operator_commands.worker)
app.command()(operator_commands.config)
