#!/usr/bin/env python3
"""A webhook receiver for the e2e tests: listens on a free loopback port (written to PORT_FILE), checks each
delivery's X-Allot-Signature with the secret in SECRET_FILE (read at each request: the secret exists only once
the webhook is made, after the receiver's URL is known), and appends one line per delivery to OUT_FILE:
`ok EVENT JOB DELIVERY` or `bad-signature ...`.
Usage: webhook_receiver.py PORT_FILE SECRET_FILE OUT_FILE"""
import hashlib
import hmac
import http.server
import json
import sys

port_file, secret_file, out_file = sys.argv[1:4]


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        try:
            secret = open(secret_file).read().strip()
        except OSError:
            secret = ""
        want = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
        ok = hmac.compare_digest(want, self.headers.get("X-Allot-Signature", ""))
        event = json.loads(body)
        with open(out_file, "a") as out:
            out.write("%s %s %s %s\n" % ("ok" if ok else "bad-signature", event.get("event"), event.get("job", "-"),
                                         event.get("delivery")))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(port_file + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
import os
os.rename(port_file + ".tmp", port_file)
server.serve_forever()
