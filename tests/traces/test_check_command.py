"""``muse-acp check-trace TRACE``: a kept trace checks clean; the same trace with one card's
output changed fails naming that frame; an unreadable file is refused."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from muse_acp.cli_commands import app

KEPT = Path(__file__).resolve().parents[1] / "fixtures" / "traces" / "1.4.4.jsonl"


def _changed_card(path: Path) -> tuple[Path, int]:
    """A copy of the kept trace whose first search card was recorded as a ``read`` card, and
    that card's position among the ACP output frames."""
    lines = KEPT.read_text(encoding="utf-8").splitlines()
    outputs = 0
    for i, line in enumerate(lines):
        if '"on":"acp","dir":"out"' not in line:
            continue
        outputs += 1
        if '"sessionUpdate":"tool_call",' in line and '"kind":"search"' in line:
            lines[i] = line.replace('"kind":"search"', '"kind":"read"')
            path.write_text("\n".join(lines) + "\n", encoding="utf-8")
            return path, outputs
    raise AssertionError("the kept trace has no search card")


def test_a_kept_trace_checks_clean_and_a_changed_card_is_named(tmp_path: Path) -> None:
    runner = CliRunner()
    clean = runner.invoke(app, ["check-trace", str(KEPT)])
    assert clean.exit_code == 0, clean.output
    assert clean.output.startswith("no difference: muse-acp wrote the ")
    changed, position = _changed_card(tmp_path / "changed.jsonl")
    failed = runner.invoke(app, ["check-trace", str(changed)])
    assert failed.exit_code == 1, failed.output
    assert failed.output.startswith(
        f"ACP output frame {position} (session/update tool_call): a different kind at "
        ".params.update.kind"
    )


def test_a_file_that_is_no_trace_is_refused(tmp_path: Path) -> None:
    other = tmp_path / "notes.jsonl"
    other.write_text('{"hello": 1}\n', encoding="utf-8")
    result = CliRunner().invoke(app, ["check-trace", str(other)])
    assert result.exit_code == 2
    assert "not a muse-acp trace header" in result.output
