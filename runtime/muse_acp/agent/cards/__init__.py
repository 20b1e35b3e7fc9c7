"""A tool call as the client sees it: the card of each Muse item that does work.

``tool_cards`` (pure functions from an item to a tool call), ``card_states`` (what each card of
a turn showed, so it only moves forward), ``progress``, ``file_changes``, ``output_cards`` and
``output_reference`` (stored output on a card), ``delegated_titles``. Knows no host process,
session or turn.
"""

__all__: list[str] = []
