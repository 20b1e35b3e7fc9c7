"""Muse's native approval policy, set on a session's host when the host starts.

Contract: Muse has no ``serve`` flag for its approval policy; it is chosen on the wire with
``session/setApprovalMode`` and Muse keeps it with the session. ``apply_policy`` sends the
session's chosen policy (the ``approvalPolicy`` safety option) right after the session is
attached to a new host, so a change made between turns takes effect with the next host start,
like the flag options; a session whose policy was never chosen sends nothing and keeps whatever
Muse has. A host that refuses the policy fails the start (``preparing``), naming the policy, so
the user can choose another before the next prompt; nothing was submitted. ``set_back`` sets a
Muse that another client left in ``allowAll`` back to the session's policy (or Muse's default)
when the safety rule refuses ``allowAll`` (see ``execution``); where the policy cannot be set
(the Muse does not offer it), the turn is refused, saying how to resolve it.
"""

from __future__ import annotations

from typing import Final, TypeGuard, get_args

from muse_acp.agent.errors import failures
from muse_acp.agent.hosting.hosts import ask
from muse_acp.agent.options.safety import APPROVAL_POLICY, SafetyChoices, safe_policy
from muse_acp.host.client import MspHost
from muse_acp.ids import new_uuid7
from muse_acp.rpc import INVALID_PARAMS, INVALID_REQUEST, RpcError
from muse_acp_wire import msp

__all__ = ["apply_policy", "set_back"]

_MODES: Final = frozenset(get_args(msp.ApprovalMode))


def _is_mode(value: str) -> TypeGuard[msp.ApprovalMode]:
    return value in _MODES


def _refused(policy: str, error: RpcError) -> RpcError:
    failure = failures.Failure("approvalPolicyRefused", "host", retryable=False, phase="preparing")
    return failure.error(
        f"Muse refused the approval policy {policy!r}: {failures.sentence(error.message)} "
        "Choose another Muse approval policy for this session, then send the prompt again.",
        INVALID_PARAMS,
    )


async def apply_policy(
    host: MspHost, session_id: str, choices: SafetyChoices, budget: float
) -> str | None:
    """Set the session's chosen approval policy on ``host`` (see the module contract); the
    policy set, or None when none was.

    Raises:
        RpcError: the host refused the policy, or could not be asked within ``budget``.
    """
    if not choices.chosen(APPROVAL_POLICY) or APPROVAL_POLICY not in choices.offer:
        return None
    return await _set(host, session_id, choices.value(APPROVAL_POLICY), budget)


async def set_back(host: MspHost, session_id: str, choices: SafetyChoices, budget: float) -> str:
    """Set Muse back from ``allowAll`` to the session's policy or Muse's default; the policy set.

    Raises:
        RpcError: the policy cannot be set on this Muse (``unsafeSafetyCombination``), the host
            refused it, or could not be asked within ``budget``.
    """
    if APPROVAL_POLICY not in choices.offer:
        failure = failures.Failure(
            "unsafeSafetyCombination", "host", retryable=False, phase="preparing"
        )
        raise failure.error(
            "muse-acp did not run this prompt: another Muse client set Muse to allow every "
            "action unasked, this session's sandbox is disabled, and this Muse does not offer "
            "setting the approval policy back. Enable the sandbox, or set Muse's "
            "approval mode back in that client, then send the prompt again.",
            INVALID_REQUEST,
        )
    policy = await _set(host, session_id, safe_policy(choices), budget)
    return policy or safe_policy(choices)


async def _set(host: MspHost, session_id: str, policy: str, budget: float) -> str | None:
    if not _is_mode(policy):  # the option offers only Muse's own modes
        return None
    await ask(
        host,
        "session/setApprovalMode",
        msp.SessionSetApprovalModeParams(
            command_id=new_uuid7(), session_id=session_id, mode=policy
        ),
        msp.SessionSetApprovalModeResult,
        phase="preparing",
        budget=budget,
        refusal=lambda error: _refused(policy, error),
    )
    return policy
