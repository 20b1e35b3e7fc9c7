"""The fake model: turns played from a prompt's ``sim:`` directives, step by step.

Contract: ``runner`` plays one turn from ``turn/started`` to ``turn/completed``; ``turn`` emits
its items; ``outputs`` and ``tools`` make its tool calls, ``asks`` its approvals and
``questions`` its questions to the user; ``notices`` reports status, usage, names, view health
and gaps; ``workflows`` keeps work that outlives its turn; ``recovery`` closes a turn a dead
process left open. Built on ``state``, ``script`` and ``options``; never imported by them.
"""
