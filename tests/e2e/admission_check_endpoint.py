#!/usr/bin/env python3
"""An HTTP admission check endpoint for the e2e tests (docs/api.md, "Admission checks"): listens on a free loopback
port (written to PORT_FILE), appends one line per ask to ASKS_FILE (`CHECK JOB ATTEMPT`, the check from the
X-Allot-Admission-Check header), and answers from the file ANSWERS_DIR/JOB, read at each ask: `ready`, or `retry` or
`reject` followed by a message on the same line. With no such file it answers 503 (not an answer: the run keeps
waiting and is asked again).
Usage: admission_check_endpoint.py PORT_FILE ASKS_FILE ANSWERS_DIR"""
import http.server
import json
import os
import sys

port_file, asks_file, answers_dir = sys.argv[1:4]


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        ask = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        with open(asks_file, "a") as out:
            out.write("%s %s %s\n" % (self.headers.get("X-Allot-Admission-Check", "-"), ask.get("job"), ask.get("attempt")))
        try:
            with open(os.path.join(answers_dir, os.path.basename(ask.get("job", "")))) as f:
                state, _, message = f.read().strip().partition(" ")
        except OSError:
            self.send_response(503)
            self.end_headers()
            return
        body = json.dumps({"state": state, "message": message}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(port_file + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
os.rename(port_file + ".tmp", port_file)
server.serve_forever()
