"""The experimental ``account/read``: refused without the opt-in, else the credential in effect,
on every simulated version (each frame checked against that version's bundle)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from muse_acp.sim.options.accounts import CREDENTIALS_FILE, LOGIN_LABEL, login, logout

from .harness import sim_served
from .runs import sim_hosted
from .validation import VERSIONS

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("version", VERSIONS)
async def test_account_read_needs_the_experimental_opt_in(tmp_path: Path, version: str) -> None:
    login(tmp_path)
    async with sim_served(tmp_path, version) as sim:
        await sim.initialize(experimentalApi=False)
        refused = await sim.error("account/read")
        models = await sim.call("model/list")
    assert refused["code"] == -32601
    assert refused["data"] == {"kind": "experimentalRequired", "descriptor": "account/read"}
    assert "account/read" in refused["message"]
    assert models["models"], "the connection goes on serving"


@pytest.mark.parametrize("version", VERSIONS)
async def test_account_read_reports_the_stored_credential_or_none(
    tmp_path: Path, version: str
) -> None:
    async with sim_served(tmp_path, version) as sim:
        await sim.initialize(experimentalApi=True)
        signed_out = await sim.call("account/read")
        login(tmp_path)
        signed_in = await sim.call("account/read", {})
        (tmp_path / CREDENTIALS_FILE).write_text(json.dumps({"state": "apiKey"}))
        stored_key = await sim.call("account/read")
        logout(tmp_path)
        logged_out = await sim.call("account/read")
    assert signed_out == {"state": "loggedOut", "credentialRequired": True}
    assert list(signed_in) == ["state", "label", "credentialRequired"]
    assert signed_in == {"state": "accountLogin", "label": LOGIN_LABEL, "credentialRequired": True}
    assert stored_key == {"state": "apiKey", "label": "stored key", "credentialRequired": True}
    assert logged_out == signed_out


@pytest.mark.parametrize("content", ["not json", "[]", '{"state": "bogus"}', '{"label": "x"}'])
async def test_an_unusable_credential_file_is_no_credential(tmp_path: Path, content: str) -> None:
    (tmp_path / CREDENTIALS_FILE).write_text(content)
    async with sim_served(tmp_path, "1.2.1") as sim:
        await sim.initialize(experimentalApi=True)
        assert (await sim.call("account/read"))["state"] == "loggedOut"


async def test_an_exported_key_wins_and_is_never_shown(tmp_path: Path) -> None:
    key = "mk-sim-test-0123456789abcdef"
    login(tmp_path)
    async with sim_hosted(tmp_path, version="1.4.2", env={"META_API_KEY": key}, strict=True) as sim:
        await sim.initialize(experimentalApi=True)
        found = await sim.call("account/read")
    assert found == {"state": "envKey", "label": "META_API_KEY", "credentialRequired": True}
    assert key not in json.dumps(found)
