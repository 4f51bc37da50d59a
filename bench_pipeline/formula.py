"""The formula version: one constant that changes whenever any calculation changes.

It is written into every metrics.json and is the Dagster ``code_version`` of every asset
whose output depends on a formula, so that changing it marks every processed run stale
and a backfill re-computes them (see docs/operations.md).

Bump rule: change this string in the same commit as any change to a formula in
``attempt_metrics``, ``task_groups``, ``capability`` or ``stats`` (the date and a short
word are enough; it only has to differ).
"""

FORMULA_VERSION = "2026-12-01.3"
