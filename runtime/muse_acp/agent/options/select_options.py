"""How a session config option of type ``select`` is built, for every module that offers one.

Contract (pure): ``select_option`` returns an ACP select option with flat values (no groups), in
the order given; its current value must be one of them, which the caller guarantees.
``DEFAULT_VALUE`` is the value of every menu entry that leaves a setting to Muse.
"""

from __future__ import annotations

from typing import Final

from muse_acp_wire import acp

__all__ = ["DEFAULT_VALUE", "SelectValue", "select_option"]

DEFAULT_VALUE: Final = "default"
"""The select value that leaves a setting to the host's own default."""

SelectValue = tuple[str, str, "str | None"]
"""One value of a select: its value, its name, and an optional description."""


def select_option(
    option_id: str,
    name: str,
    category: str | None,
    current: str,
    values: list[SelectValue],
) -> acp.SelectSessionConfigOption:
    """A select option ``option_id`` whose current value is ``current``."""
    options = []
    for value, label, description in values:
        option = acp.SessionConfigSelectOption(value=value, name=label)
        if description is not None:
            option.description = description
        options.append(option)
    select = acp.SelectSessionConfigOption(
        type="select", id=option_id, name=name, current_value=current, options=options
    )
    if category is not None:
        select.category = category
    return select
