"""A prompt's work on one session, on the backend the connection chose.

``model_turn`` (a turn on the session's Muse host: a prompt, or a command that is a turn by
design), ``early_prompt`` (a prompt's turn started as the prompt is read, when nothing stands
between them) and ``exec_turn`` (one ``muse exec --json`` process per prompt, the legacy
backend).
"""

__all__: list[str] = []
