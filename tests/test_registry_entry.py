"""The ACP registry entry (``agent.json``, ``icon.svg``) against the registry's published rules.

The ACP registry lists one folder per agent, named by its id, holding ``agent.json`` and a
required ``icon.svg``. Its agent schema (JSON Schema draft 7) and the checks its build applies
on top are restated here as facts: required members, the id and version patterns, distribution
shapes, no ``latest`` pins, a package pin equal to the entry's version, and an icon that is a
square 16x16 SVG drawn only in ``currentColor`` with no comments.
"""

from __future__ import annotations

import json
import re
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

import jsonschema
import pytest

from muse_acp import __version__

ROOT: Final = Path(__file__).resolve().parents[1]
PLATFORMS: Final = [
    "darwin-aarch64",
    "darwin-x86_64",
    "linux-aarch64",
    "linux-x86_64",
    "windows-aarch64",
    "windows-x86_64",
]
_STRINGS: Final = {"type": "array", "items": {"type": "string"}}
_ENV: Final = {"type": "object", "additionalProperties": {"type": "string"}}
PACKAGE_DISTRIBUTION: Final = {
    "type": "object",
    "required": ["package"],
    "properties": {
        "package": {"type": "string", "minLength": 1},
        "args": _STRINGS,
        "env": _ENV,
    },
    "additionalProperties": False,
}
REGISTRY_SCHEMA: Final[dict[str, Any]] = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "required": ["id", "name", "version", "description", "distribution", "license_url"],
    "properties": {
        "id": {"type": "string", "pattern": "^[a-z][a-z0-9-]*$"},
        "name": {"type": "string", "minLength": 1},
        "version": {"type": "string", "pattern": r"^[0-9]+\.[0-9]+\.[0-9]+$"},
        "description": {"type": "string", "minLength": 1},
        "repository": {"type": "string"},
        "website": {"type": "string"},
        "authors": _STRINGS,
        "license": {"type": "string"},
        "license_url": {"type": "string"},
        "icon": {"type": "string"},
        "distribution": {
            "type": "object",
            "minProperties": 1,
            "properties": {
                "binary": {
                    "type": "object",
                    "minProperties": 1,
                    "propertyNames": {"enum": PLATFORMS},
                    "additionalProperties": {
                        "type": "object",
                        "required": ["archive", "cmd"],
                        "properties": {
                            "archive": {"type": "string"},
                            "sha256": {"type": "string", "pattern": "^[a-fA-F0-9]{64}$"},
                            "cmd": {"type": "string"},
                            "args": _STRINGS,
                            "env": _ENV,
                        },
                        "additionalProperties": False,
                    },
                },
                "npx": PACKAGE_DISTRIBUTION,
                "uvx": PACKAGE_DISTRIBUTION,
            },
            "additionalProperties": False,
        },
    },
}
"""The registry's agent schema, including ``license_url``, which its newer revisions require."""

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


def test_the_entry_agrees_with_the_package_metadata() -> None:
    meta = project()
    assert entry()["id"] == meta["name"]
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
