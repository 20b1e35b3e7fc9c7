"""The muse-acp binding generator: JSON Schemas in ``spec/`` become models in ``generated/``.

Run it as ``python -m codegen generate|check|diff|lock`` (or through ``nox -s codegen`` and
``nox -s codegen_check``). The driver is deterministic: the same spec files and the same pinned
datamodel-code-generator always produce byte-identical modules.
"""
