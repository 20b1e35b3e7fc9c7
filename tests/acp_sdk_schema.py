"""The official ACP SDK's v1 JSON Schemas, fetched once into the user's cache for the tests.

``python -m tests.acp_sdk_schema`` downloads the npm tarball of ``@agentclientprotocol/sdk``
``VERSION`` (plain ``urllib``, no node), refuses it unless its sha512 and sha1 are the ones
pinned here, and extracts ``schema/v1/schema.json`` (the stable surface of ACP 1.25.0) and
``schema/v1/schema.unstable.json`` into ``$XDG_CACHE_HOME/muse-acp/acp-sdk/VERSION/``. The
``tests`` nox session runs it before pytest, so pytest never touches the network;
``schema_files`` gives the two files, or raises ``MissingSchemas`` naming that command.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import sys
import tarfile
import urllib.request
from pathlib import Path
from typing import Final

VERSION: Final = "2.4.0"
TARBALL_URL: Final = f"https://registry.npmjs.org/@agentclientprotocol/sdk/-/sdk-{VERSION}.tgz"
INTEGRITY: Final = (
    "sha512-"
    "7qJ8nnyj7WesC5ve185ioTpB2/svQoeGV4HA4nLEhgDUrcmBe54/08VcXc/oL4p14tDbxxECZzdYmUYQ+4l+Wg=="
)
"""The tarball's ``dist.integrity`` as the npm registry publishes it."""
SHASUM: Final = "da88bc879557fcf471222bfce02f6cd76e67497a"
"""The tarball's ``dist.shasum`` (sha1) as the npm registry publishes it."""
FILES: Final = {
    "schema.json": "0d0b1ca83c4872e5473f68926a894c7a8203b59b118e2a79bfe43dd76fbcbc1a",
    "schema.unstable.json": "ce7881d10c854bcac4f0e7d3a9ce4fb0f612ec0a09e64b572940beec4668c189",
}
"""The extracted files (``package/schema/v1/NAME`` in the tarball) and their sha256, checked
on every use so that a cache edited by hand is refused too."""
FETCH_COMMAND: Final = "python -m tests.acp_sdk_schema"
DOWNLOAD_TIMEOUT_S: Final = 120


class MissingSchemas(Exception):
    """The cached schemas are absent or not the pinned ones; the message says how to fetch."""


def cache_dir() -> Path:
    """Where the schemas are kept: the user's cache, as codegen keeps Muse's wheels."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "muse-acp" / "acp-sdk" / VERSION


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def schema_files(folder: Path | None = None) -> dict[str, Path]:
    """The two v1 schemas by file name (``schema.json``, ``schema.unstable.json``), checked
    against their pins.

    Raises:
        MissingSchemas: a file is missing or differs from its pin.
    """
    folder = folder or cache_dir()
    found = {}
    for name, digest in FILES.items():
        path = folder / name
        if not path.is_file():
            raise MissingSchemas(
                f"The ACP SDK {VERSION} schema {name} is not in {folder}. Fetch it once with "
                f"`{FETCH_COMMAND}` (the `tests` nox session runs it before pytest)."
            )
        if _sha256(path.read_bytes()) != digest:
            raise MissingSchemas(
                f"{path} is not the ACP SDK {VERSION} {name} this project pins. Delete it and "
                f"fetch it again with `{FETCH_COMMAND}`."
            )
        found[name] = path
    return found


def verify_tarball(data: bytes) -> None:
    """Refuse ``data`` unless it is the pinned tarball (its sha512 and its sha1)."""
    integrity = "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()
    if integrity != INTEGRITY or hashlib.sha1(data).hexdigest() != SHASUM:
        raise MissingSchemas(
            f"the download of {TARBALL_URL} is not the published @agentclientprotocol/sdk "
            f"{VERSION} (its sha512 or sha1 differs from the pins in {__name__})"
        )


def extract(data: bytes, folder: Path) -> None:
    """Write the pinned files of the verified tarball ``data`` into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
        for name in FILES:
            member = archive.extractfile(f"package/schema/v1/{name}")
            if member is None:
                raise MissingSchemas(f"the tarball has no package/schema/v1/{name}")
            partial = folder / f"{name}.partial"
            partial.write_bytes(member.read())
            partial.replace(folder / name)  # never a half-written schema under the real name


def fetch(folder: Path | None = None) -> dict[str, Path]:
    """The schemas, downloaded and extracted into ``folder`` first when they are not there."""
    folder = folder or cache_dir()
    try:
        return schema_files(folder)
    except MissingSchemas:
        pass
    tarball = folder / f"sdk-{VERSION}.tgz"
    data = tarball.read_bytes() if tarball.is_file() else b""
    try:
        verify_tarball(data)
    except MissingSchemas:
        with urllib.request.urlopen(TARBALL_URL, timeout=DOWNLOAD_TIMEOUT_S) as response:
            data = response.read()
        verify_tarball(data)
        folder.mkdir(parents=True, exist_ok=True)
        tarball.write_bytes(data)
    extract(data, folder)
    return schema_files(folder)


def main() -> int:
    try:
        found = fetch()
    except (MissingSchemas, OSError) as exc:
        print(f"could not fetch the ACP SDK {VERSION} schemas: {exc}", file=sys.stderr)
        return 1
    for path in found.values():
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
