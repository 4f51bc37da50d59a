"""What the main command (main.py) processes, and in which order: why a run processed
before is processed again (its folder or the formula changed), and its Dagster runs ordered
so that a run's default baseline is processed before it."""

from __future__ import annotations


def in_start_order(batches: list[list[str]], settings, folders: list) -> list[list[str]]:
    """The stretches of runs to process (each one Dagster run), the one holding the
    earliest-started run first, as the default baseline rule orders runs (manifest
    ``started_at``, then run id: baselines.RunInfo.order): a run's default baseline, an
    earlier run, is then processed before it even when its stretch comes later in the
    partition order (a late run, new folders beside runs processed again), and the run is
    compared with it at once instead of again after. ``folders``: the runs' folders (their
    manifests are read)."""
    from .baselines import run_index

    if len(batches) < 2:
        return batches
    order = {r.run_id: r.order for r in run_index(settings.runs_root, settings.output_root, folders=folders)}
    return sorted(batches, key=lambda batch: min(order.get(key, ("", key)) for key in batch))


def processed_again(instance, fingerprints: dict[str, str]) -> dict[str, str]:
    """{run id: why it is processed again} for the runs of ``{run id: fingerprint}`` whose
    last stage was materialized before from another data version (``<folder fingerprint>@
    <formula version>``, ``run_stages.data_version``): the formula changed since (from the
    version recorded to this one), its folder changed, or both. A run never processed, or
    processed before data versions were recorded, is not named."""
    import dagster as dg

    from .assets.partition_work import STAGES
    from .dagster_internals import DATA_VERSION_TAG, latest_tags_by_partition
    from .formula import FORMULA_VERSION

    if not fingerprints:
        return {}
    latest = latest_tags_by_partition(instance, dg.AssetKey(STAGES[-1]), [DATA_VERSION_TAG], list(fingerprints))
    why: dict[str, str] = {}
    for key, tags in latest.items():
        stored, _, formula = (tags.get(DATA_VERSION_TAG) or "").partition("@")
        if not formula:
            continue
        reasons = []
        if stored != fingerprints[key]:
            reasons.append("its folder changed since it was processed (manifest.json, suite.json or its results file)")
        if formula != FORMULA_VERSION:
            reasons.append(f"formula changed from {formula} to {FORMULA_VERSION}")
        if reasons:
            why[key] = "; ".join(reasons)
    return why
