"""The ACP registry entry (``agent.json``, ``icon.svg``) against the registry's published rules.

The ACP registry lists one folder per agent, named by its id, holding ``agent.json`` and a
required ``icon.svg``. Its agent schema (JSON Schema draft 7) is restated as our own file,
tests/fixtures/registry/agent.schema.json, and the checks its build applies on top as facts
here: required members, the id and version patterns, distribution shapes, no ``latest`` pins, a
package pin equal to the entry's version, and an icon that is a square 16x16 SVG drawn only in
``currentColor`` with no comments. Its auth check starts the agent, sends ``initialize`` as a
client with terminal sign-in, and wants at least one method of type ``agent`` (the type of a
method without one) or ``terminal``; strict clients refuse any other type in the list.
"""

from __future__ import annotations

import json
import re
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

import anyio
import jsonschema
import pytest

from muse_acp import __version__
from tests.in_process import serving_agent

ROOT: Final = Path(__file__).resolve().parents[1]
PLATFORMS: Final = [
    "darwin-aarch64",
    "darwin-x86_64",
    "linux-aarch64",
    "linux-x86_64",
    "windows-aarch64",
    "windows-x86_64",
]
SCHEMA_FILE: Final = ROOT / "tests" / "fixtures" / "registry" / "agent.schema.json"
"""The registry's agent schema, restated in our own file (draft 7), ``license_url`` included,
which its newer revisions require."""
REGISTRY_SCHEMA: Final[dict[str, Any]] = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
TAKEN_IDS: Final = frozenset({"muse-acp"})
"""Registry ids that name other projects (``muse-acp`` is BrokkAi's Rust adapter)."""
REGISTRY_INITIALIZE: Final = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": 1,
        "clientInfo": {"name": "ACP Registry Validator", "version": "1.0.0"},
        "clientCapabilities": {
            "terminal": True,
            "fs": {"readTextFile": True, "writeTextFile": True},
            "_meta": {"terminal_output": True, "terminal-auth": True},
        },
    },
}
"""What the registry's auth check sends: the client it plays declares terminal sign-in."""
AUTH_TYPES: Final = frozenset({"agent", "terminal"})
"""The auth method types ACP defines, the only ones the registry's check (and strict clients)
accept."""

URI_MEMBERS: Final = ("repository", "website", "license_url")
ICON_SIZE: Final = 16
ALLOWED_PAINT: Final = {"currentcolor", "none", "inherit"}


def entry() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((ROOT / "agent.json").read_text(encoding="utf-8"))
    return loaded


def project() -> dict[str, Any]:
    loaded: dict[str, Any] = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    section: dict[str, Any] = loaded["project"]
    return section


def icon_problems(text: str) -> list[str]:
    """What the registry's icon check would refuse in ``text`` (empty when it passes)."""
    problems: list[str] = []
    if "<!--" in text:
        problems.append("comment")
    try:
        root = ET.fromstring(text)
    except ET.ParseError:
        return [*problems, "not XML"]
    if root.tag.rpartition("}")[2] != "svg":
        return [*problems, "root is not <svg>"]
    width, height = root.get("width"), root.get("height")
    size: tuple[float, float] | None = None
    if width and height:
        size = (float(re.sub(r"px$", "", width)), float(re.sub(r"px$", "", height)))
    elif root.get("viewBox"):
        parts = (root.get("viewBox") or "").split()
        size = (float(parts[2]), float(parts[3])) if len(parts) == 4 else None
    if size is None:
        problems.append("no size")
    elif size != (ICON_SIZE, ICON_SIZE):
        problems.append(f"size {size[0]:g}x{size[1]:g}")
    paints: list[str] = []
    for element in root.iter():
        paints += [element.get(name) or "" for name in ("fill", "stroke") if element.get(name)]
        for declaration in (element.get("style") or "").split(";"):
            name, _, value = declaration.partition(":")
            if name.strip().lower() in ("fill", "stroke"):
                paints.append(value)
        if element.tag.rpartition("}")[2] == "style" and element.text:
            paints += re.findall(r"\b(?:fill|stroke)\s*:\s*([^;}\s]+)", element.text, re.I)
    normalised = [paint.strip().lower() for paint in paints]
    problems += [f"colour {paint}" for paint in normalised if paint not in ALLOWED_PAINT]
    if "currentcolor" not in normalised:
        problems.append("no currentColor")
    return problems


def test_the_entry_satisfies_the_registry_schema() -> None:
    jsonschema.Draft7Validator.check_schema(REGISTRY_SCHEMA)
    jsonschema.Draft7Validator(REGISTRY_SCHEMA).validate(entry())
    for member in URI_MEMBERS:
        parts = urlsplit(entry()[member])
        assert (parts.scheme, bool(parts.netloc)) == ("https", True), member


