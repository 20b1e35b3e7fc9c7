"""The physical limit of the echo workload: ``python -m bench.echo_pipe N``.

No runtime at all: every frame an echo agent would send for a prompt of N updates is serialized
once, before the first request arrives, and each prompt is answered by writing those bytes (and
the response) to a plain blocking pipe. Requests are read line by line and only their ``id`` and
``method`` are looked at.
"""

from __future__ import annotations

import json
import sys

from bench.blocking import write_all
from bench.workload import SESSION_ID, update_params
from muse_acp.rpc import JsonObject, encode_notification, encode_result


def main(argv: list[str]) -> int:
    updates = int(argv[0])
    block = b"".join(
        encode_notification("session/update", update_params(index)) + b"\n"
        for index in range(updates)
    )
    answers: dict[str, JsonObject] = {
        "initialize": {"protocolVersion": 1},
        "session/new": {"sessionId": SESSION_ID},
        "session/prompt": {"stopReason": "end_turn"},
    }
    for line in sys.stdin.buffer:
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        if request_id is None or method not in answers:
            continue
        response = encode_result(request_id, answers[method]) + b"\n"
        write_all(1, block + response if method == "session/prompt" else response)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
