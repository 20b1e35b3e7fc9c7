"""A settings request keeps what changed while it waited for Muse to confirm a model."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import anyio.lowlevel
import pytest

from muse_acp.agent.context import AgentContext
from muse_acp.agent.methods.settings import handle_set_config_option
from muse_acp.agent.options.config_options import (
    ModelCatalog,
    ModelChoice,
    SessionSettings,
    config_options,
)
from muse_acp.config import AdapterConfig
from muse_acp.rpc import RequestContext
from muse_acp_wire import acp, msp

from .fakes import add_session

pytestmark = pytest.mark.anyio

SESSION = "s-1"
WAIT = 5.0


def _catalog() -> ModelCatalog:
    blank = dict.fromkeys(
        ("profileId", "releaseDate", "description", "contextLimit", "outputLimit", "cost")
    )
    rows = [
        {"modelId": name, "displayLabel": name, "providerId": "meta", "isActive": False}
        | blank
        | {"isDefault": default}
        for name, default in (("spark-1", True), ("spark-2", False))
    ]
    return ModelCatalog.from_result(
        msp.ModelListResult.model_validate({"source": "providerCatalog", "models": rows})
    )


async def test_a_mode_taken_in_while_a_model_is_confirmed_survives_the_model_change(
    tmp_path: Path,
) -> None:
    ctx = AgentContext(AdapterConfig(muse_bin=str(tmp_path / "no-muse"), data_dir=tmp_path))
    ctx.catalog = _catalog()
    session = add_session(ctx, SESSION)
    session.settings = SessionSettings(model=ModelChoice("spark-1", "meta"))
    await ctx.preferences.write_created(SESSION, "/")
    [menu] = [o for o in config_options(session.settings, ctx.catalog) if o.id == "model"]
    values = [o.value for o in menu.options if isinstance(o, acp.SessionConfigSelectOption)]
    wanted = next(v for v in values if "spark-2" in v)

    async def confirm(choice: ModelChoice, shown: str, kept: str) -> None:
        # Muse reports another approval mode while it switches models (session_state._adopt).
        session.settings = SessionSettings(mode_id="autoApprove", model=session.settings.model)
        await anyio.lowlevel.checkpoint()

    session.execution.confirm_model = confirm  # type: ignore[method-assign]
    request = RequestContext(1, "session/set_config_option")
    request.declare_changes_state()
    params = acp.SetSessionConfigOptionRequest(session_id=SESSION, config_id="model", value=wanted)
    with anyio.fail_after(WAIT):
        response = await handle_set_config_option(ctx, params, request)
    assert session.settings.mode_id == "autoApprove"
    assert session.settings.model == ModelChoice("spark-2", "meta")
    answered = {o.id: o.current_value for o in response.config_options}
    assert (answered["mode"], answered["model"]) == ("autoApprove", wanted)
    stored = json.loads(ctx.preferences.path_for(SESSION).read_text())["settings"]
    assert stored["modeId"] == "autoApprove", stored
