"""`duequeue serve`: the dashboard and the HTTP API, one aiohttp server over `duequeue.Queue`."""
