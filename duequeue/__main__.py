"""Run the CLI as `python -m duequeue`."""

from duequeue.cli.entrypoint import main

if __name__ == "__main__":  # a spawned worker process re-imports this module
    main()
