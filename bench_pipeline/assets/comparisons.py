"""Which runs' comparisons are behind their inputs now (comparison_inputs.py), read from the
runs root, the output root, the pinned baselines and the instance: what the comparison
sensor and the main command recompute, and what the UI shows as behind.

A comparison is recomputed by the ``process_run`` job on its run: a run whose stages are
current is not derived again, its comparison and reports are made from its stored values
(``PartitionJob.stored_stages``, ``pipeline.compare_stored``), and the cross-run pages that
show them follow at the next refresh.
"""

from __future__ import annotations

import dagster as dg

from .. import object_store
from ..baselines import as_processed, load_pins, pins_file, run_index
from ..comparison_inputs import Behind, ComparisonInputs, comparisons_behind
from ..dagster_internals import DATA_VERSION_TAG, latest_tags_by_partition
from ..partitions import runs_partitions
from ..resources import PipelineSettings
from ..run_folders import RunFolder, scan
from .run_stages import data_version, stored_versions

#: The asset whose materializations record each comparison's inputs (their data version).
COMPARISON_ASSET = dg.AssetKey("run_comparison")


def behind_now(instance: dg.DagsterInstance, settings: PipelineSettings,
               folders: list[RunFolder] | None = None, processing: frozenset[str] = frozenset()) -> list[Behind]:
    """The comparisons behind their inputs now, in run-id order (``folders``: the runs root's
    scan when already made). ``processing``: runs about to be processed (the main command's),
    taken as processed and current, so that the runs whose comparison they change are found
    before, and processed with them (each after its baseline); they are not listed themselves."""
    with object_store.shared(settings.runs_root, settings.output_root):
        folders = folders if folders is not None else scan(settings.runs_root)
        existing = set(instance.get_dynamic_partitions(runs_partitions.name))
        keys = [f.run_id for f in folders if f.run_id in existing]
        if not keys:
            return []
        tags = latest_tags_by_partition(instance, COMPARISON_ASSET, [DATA_VERSION_TAG], keys)
        recorded = {key: inputs for key, t in tags.items()
                    if (inputs := ComparisonInputs.from_version(key, t.get(DATA_VERSION_TAG, ""))) is not None}
        if not set(recorded) - processing:
            return []
        stored_now = stored_versions(instance, keys)
        runs = as_processed(run_index(settings.runs_root, settings.output_root, folders=folders), stored_now, processing)
        current = {f.run_id: data_version(f.fingerprint) for f in folders}
        stored = {**stored_now, **{k: current[k] for k in processing if k in current}}
        recorded = {k: v for k, v in recorded.items() if k not in processing}
        return comparisons_behind(runs, load_pins(pins_file()), recorded, stored, current)


def behind_markdown(behind: list[Behind], limit: int = 50) -> str:
    """The comparisons behind, one line each with why (the first ``limit``)."""
    if not behind:
        # an observation, recorded when the set changes: true as of its time, not later
        return ("Every comparison followed its current inputs when this was recorded (the comparison sensor "
                "looks again at each tick: a run processed since may put one behind until then).")
    lines = [f"- `{b.run_id}`: {b.why}" for b in behind[:limit]]
    if len(behind) > limit:
        lines.append(f"- ... and {len(behind) - limit} more")
    return "\n".join(lines)
