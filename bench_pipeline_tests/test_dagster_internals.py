"""The Dagster internals the project uses: each still there, and still doing what Dagster does.

A Dagster upgrade that renames or changes one of them fails here, by name, rather than as
staleness that silently stops working or a backfill command that breaks.
"""

from __future__ import annotations

import importlib
import os
from importlib.metadata import version

import dagster as dg
import pytest

from bench_pipeline import dagster_internals
from bench_pipeline.dagster_internals import (
    CHECKED_WITH_DAGSTER,
    execute_graphql_in_process,
    latest_tags_by_partition,
    local_sqlite_instance,
    mark_run_failed,
    provenance_tags,
    run_process,
)

#: Every private name dagster_internals imports, by module.
PRIVATE_NAMES = {
    "dagster._core.definitions.data_version": ("CODE_VERSION_TAG", "DATA_VERSION_TAG",
                                               "DATA_VERSION_IS_USER_PROVIDED_TAG", "NULL_EVENT_POINTER",
                                               "get_input_data_version_tag", "get_input_event_pointer_tag"),
    "dagster._core.remote_origin": ("InProcessCodeLocationOrigin",),
    "dagster._core.types.loadable_target_origin": ("LoadableTargetOrigin",),
    "dagster._core.workspace.context": ("WorkspaceProcessContext",),
    "dagster._core.workspace.load_target": ("InProcessWorkspaceLoadTarget",),
    "dagster_graphql.cli": ("execute_query",),
    "dagster._core.storage.runs.sqlite.sqlite_run_storage": ("SqliteRunStorage",),
}


@pytest.mark.parametrize("module", sorted(PRIVATE_NAMES))
def test_every_private_name_is_still_there(module):
    loaded = importlib.import_module(module)
    missing = [name for name in PRIVATE_NAMES[module] if not hasattr(loaded, name)]
    assert not missing, (f"Dagster {version('dagster')} has no {module}.{', '.join(missing)} "
                         f"(checked with {CHECKED_WITH_DAGSTER}): see bench_pipeline/dagster_internals.py")


def test_the_checked_version_is_the_pinned_one():
    assert version("dagster") == CHECKED_WITH_DAGSTER, (
        f"Dagster {version('dagster')} is installed; bench_pipeline/dagster_internals.py was checked with "
        f"{CHECKED_WITH_DAGSTER}: check each name it uses, then update CHECKED_WITH_DAGSTER")


def test_provenance_tags_of_a_stage_with_an_upstream():
    assert provenance_tags("7", "abc@7", dg.AssetKey("raw_results")) == {
        "dagster/code_version": "7",
        "dagster/data_version": "abc@7",
        "dagster/data_version_is_user_provided": "true",
        "dagster/input_data_version/raw_results": "abc@7",
        "dagster/input_event_pointer/raw_results": "NULL",
    }


def test_provenance_tags_of_a_first_stage_and_without_a_data_version():
    assert provenance_tags("7", "abc@7", None) == {
        "dagster/code_version": "7", "dagster/data_version": "abc@7", "dagster/data_version_is_user_provided": "true"}
    assert provenance_tags("7", None, dg.AssetKey("raw_results")) == {"dagster/code_version": "7"}


def test_dagster_reads_the_provenance_tags_as_written():
    """Dagster's public reader of provenance (DataProvenance) sees the versions these tags name."""
    upstream = dg.AssetKey("raw_results")
    tags = provenance_tags("7", "abc@7", upstream)
    provenance = dg.DataProvenance.from_tags(tags)
    assert provenance == dg.DataProvenance("7", {upstream: dg.DataVersion("abc@7")}, {upstream: None}, True)


def test_provenance_tags_are_the_ones_dagster_writes_for_an_output():
    """The same tag names as Dagster's own materialization of an asset whose output gives its
    data version, from an upstream asset (only the input event's storage id differs: Dagster
    records it, the per-run step has none to give)."""
    @dg.asset
    def first():
        return dg.Output(1, data_version=dg.DataVersion("v1"))

    @dg.asset(deps=[first], code_version="7")
    def second():
        return dg.Output(2, data_version=dg.DataVersion("v2"))

    with dg.instance_for_test() as instance:
        assert dg.materialize([first, second], instance=instance).success
        written = instance.get_latest_materialization_event(dg.AssetKey("second")).asset_materialization.tags
    ours = provenance_tags("7", "v2", dg.AssetKey("first"))
    assert set(ours) <= set(written)
    pointer = "dagster/input_event_pointer/first"
    assert {k: v for k, v in written.items() if k in ours and k != pointer} == {
        "dagster/code_version": "7", "dagster/data_version": "v2", "dagster/data_version_is_user_provided": "true",
        "dagster/input_data_version/first": "v1"}
    assert written[pointer].isdigit()


def test_latest_tags_by_partition_gives_each_partitions_latest_value():
    key = dg.AssetKey("langfuse_publication")
    with dg.instance_for_test() as instance:
        for partition, data_version in (("run-1", "a"), ("run-2", "b"), ("run-1", "c")):
            instance.report_runless_asset_event(dg.AssetMaterialization(
                key, partition=partition, tags=provenance_tags("7", data_version, None)))
        latest = latest_tags_by_partition(instance, key, ["dagster/data_version"], ["run-1", "run-2", "run-3"])
    assert latest == {"run-1": {"dagster/data_version": "c"}, "run-2": {"dagster/data_version": "b"}}



