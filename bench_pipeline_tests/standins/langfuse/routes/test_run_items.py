"""Dataset run items: nothing stored in v4, a run created and never de-duplicated in v3,
and the body keys each server version accepts."""

from __future__ import annotations

import uuid

import httpx

from bench_pipeline_tests.support.langfuse_clients import SEED_ROOT, SEED_TRACE, raw, v3
from standins.langfuse import LangfuseStandIn


def test_v4_dataset_run_items_store_nothing_and_legacy_reads_are_absent(standin, lf):
    dataset = lf.create_dataset(name="suite")
    lf.create_dataset_item(dataset_name="suite", id="suite:t1:1", input={"t": 1})
    with raw(standin) as c:
        r = c.post("/api/public/dataset-run-items", json={"runName": "run-1", "datasetItemId": "suite:t1:1",
                                                          "traceId": SEED_TRACE})
        assert r.status_code == 200 and r.json()["datasetRunId"] == standin.experiment_id(dataset.id, "run-1")
        assert standin.dataset_run_items == [] and standin.dataset_runs == {}
        for path in ("/api/public/dataset-run-items", "/api/public/scores", "/api/public/v2/scores",
                     "/api/public/observations"):  # rejectInEventsOnlyMode: 404, before authentication
            assert httpx.get(f"{standin.base_url}{path}").status_code == 404
    assert standin.unknown_requests() == []


@v3
def test_v3_dataset_run_items_create_the_run_and_never_deduplicate(standin, lf):
    dataset = lf.create_dataset(name="suite")
    lf.create_dataset_item(dataset_name="suite", id="suite:t1:1", input={"t": 1})
    body = {"runName": "run-1", "runDescription": "d", "metadata": {"m": 1}, "datasetItemId": "suite:t1:1",
            "traceId": SEED_TRACE, "observationId": SEED_ROOT, "createdAt": "2026-11-30T10:00:00.000Z"}
    with raw(standin) as c:
        params = {"datasetId": dataset.id, "runName": "run-1"}
        assert c.get("/api/public/dataset-run-items", params=params).status_code == 404  # no run yet
        first = c.post("/api/public/dataset-run-items", json=body).json()
        second = c.post("/api/public/dataset-run-items", json=body).json()
        assert first["datasetRunId"] == second["datasetRunId"] and first["id"] != second["id"]
        listed = c.get("/api/public/dataset-run-items", params=params).json()
        assert [r["id"] for r in listed["data"]] == [first["id"], second["id"]]  # a duplicate, as on the server
        assert c.post("/api/public/dataset-run-items", json={**body, "extra": 1}).status_code == 400  # .strict()
        assert c.post("/api/public/dataset-run-items", json={**body, "datasetItemId": "nope"}).status_code == 404
        no_link = {k: v for k, v in body.items() if k not in ("traceId", "observationId")}
        assert c.post("/api/public/dataset-run-items", json=no_link).status_code == 400
    (run,) = standin.dataset_runs.values()
    assert (run["name"], run["createdAt"], run["metadata"]) == ("run-1", "2026-11-30T10:00:00.000Z", {"m": 1})
    assert len(standin.run_items_of("run-1")) == 2


def test_v3_before_3_160_refuses_created_at_on_run_items():
    with LangfuseStandIn(public_key=f"pk-lf-{uuid.uuid4().hex[:12]}", mode="v3", server_version="3.150.0") as server:
        with raw(server) as c:
            c.post("/api/public/v2/datasets", json={"name": "s"}).raise_for_status()
            c.post("/api/public/dataset-items", json={"datasetName": "s", "id": "i"}).raise_for_status()
            body = {"runName": "r", "datasetItemId": "i", "traceId": SEED_TRACE}
            assert c.post("/api/public/dataset-run-items", json={**body, "createdAt": "2026-11-30T10:00:00Z"}
                          ).status_code == 400
            assert c.post("/api/public/dataset-run-items", json=body).status_code == 200
