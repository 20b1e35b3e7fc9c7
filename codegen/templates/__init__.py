"""Generated wire models for muse-acp; written by ``python -m codegen generate``, do not edit.

Modules:

* ``muse_acp_wire.acp``: ACP v1 as muse-acp speaks it, plus the Muse ACP extensions.
* ``muse_acp_wire.msp_<major>_<minor>_<patch>``: MSP as served by that Muse host version.

Each module holds Pydantic models named after the schema definitions and frozen method tables
(``<SIDE>_REQUESTS`` / ``<SIDE>_NOTIFICATIONS``) mapping wire methods to those models. The
package depends on pydantic alone. Hand-written code customises these models in ``muse_acp``.
"""
