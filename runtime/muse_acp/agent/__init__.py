"""The ACP agent side of muse-acp: how a Muse host's sessions and turns appear to an ACP client.

Modules import downward only (see ``tests/agent/test_structure.py``): pure protocol modules
(``failures``, ``config_options``, ``permissions``, ``questions``, ``prompt_content``,
``progress``, ``output_cards``, ``file_changes`` (which also reads the files that tools are
about to change), ``tool_cards``, ``card_states``, ``translate``, ``capabilities``, ``titles``,
``preferences``), then what ``initialize`` needs (``startup``), then host keeping (``hosts``),
then a session's parts (``execution``,
``steering_queue``, ``work``, ``interactions``, ``turn``), then ``session`` and ``context``,
then the features and handlers, their tables (``routes``), and ``server`` on top, which
imports ``routes`` only once ``initialize`` is answered.
"""

__all__: list[str] = []
