"""The least a Python process between a client and a host could do: copy bytes both ways.

Contract: ``python -m bench.byte_relay COMMAND...`` starts ``COMMAND`` (a host) with pipes for
its standard input and output and copies this process's standard input to the host's and the
host's output to this process's standard output, as the bytes come, until either side ends;
then it closes the host's input and waits for it. One process multiplexing two inputs, as an
adapter must: one ``epoll`` wait, a read of what is there and a blocking write of all of it, no
framing, no decoding, no event-loop library. ``first_update`` times a turn through it beside the
adapter: what a Python process on the path costs on the machine (its wake-ups, its reads and
writes) whatever else it does.
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
from typing import Final

from bench.blocking import write_all

__all__ = ["relay"]

READ_BYTES: Final = 1 << 20


def relay(argv: list[str]) -> int:
    """Copy both ways between this process and ``argv`` started as a child; its exit status."""
    host = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert host.stdin is not None
    assert host.stdout is not None
    to_host, from_host = host.stdin.fileno(), host.stdout.fileno()
    routes = {0: to_host, from_host: 1}
    poller = select.epoll()
    for source in routes:
        poller.register(source, select.EPOLLIN)
    try:
        while True:
            for source, _ in poller.poll():
                data = os.read(source, READ_BYTES)
                if not data:
                    return 0
                write_all(routes[source], data)
    finally:
        poller.close()
        host.stdin.close()
        host.wait()


if __name__ == "__main__":
    raise SystemExit(relay(sys.argv[1:]))
