"""Structural comparison of the frames muse-acp writes or sends with those a trace recorded.

Contract: a ``Matcher`` is given the recorded output frames and then each live frame in turn
(``offer``). A live frame matches a recorded one when, after the trace's redaction of the live
frame: members and list lengths are the same; ``STRICT`` members (the protocol's words:
methods, update kinds, statuses, stop reasons, choices) and numbers are equal (ids and times
aside); two redacted texts always match; any other string may differ as long as each recorded
value always stands for the same live one (ids muse-acp makes anew); a live path under one of
``roots`` (live folder -> recorded one) is read as under the recorded folder. A live frame is
matched with the first unmatched recorded frame among the next ``WINDOW`` it matches, as
independent streams may interleave differently from run to run; ``compare`` matches one live
frame with one recorded frame (an MSP request a replayed host was sent). ``pairs`` and ``ids``
are what the live values learned so far stand for, to send later recorded input with.
``first`` is the first ``Difference`` (None while there is none).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Final

from muse_acp.rpc import JsonValue
from muse_acp.traces.redaction import Redactor, is_placeholder

__all__ = ["STRICT", "WINDOW", "Difference", "Matcher"]

STRICT: Final = frozenset(
    {"jsonrpc", "method", "sessionUpdate", "kind", "status", "stopReason", "type", "role",
     "optionId", "outcome", "action", "currentModeId", "mimeType", "choiceId"}
)  # fmt: skip
"""Members whose values are the protocol's words: they must be equal."""

WINDOW: Final = 8
"""Recorded frames ahead of the oldest unmatched one that a live frame may match."""

_TIMING: Final = re.compile(r"(?:Ms|At|Seconds|Time|duration|elapsed)\Z", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Difference:
    """Where the live output first departs from the recorded one."""

    index: int
    """The recorded ACP output frame's position among the output frames (from 1)."""
    recorded: JsonValue
    live: JsonValue
    """The live frame as redacted for the trace (None: muse-acp wrote none)."""
    why: str

    def describe(self) -> str:
        """One paragraph naming the frame, what differs and both frames."""
        return (
            f"ACP output frame {self.index} ({summary(self.recorded)}): {self.why}; "
            f"recorded {_short(self.recorded)}, muse-acp wrote {_short(self.live)}"
        )


def summary(frame: JsonValue) -> str:
    """A frame in a few words: its method and update kind, or which request it answers."""
    if not isinstance(frame, dict):
        return "no frame"
    params = frame.get("params")
    update = params.get("update") if isinstance(params, dict) else None
    if isinstance(update, dict) and "sessionUpdate" in update:
        return f"{frame.get('method')} {update['sessionUpdate']}"
    if "method" in frame:
        return str(frame["method"])
    return f"the answer to request {frame.get('id')}"


def _short(value: JsonValue) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 400 else text[:397] + "..."


class Matcher:
    """Matches live ACP output with a trace's (see the module contract)."""

    def __init__(self, recorded: list[JsonValue], redactor: Redactor) -> None:
        self.recorded = recorded
        self.redactor = redactor
        self.unmatched = list(range(len(recorded)))
        self.first: Difference | None = None
        self.pairs: dict[str, str] = {}
        self.ids: dict[JsonValue, JsonValue] = {}
        self.roots: dict[str, str] = {}
        self._taken: dict[str, str] = {}
        self._trial: dict[str, str] = {}
        self._trial_ids: dict[JsonValue, JsonValue] = {}

    def offer(self, live: JsonValue) -> None:
        """Match one live frame (see the module contract)."""
        if self.first is not None:
            return
        if not self.unmatched:
            self.fail(len(self.recorded), live, "a frame the trace lacks")
            return
        reasons: list[str] = []
        for position, index in enumerate(self.unmatched[:WINDOW]):
            why = self.compare(self.recorded[index], live)
            if why is None:
                del self.unmatched[position]
                return
            reasons.append(why)
        self.fail(self.unmatched[0], live, reasons[0])

    def compare(self, recorded: JsonValue, live: JsonValue) -> str | None:
        """Why ``live`` does not match ``recorded`` (None: it does, and what its values stand
        for is learned), by the rules of the module contract."""
        self._trial, self._trial_ids = {}, {}
        why = self._differs(recorded, live, "", "")
        if why is None:
            self.pairs.update(self._trial)
            self._taken.update({v: k for k, v in self._trial.items()})
            self.ids.update(self._trial_ids)
        return why

    def fail(self, index: int, live: JsonValue, why: str) -> None:
        """Record the first difference at recorded output frame ``index`` (from 0)."""
        if self.first is None:
            recorded = self.recorded[index] if index < len(self.recorded) else None
            shown = None if live is None else self.redactor.value(live, "")
            self.first = Difference(index + 1, recorded, shown, why)

    def _differs(self, recorded: JsonValue, live: JsonValue, path: str, key: str) -> str | None:
        if isinstance(recorded, dict) and isinstance(live, dict):
            if recorded.keys() != live.keys():
                return f"members {sorted(recorded.keys() ^ live.keys())} differ at {path or '/'}"
            for name in recorded:
                value = live[name]
                if self.redactor.secret_member(name):  # compared as the trace keeps it
                    kept = self.redactor.value({name: value}, "")
                    value = kept[name] if isinstance(kept, dict) else value
                why = self._differs(recorded[name], value, f"{path}.{name}", name)
                if why is not None:
                    return why
            return None
        if isinstance(recorded, list) and isinstance(live, list):
            if len(recorded) != len(live):
                return f"{len(recorded)} items recorded, {len(live)} written at {path}"
            for i, (a, b) in enumerate(zip(recorded, live, strict=True)):
                why = self._differs(a, b, f"{path}[{i}]", key)
                if why is not None:
                    return why
            return None
        if isinstance(recorded, str) and isinstance(live, str):
            return self._strings(recorded, live, path, key)
        if type(recorded) is not type(live):
            return f"a different type at {path}"
        if path == ".id":
            self._trial_ids[recorded] = live
            return None
        if recorded != live and not _TIMING.search(key):
            return f"a different value at {path}"
        return None

    def _rooted(self, raw: str) -> str:
        """``raw`` with a live folder of ``roots`` at its start written as the recorded one."""
        for live, recorded in self.roots.items():
            if raw == live or raw.startswith(live + "/"):
                return recorded + raw[len(live) :]
        return raw

    def _strings(self, recorded: str, raw: str, path: str, key: str) -> str | None:
        if raw == recorded and self._trial.get(recorded, self.pairs.get(recorded, raw)) == raw:
            return None  # the very value (a redacted secret as kept, muse-acp's own words)
        live = self.redactor.text(self._rooted(raw), key)
        if recorded == live or (is_placeholder(recorded) and is_placeholder(live)):
            if recorded != raw:  # the live value a recorded (redacted) one stands for
                self._learn(recorded, raw)
            return None
        if key in STRICT:
            return f"a different {key} at {path}"
        if is_placeholder(recorded) != is_placeholder(live) and not _TIMING.search(key):
            return f"text where none was (or none where some was) at {path}"
        known = self._trial.get(recorded, self.pairs.get(recorded))
        if known is None and self._taken.get(raw, recorded) == recorded:
            self._learn(recorded, raw)
            return None
        return None if known == raw else f"a value standing for another one at {path}"

    def _learn(self, recorded: str, raw: str) -> None:
        if recorded not in self.pairs:
            self._trial.setdefault(recorded, raw)
