"""The receivers' host: an HTTP and an SMTP server that record every delivery as a JSON line.

    ip netns exec NS python -m tests.hosts.receiver --addr 10.213.2.11 --log FILE --gate FILE

Run inside the receivers' namespace (the harness starts it); the test reads FILE. Each request
or message is written twice: {"ev": "got", ...} when it arrives, {"ev": "done", ...} once it is
answered, with its webhook-id or Message-ID, the path or recipient and the sender's address, so a
test waits on counts (events) and knows which host sent what.

What a path (or a recipient's local part) starting with these does:
- `ok`: answered at once (200, or 250 for mail);
- `gate`: held until the file --gate exists, then answered: sends in flight while a test acts;
- `slow`: answered after --slow seconds;
- `fail`: answered 503 (mail: 451), a failure that clears.
"""

import argparse
import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

_lock = threading.Lock()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--addr", required=True)
    parser.add_argument("--http-port", type=int, default=8080)
    parser.add_argument("--smtp-port", type=int, default=2525)
    parser.add_argument("--log", type=Path, required=True)
    parser.add_argument("--gate", type=Path, required=True)
    parser.add_argument("--slow", type=float, default=1.0)
    args = parser.parse_args()
    out = args.log.open("a", encoding="utf-8")

    def record(**fields: Any) -> None:
        with _lock:
            out.write(json.dumps(fields) + "\n")
            out.flush()

    def hold(what: str) -> None:
        if what.startswith("gate"):
            while not args.gate.exists():  # the test's signal; nothing else ends the hold
                time.sleep(0.02)
        elif what.startswith("slow"):
            time.sleep(args.slow)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            self.rfile.read(length)
            what = self.path.lstrip("/")
            seen = {
                "kind": "http",
                "id": self.headers.get("webhook-id"),
                "what": what,
                "peer": self.client_address[0],
            }
            record(ev="got", **seen)
            hold(what)
            code = 503 if what.startswith("fail") else 200
            self.send_response(code)
            self.send_header("Content-Length", "0")
            self.end_headers()
            record(ev="done", code=code, **seen)

        def log_message(self, format: str, *a: Any) -> None:
            pass

    class Server(ThreadingHTTPServer):
        daemon_threads = True
        request_queue_size = 1024

    http = Server((args.addr, args.http_port), Handler)
    threading.Thread(target=http.serve_forever, daemon=True).start()

    from aiosmtpd.controller import Controller

    class Mail:
        async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
            import asyncio
            from email.parser import BytesParser

            msg = BytesParser().parsebytes(envelope.content)
            what = envelope.rcpt_tos[0].split("@")[0]
            seen = {"kind": "mail", "id": msg["Message-ID"], "what": what, "peer": session.peer[0]}
            record(ev="got", **seen)
            await asyncio.get_running_loop().run_in_executor(None, hold, what)
            code = 451 if what.startswith("fail") else 250
            record(ev="done", code=code, **seen)
            return "451 try later" if code == 451 else "250 OK"

    smtp = Controller(Mail(), hostname=args.addr, port=args.smtp_port)
    smtp.start()
    print("listening", flush=True)
    try:
        threading.Event().wait()
    finally:
        smtp.stop()
        os._exit(0)


if __name__ == "__main__":
    main()
