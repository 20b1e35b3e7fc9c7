"""A session's configuration: its settings, how the client sees and changes them, and how
they are kept.

``config_options`` (modes and config options), ``model_catalog`` and ``efforts`` (the model
menu from Muse's catalog, and each model's reasoning-effort tiers), ``safety`` and
``select_options`` (the safety menus and how a ``select`` option is built), ``titles`` (the
title a user chooses), and the adapter's own preference store (``preferences``,
``preference_files``, ``remembered``). Never starts a host.
"""

__all__: list[str] = []
