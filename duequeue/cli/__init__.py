"""The command line: `app.py` builds the typer app and registers every command on it;
`commands.py` and `operator.py` hold the commands; `context.py` the clock and the settings and
store a command opens; `entrypoint.py` is the console script, which runs cron's plain `tick`
line without typer (`fastargs.py`). Kept empty: loading `cli.entrypoint` must not load typer.
"""
