"""The formula version: one constant that changes whenever any calculation changes.

It is written into every metrics.json and is the Dagster ``code_version`` of every asset
whose output depends on a formula, so that changing it marks every processed run stale
and a backfill re-computes them (see docs/operations.md).

Bump rule: change this string in the same commit as any change to a formula in the
``attempt_metrics`` package, ``task_groups``, ``capability``, ``stats``, ``comparison``,
``repeats`` or ``planning`` (comparison.json, repeats.json and their planning are formulas
too), to a field's
declaration in ``measured_fields`` (its source, kind, legacy key or positivity decide its
value; a new field is a new formula), or to the legacy outcome rules of ``vocabulary``
(the date and a short word are enough; it only has to differ).
"""

FORMULA_VERSION = "2026-12-07.2"
