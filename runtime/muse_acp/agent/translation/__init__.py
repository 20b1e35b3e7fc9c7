"""MSP to ACP and back: what Muse says becomes what the client reads, and the reverse.

``translate`` turns a turn's MSP notifications into ``session/update`` payloads (``event_kinds``
says which events each part handles, ``chunk_frames`` encodes text chunks fast),
``exec_translate`` does it for the legacy exec backend, ``prompt_content`` and ``prompt_params``
turn ACP prompt content into MSP input, and ``goal_state``, ``usage``, ``status`` and
``view_events`` tell the rest of what Muse reports.
"""

__all__: list[str] = []
