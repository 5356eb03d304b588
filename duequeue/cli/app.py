"""The typer app: every command registered here, explicitly, and DuequeueError mapped to one
line and an exit code in one place (shell.Group.invoke, through context.report)."""

from duequeue.cli import change_commands, commands, operator_commands, serve_command, shell

app = shell.Typer(
    name="duequeue",
    cls=shell.Group,
    help="Deliver reminders on time from cron: email, signed webhooks and chat or push "
    "notifications (Slack, ntfy, Telegram, ... through Apprise), none twice because of a retry, "
    "a partial failure or an overlapping tick.",
    invoke_without_command=True,  # bare `duequeue` prints help on stdout, exit 0 (root)
    context_settings={"help_option_names": ["-h", "--help"]},
    add_completion=True,  # --install-completion / --show-completion for bash, zsh, fish
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

app.callback()(commands.root)
app.command()(change_commands.init)
app.command()(commands.add)
app.command()(change_commands.reschedule)
app.command()(change_commands.edit)
app.command()(commands.tick)
app.command()(commands.inspect)
app.command("next")(commands.next_)
app.command()(commands.migrate)
app.command("import")(operator_commands.import_)
app.command()(operator_commands.history)
app.command()(operator_commands.retry)
app.command()(operator_commands.cancel)
app.command()(operator_commands.enable)
app.command()(operator_commands.pause)
app.command()(operator_commands.resume)
app.command()(operator_commands.stats)
app.command()(operator_commands.prune)
app.command()(operator_commands.recompute)
app.command()(operator_commands.doctor)
app.command()(operator_commands.worker)
app.command()(operator_commands.config)
app.command()(serve_command.serve)
