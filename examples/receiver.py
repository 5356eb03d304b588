"""A webhook receiver to try duequeue with: print every POST it gets, answer 204.

    python examples/receiver.py [PORT]    # default 8000; 0 picks a free port

Listens on 127.0.0.1 only. With DUEQUEUE_WEBHOOK_SECRET set it also checks the Standard Webhooks
signature, as a real receiver must (several signatures, during a secret's rotation, are fine).
Other POSTs (Apprise's json://, say) are printed as they are. Standard library only, so it runs
before anything is installed.
"""

import base64
import hashlib
import hmac
import os
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        print(f"POST {self.path}\n{self.headers}{body.decode()}", flush=True)
        secret = os.environ.get("DUEQUEUE_WEBHOOK_SECRET", "").removeprefix("whsec_")
        if secret and "webhook-id" in self.headers:  # a Standard Webhook, not another POST
            key = base64.b64decode(secret + "=" * (-len(secret) % 4))
            signed = f"{self.headers['webhook-id']}.{self.headers['webhook-timestamp']}."
            mac = hmac.new(key, signed.encode() + body, hashlib.sha256).digest()
            expected = "v1," + base64.b64encode(mac).decode()
            valid = expected in self.headers.get("webhook-signature", "").split()
            print("signature:", "valid" if valid else "INVALID", flush=True)
        self.send_response(204)
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        """Keep quiet: the print above already shows each request."""


server = HTTPServer(("127.0.0.1", int(sys.argv[1]) if len(sys.argv) > 1 else 8000), Receiver)
print(f"listening on http://127.0.0.1:{server.server_port}/", flush=True)
server.serve_forever()
