"""Run the CLI as `python -m duequeue`."""

from duequeue.cli import main

main()
