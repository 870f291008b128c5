#!/usr/bin/env python3
"""The fault harness's anonymous flood (lib_faults.sh): keeps N connections from SOURCE open to HOST:PORT for
SECONDS, sending nothing (or, with --trickle, one byte of a never-ending header every 2 s), and opens a new one
whenever the server closes or refuses one. Prints what the server did with them.
Usage: flood.py SOURCE HOST PORT N SECONDS [--trickle]"""
import selectors
import socket
import sys
import time


def main():
    source, host, port, n, seconds = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
    trickle = "--trickle" in sys.argv
    sel = selectors.DefaultSelector()
    opened = refused = closed = 0

    def open_one():
        nonlocal opened
        s = socket.socket()
        s.bind((source, 0))
        try:
            s.connect((host, port))
        except OSError:
            s.close()
            return
        if trickle:
            s.send(b"GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ)
        opened += 1

    for _ in range(n):
        open_one()
    end = time.time() + seconds
    next_trickle = time.time() + 2
    while time.time() < end:
        for key, _ in sel.select(timeout=0.1):
            s = key.fileobj
            try:
                data = s.recv(4096)
            except OSError:
                data = b""
            if data.startswith(b"HTTP/1.1 503"):
                refused += 1
                time.sleep(0.01)  # a flood, not a busy loop on a shared test machine
            else:
                closed += 1
            sel.unregister(s)
            s.close()
            open_one()
        if trickle and time.time() >= next_trickle:
            next_trickle = time.time() + 2
            for key in list(sel.get_map().values()):
                try:
                    key.fileobj.send(b"a")
                except OSError:
                    pass
    print(f"flood: {opened} connections opened, {refused} refused with 503, {closed} closed by the server", flush=True)


if __name__ == "__main__":
    main()
