"""Telling Muse that the user has one of its questions in front of them (``userInput/engaged``).

Contract: ``engage`` sends ``userInput/engaged`` for a question about to be shown as a form,
where the host takes it (the ``questionEngaged`` feature, Muse 1.4.4 on): Muse then disarms the
countdown after which it would answer a timed question for the user. ACP does not say when a
user starts on a form, so the form being put to a client that shows forms stands for it: an
answer being typed is never overtaken by Muse's own. A client that cannot show forms is not
engaged (its question is withdrawn). Best effort: a host gone is the turn's to notice.
"""

from __future__ import annotations

import logging
from typing import Final

from muse_acp.host.client import MspHost
from muse_acp.rpc import ConnectionClosed
from muse_acp_wire import msp

__all__ = ["engage"]

logger: Final = logging.getLogger("muse_acp.agent")


async def engage(host: MspHost | None, session_id: str, user_input_id: str) -> None:
    """Send ``userInput/engaged`` for the question, where ``host`` takes it."""
    if host is None or not host.features.has("questionEngaged"):
        return
    params = msp.UserInputEngagedParams(session_id=session_id, user_input_id=user_input_id)
    try:
        await host.notify("userInput/engaged", params)
    except ConnectionClosed:
        logger.debug("userInput/engaged for %s not sent: the host went away", user_input_id)