def test_the_schema_restated_here_refuses_what_the_registry_refuses() -> None:
    validator = jsonschema.Draft7Validator(REGISTRY_SCHEMA)
    good = entry()
    bad = [
        {**good, "id": "Muse_ACP"},
        {**good, "version": "0.1"},
        {k: v for k, v in good.items() if k != "license_url"},
        {**good, "distribution": {}},
        {**good, "distribution": {"pip": {"package": "muse-acp"}}},
        {**good, "distribution": {"uvx": {"package": "muse-acp", "cwd": "/"}}},
        {**good, "distribution": {"binary": {"linux-amd64": {"archive": "x", "cmd": "y"}}}},
    ]
    for candidate in bad:
        assert not validator.is_valid(candidate), candidate


def test_the_uvx_distribution_runs_this_package_as_an_acp_server() -> None:
    meta = project()
    uvx = entry()["distribution"]["uvx"]
    name, _, pinned = uvx["package"].partition("==")
    assert name == meta["name"]
    assert "latest" not in uvx["package"].lower()
    # uvx runs the command named after the package: it must be ours, and `serve` speaks ACP.
    assert meta["scripts"][name] == "muse_acp.cli:main"
    assert uvx["args"] == ["serve"]
    assert entry()["distribution"].keys() == {"uvx"}
    # The package's version is its own ``__version__`` (the metadata is built from it).
    assert meta["dynamic"] == ["version"]
    assert pinned == entry()["version"] == __version__


def test_the_entry_has_an_id_of_its_own_that_says_what_it_is() -> None:
    # The registry wants a unique id equal to the entry's folder; ``muse-acp`` is taken. The
    # package keeps its name: the id is the registry's, the package name PyPI's.
    assert entry()["id"] not in TAKEN_IDS
    assert entry()["id"] == "muse-code-python"
    assert "muse" in entry()["name"].lower()


def test_the_entry_agrees_with_the_package_metadata() -> None:
    meta = project()
    assert entry()["license"] == meta["license"]
    assert (ROOT / "LICENSE").read_text(encoding="utf-8").lstrip().startswith("Apache License")
    urls = meta["urls"]
    assert entry()["repository"] == urls["Repository"]
    assert entry()["license_url"].startswith(urls["Repository"] + "/")


def test_the_icon_passes_the_registry_icon_check() -> None:
    assert icon_problems((ROOT / "icon.svg").read_text(encoding="utf-8")) == []


@pytest.mark.parametrize(
    ("svg", "problem"),
    [
        ('<svg width="24" height="24"><path fill="currentColor" d="M0 0"/></svg>', "size 24x24"),
        ('<svg viewBox="0 0 16 16"><path fill="#ff0000" d="M0 0"/></svg>', "colour #ff0000"),
        ('<svg viewBox="0 0 16 16"><path style="stroke: red" d="M0"/></svg>', "colour red"),
        ('<svg viewBox="0 0 16 16"><path fill="none" d="M0 0"/></svg>', "no currentColor"),
        ('<svg viewBox="0 0 16 16"><!-- x --><path fill="currentColor"/></svg>', "comment"),
        ('<svg width="16" height="8"><path fill="currentColor"/></svg>', "size 16x8"),
    ],
)
def test_the_icon_check_refuses_what_the_registry_refuses(svg: str, problem: str) -> None:
    assert problem in icon_problems(svg)


def auth_check(methods: list[dict[str, Any]]) -> list[str]:
    """What the registry's auth check (and a strict client) would refuse in ``methods``."""
    types = [method.get("type") or "agent" for method in methods]
    problems = [f"type {kind!r}" for kind in types if kind not in AUTH_TYPES]
    if not methods:
        problems.append("no auth methods")
    problems += [f"no id in {method}" for method in methods if not method.get("id")]
    return problems


def test_the_auth_check_refuses_what_the_registry_refuses() -> None:
    assert auth_check([{"id": "a", "name": "A", "type": "env_var", "vars": []}]) == [
        "type 'env_var'"
    ]
    assert auth_check([]) == ["no auth methods"]
    assert (
        auth_check([{"id": "a", "name": "A"}, {"id": "b", "name": "B", "type": "terminal"}]) == []
    )


@pytest.mark.anyio
@pytest.mark.parametrize("terminal_sign_in", [True, False])
async def test_the_agent_passes_the_registry_auth_check(
    tmp_path: Path, terminal_sign_in: bool
) -> None:
    # As the registry's check runs it: a scratch home, its short environment, no Muse at all.
    env = {"HOME": str(tmp_path), "PATH": str(tmp_path), "TERM": "dumb"}
    request = json.loads(json.dumps(REGISTRY_INITIALIZE))
    if not terminal_sign_in:  # a client that runs no terminal sign-in still gets a method
        request["params"]["clientCapabilities"].pop("_meta")
    async with serving_agent(env) as (reader, writer):
        writer.write(json.dumps(request).encode() + b"\n")
        await writer.drain()
        with anyio.fail_after(30):
            response = json.loads(await reader.readline())
    methods = response["result"]["authMethods"]
    assert auth_check(methods) == []
    kinds = [method.get("type") or "agent" for method in methods]
    assert kinds == (["terminal", "agent"] if terminal_sign_in else ["agent"])