def test_latest_tags_of_many_partitions_are_those_of_the_asked_ones_only(monkeypatch):
    """More than LISTED_PARTITIONS asked: every partition's latest is read, the asked kept."""
    key = dg.AssetKey("capability_aggregates")
    monkeypatch.setattr(dagster_internals, "LISTED_PARTITIONS", 2)
    with dg.instance_for_test() as instance:
        for partition, data_version in (("run-1", "a"), ("run-2", "b"), ("run-1", "c"), ("gone", "d"), ("run-4", "e")):
            instance.report_runless_asset_event(dg.AssetMaterialization(
                key, partition=partition, tags=provenance_tags("7", data_version, None)))
        asked = ["run-1", "run-2", "run-3", "run-4"]
        latest = latest_tags_by_partition(instance, key, ["dagster/data_version"], asked)
        monkeypatch.setattr(dagster_internals, "LISTED_PARTITIONS", 200)
        named = latest_tags_by_partition(instance, key, ["dagster/data_version"], asked)
    assert latest == named == {"run-1": {"dagster/data_version": "c"}, "run-2": {"dagster/data_version": "b"},
                               "run-4": {"dagster/data_version": "e"}}

def test_graphql_in_process_answers_from_the_loaded_code_location(tmp_path, monkeypatch):
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    answer = execute_graphql_in_process(
        [("bench_pipeline.definitions", ".", "bench_pipeline")],
        "{ repositoriesOrError { ... on RepositoryConnection { nodes { location { name } jobs { name } } } } }",
        {},
    )
    (repository,) = answer["data"]["repositoriesOrError"]["nodes"]
    assert repository["location"]["name"] == "bench_pipeline"
    assert "process_run" in {job["name"] for job in repository["jobs"]}


#: Dagster warns of a code location that does not load, with both stack traces (30 lines in
#: the warning summary); here that location is the point of the test.
@pytest.mark.filterwarnings("ignore:Error loading repository location x:UserWarning")
def test_graphql_in_process_names_a_location_that_does_not_load(tmp_path, monkeypatch):
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    with pytest.raises(RuntimeError, match="the code location did not load: .*no_such_module"):
        execute_graphql_in_process([("no_such_module", ".", "x")], "{ __typename }", {})



#: Opens the default instance in a fresh process after importing INSTANCE_STORAGE_MODULES and
#: prints the modules that opening it still imported.
OPEN_INSTANCE = """
import importlib, json, sys
import dagster as dg
from bench_pipeline.dagster_internals import INSTANCE_STORAGE_MODULES
for name in INSTANCE_STORAGE_MODULES:
    importlib.import_module(name)
before = set(sys.modules)
with dg.DagsterInstance.get() as instance:
    instance.get_runs_count()
print(json.dumps(sorted(set(sys.modules) - before)))
"""


def test_the_instance_storage_modules_are_all_that_opening_an_instance_imports(tmp_path):
    """After INSTANCE_STORAGE_MODULES, opening the SQLite instance of deploy/dagster.local.yaml
    imports none of the storage, SQLAlchemy or Alembic modules (what made it slow): the list
    still names what the main command's fork server should load ahead."""
    import json
    import os
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    (tmp_path / "home").mkdir()
    shutil.copy(root / "deploy" / "dagster.local.yaml", tmp_path / "home" / "dagster.yaml")
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path / "home")}
    for _ in range(2):  # a new instance (its tables created), then the existing one
        done = subprocess.run([sys.executable, "-c", OPEN_INSTANCE], env=env, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stderr[-3000:]
        new = json.loads(done.stdout.splitlines()[-1])
        heavy = [m for m in new if m.split(".")[0] in ("sqlalchemy", "alembic", "sqlite3")
                 or m.startswith(("dagster._core.storage.runs", "dagster._core.storage.event_log",
                                  "dagster._core.storage.schedules", "dagster._core.run_coordinator",
                                  "dagster._core.launcher"))]
        assert heavy == [], f"opening the instance still imports {heavy}: add their modules to INSTANCE_STORAGE_MODULES"


def test_a_runs_process_is_the_one_that_executed_it_and_marking_it_failed_ends_it(tmp_path):
    @dg.op
    def nothing() -> None:
        pass

    @dg.job
    def one() -> None:
        nothing()

    with dg.instance_for_test(temp_dir=str(tmp_path)) as instance:
        result = one.execute_in_process(instance=instance)
        pid, when = run_process(instance, result.run_id)
        assert pid == os.getpid()
        assert abs(when - instance.get_run_record_by_id(result.run_id).start_time) < 1
        mark_run_failed(instance, result.run_id, "said why")
        assert instance.get_run_by_id(result.run_id).status == dg.DagsterRunStatus.FAILURE
        (failure,) = instance.get_records_for_run(result.run_id, of_type=dg.DagsterEventType.RUN_FAILURE).records
        assert failure.event_log_entry.message == "said why"
        assert run_process(instance, "no-such-run") is None


def test_a_sqlite_instance_is_local_and_an_in_memory_one_is_not(tmp_path):
    with dg.instance_for_test(temp_dir=str(tmp_path)) as instance:
        assert local_sqlite_instance(instance)
    with dg.DagsterInstance.ephemeral() as instance:
        assert not local_sqlite_instance(instance)
