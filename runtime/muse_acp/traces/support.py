"""``muse-acp support``: one file to attach to a bug report, with no secret in it.

Contract: ``write_bundle`` gathers ``doctor``'s findings (as JSON: muse-acp's and Muse's
versions among them), the settings in effect (``MUSE_ACP_*`` variables and the configuration;
a variable named like a secret shows only that it is set), the newest ``TRACES`` redacted traces
(a ``full`` trace holds the user's text and is left out, said so) and the log lines they hold
(the last ``LOG_LINES``), says on ``echo`` what the bundle will contain, then writes it to
``out`` as one zip, owner-only. Every text goes through the process's secret values, the
editor's MCP secrets, bearer tokens and URL credentials (``redaction.Redactor.plain``) before
it is written, whatever produced it. Returns the path written.
"""

from __future__ import annotations

import io
import json
import os
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Final

from muse_acp import __version__
from muse_acp.config import AdapterConfig
from muse_acp.traces.redaction import Redactor

__all__ = ["LOG_LINES", "TRACES", "write_bundle"]

TRACES: Final = 3
"""Newest traces a bundle holds."""
LOG_LINES: Final = 400
"""Log lines a bundle holds, newest last."""
_MAX_TRACE_BYTES: Final = 32 * 1024 * 1024


def _doctor_json(muse: str | None, config: AdapterConfig) -> str:
    from muse_acp.doctor import run_doctor

    buffer = io.StringIO()
    run_doctor(muse, as_json=True, data_dir=config.data_dir, backend=config.backend, out=buffer)
    return buffer.getvalue()


def _settings(config: AdapterConfig, environ: Mapping[str, str], redactor: Redactor) -> str:
    variables = {
        name: "set (a secret)" if redactor.secret_member(name) else redactor.plain(value)
        for name, value in sorted(environ.items())
        if name.startswith("MUSE_ACP_")
    }
    document = {
        "muse-acp": __version__,
        "variables": variables,
        "META_API_KEY": "set" if environ.get("META_API_KEY") else "not set",
        "in effect": {
            "muse_bin": config.muse_bin,
            "data_dir": str(config.data_dir),
            "backend": config.backend,
            "trust_newer_host": config.trust_newer_host,
            "trace": config.trace,
            "traces": str(config.traces),
            "deadlines": {
                name: getattr(config.deadlines, name)
                for name in ("startup", "submit", "cancel", "read", "idle", "silence")
            },
        },
    }
    return redactor.plain(json.dumps(document, indent=2))


def _traces(folder: Path) -> tuple[list[tuple[Path, list[str]]], list[str]]:
    """The newest redacted traces' lines, and a sentence for each trace left out."""
    try:
        found = sorted(folder.glob("trace-*.jsonl"), key=lambda p: p.stat().st_mtime)
    except OSError:
        return [], []
    kept: list[tuple[Path, list[str]]] = []
    left: list[str] = []
    for path in reversed(found):
        if len(kept) == TRACES:
            break
        if path.stat().st_size > _MAX_TRACE_BYTES:
            left.append(f"{path.name}: larger than {_MAX_TRACE_BYTES >> 20} MiB, left out")
            continue
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        header = json.loads(lines[0]) if lines else {}
        if not isinstance(header, dict) or header.get("mode") != "redacted":
            left.append(f"{path.name}: not a redacted trace (it holds your text), left out")
            continue
        kept.append((path, lines))
    return kept, left


def _log_lines(traces: list[tuple[Path, list[str]]]) -> list[str]:
    found: list[str] = []
    for _, lines in reversed(traces):  # oldest first
        for line in lines:
            if '"log":' in line:
                entry = json.loads(line)
                if isinstance(entry, dict) and isinstance(entry.get("log"), str):
                    found.append(entry["log"])
    return found[-LOG_LINES:]


def write_bundle(
    config: AdapterConfig,
    environ: Mapping[str, str],
    out: Path,
    *,
    muse: str | None = None,
    echo: Callable[[str], None] = print,
) -> Path:
    """Gather, announce and write the bundle (see the module contract)."""
    redactor = Redactor("redacted", environ)
    redactor.refresh()
    traces, left = _traces(config.traces)
    logs = _log_lines(traces)
    echo(f"muse-acp support: writing {out} with")
    echo("  doctor.json    doctor's findings (muse-acp's and Muse's versions among them)")
    echo("  settings.json  the settings in effect (secret values never, only whether set)")
    for path, lines in traces:
        echo(f"  traces/{path.name}  a redacted trace ({len(lines)} lines, no text)")
    for sentence in left:
        echo(f"  (not included) {sentence}")
    if not traces:
        echo(f"  (no trace in {config.traces}: serve with --trace or MUSE_ACP_TRACE=1 first)")
    echo(f"  log.txt        the last {len(logs)} log lines of those traces")
    files = {
        "doctor.json": _doctor_json(muse, config),
        "settings.json": _settings(config, environ, redactor),
        "log.txt": "\n".join(logs) + "\n",
    }
    files.update({f"traces/{path.name}": "\n".join(lines) + "\n" for path, lines in traces})
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle, zipfile.ZipFile(handle, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, text in files.items():
            zf.writestr(name, redactor.plain(text))
    echo(f"written: attach {out} to your report")
    return out
