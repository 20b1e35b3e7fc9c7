"""Generated wire models for muse-acp; written by ``python -m codegen generate``, do not edit.

Modules:

* ``muse_acp_wire.acp``: ACP v1 as muse-acp speaks it, plus the Muse ACP extensions.
* ``muse_acp_wire.exec_jsonl``: the JSON Lines that ``muse exec --json`` writes (legacy hosts).
* ``muse_acp_wire.msp_<major>_<minor>_<patch>``: MSP as served by that Muse host version.
* ``muse_acp_wire.msp``: the MSP vocabulary, the newest bundle's names.
* ``muse_acp_wire.msp_bundles``: ``BUNDLES``, every MSP bundle by host version (no models).

Each module holds Pydantic models named after the schema definitions, named aliases for the
protocol's unions and enums (``ContentBlock``, ``Item``, ``StopReason``), tables from each tagged
union's tag values to its models (``ITEM_VARIANTS``), frozen method tables (``<SIDE>_REQUESTS`` /
``<SIDE>_NOTIFICATIONS``) mapping wire methods to those models, and for MSP the error registry
(``ERRORS``, ``ERROR_CODES``). The package depends on pydantic alone. Hand-written code
customises these models in ``muse_acp``.
"""
