"""Asset checks: the data quality of every run (``data_quality_checks.CHECKS``), with a severity that says
what it means.

The per-run step reports them itself, per partition, from the data it has just derived
(``data_quality_checks.run_checks``): nothing is loaded or validated a second time. ERROR: the run's
numbers cannot be trusted as they are; WARN: the run stays measurable but deserves a look
(see ``data_quality_checks.run_checks``).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import dagster as dg
from dagster_shared.utils.warnings import PreviewWarning

from ..partitions import runs_partitions
from ..data_quality_checks import CHECKS, CheckOutcome

# Per-run checks need partitioned asset checks, a "preview" feature of Dagster 1.13
# (docs/operations.md).
warnings.filterwarnings("ignore", message="Specifying a partitions_def on an AssetCheckSpec", category=PreviewWarning)

CHECK_SPECS = [
    dg.AssetCheckSpec(spec.name, asset=spec.asset, description=spec.description, partitions_def=runs_partitions)
    for spec in CHECKS
]
_ASSET_OF = {spec.name: spec.asset for spec in CHECKS}
_SEVERITY = {"ERROR": dg.AssetCheckSeverity.ERROR, "WARN": dg.AssetCheckSeverity.WARN}


def check_evaluations(partition: str, outcomes: list[CheckOutcome]) -> Iterator[dg.AssetCheckEvaluation]:
    """One partition's check outcomes as Dagster check evaluations."""
    for o in outcomes:
        yield dg.AssetCheckEvaluation(
            asset_key=dg.AssetKey(_ASSET_OF[o.name]),
            check_name=o.name,
            passed=o.passed,
            severity=_SEVERITY[o.severity],
            description=o.description,
            metadata={"count": o.count, "examples": dg.MetadataValue.json(o.examples)},
            partition=partition,
        )
