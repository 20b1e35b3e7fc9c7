"""The SDK schemas the wire tests validate against are used only as pinned: a missing or edited
file, or a tarball that is not the published one, is refused with the command that fetches it."""

from __future__ import annotations

import io
import re
import shutil
import tarfile
from pathlib import Path

import pytest

from tests.acp_sdk_schema import (
    FETCH_COMMAND,
    FILES,
    MissingSchemas,
    extract,
    schema_files,
    verify_tarball,
)


def test_missing_or_edited_schemas_are_refused_with_the_fetch_command(tmp_path: Path) -> None:
    with pytest.raises(MissingSchemas, match=re.escape("schema.json is not in")) as missing:
        schema_files(tmp_path)
    assert f"`{FETCH_COMMAND}`" in str(missing.value)
    for name, path in schema_files().items():  # the fetched ones pass, copied anywhere
        shutil.copy(path, tmp_path / name)
    assert set(schema_files(tmp_path)) == set(FILES)
    with (tmp_path / "schema.unstable.json").open("a") as edited:
        edited.write(" ")
    with pytest.raises(
        MissingSchemas, match=re.escape("is not the ACP SDK 2.4.0 schema.unstable.json")
    ):
        schema_files(tmp_path)


def test_a_tarball_other_than_the_published_one_is_refused(tmp_path: Path) -> None:
    packed = io.BytesIO()
    with tarfile.open(fileobj=packed, mode="w:gz") as archive:
        for name in FILES:
            info = tarfile.TarInfo(f"package/schema/v1/{name}")
            info.size = 2
            archive.addfile(info, io.BytesIO(b"{}"))
    with pytest.raises(
        MissingSchemas, match=re.escape("not the published @agentclientprotocol/sdk 2.4.0")
    ):
        verify_tarball(packed.getvalue())
    extract(packed.getvalue(), tmp_path)  # even extracted by hand, its files are not the pins
    with pytest.raises(MissingSchemas, match=re.escape("is not the ACP SDK 2.4.0 schema.json")):
        schema_files(tmp_path)
