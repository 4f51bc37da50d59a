"""Datasets and dataset items: upserts, reads, and bodies validated as the server does."""

from __future__ import annotations

import pytest
from langfuse.api.commons.errors.not_found_error import NotFoundError
from langfuse.api.core.api_error import ApiError as LangfuseApiError

from bench_pipeline_tests.support.langfuse_clients import raw


def test_dataset_and_items_upsert_and_read_back(standin, lf):
    name = "bench/suite one"  # slash and space exercise the SDK's URL encoding
    first = lf.create_dataset(name=name, description="v1", metadata={"suite": "one"})
    again = lf.create_dataset(name=name, description="v2", metadata={"suite": "one"})
    assert first.id == again.id and again.description == "v2"
    assert list(standin.datasets) == [name]

    for _ in range(2):  # publishing twice must not duplicate
        for n in range(3):
            lf.create_dataset_item(
                dataset_name=name, id=f"suite-one:task-{n}:1",
                input={"task": n}, expected_output={"answer": n}, metadata={"attempt": 1},
            )
    assert sorted(standin.dataset_items) == [f"suite-one:task-{n}:1" for n in range(3)]
    assert all(i["datasetId"] == first.id for i in standin.dataset_items.values())

    ds = lf.get_dataset(name, fetch_items_page_size=2)  # forces pagination over 2 pages
    assert ds.id == first.id
    assert sorted(i.id for i in ds.items) == sorted(standin.dataset_items)
    item = next(i for i in ds.items if i.id == "suite-one:task-1:1")
    assert item.input == {"task": 1} and item.expected_output == {"answer": 1} and item.dataset_name == name
    list_calls = standin.requests_to("/api/public/dataset-items", "GET")
    assert [r.query["page"] for r in list_calls] == ["1", "2"] and list_calls[0].query["datasetName"] == name
    assert standin.requests_to("/api/public/v2/datasets/", "GET")[0].path == "/api/public/v2/datasets/bench%2Fsuite%20one"

    assert lf.api.dataset_items.get("suite-one:task-2:1").input == {"task": 2}
    with pytest.raises(NotFoundError):
        lf.get_dataset("missing")
    with pytest.raises(NotFoundError):  # the dataset must exist before its items
        lf.create_dataset_item(dataset_name="missing", id="x", input={})
    lf.create_dataset(name="other")
    with pytest.raises(LangfuseApiError) as err:  # ids are project-unique (dataset-items.ts: 409)
        lf.create_dataset_item(dataset_name="other", id="suite-one:task-0:1", input={})
    assert err.value.status_code == 409


def test_bodies_are_validated_as_the_server_does(standin):
    with raw(standin) as c:  # types/datasets.ts PostDatasetsV2Body, PostDatasetItemsV1Body
        r = c.post("/api/public/v2/datasets", json={"description": "no name"})
        assert r.status_code == 400 and "name" in r.json()["message"]
        c.post("/api/public/v2/datasets", json={"name": "ok"}).raise_for_status()
        r = c.post("/api/public/dataset-items", json={"datasetName": 5})
        assert r.status_code == 400 and "datasetName" in r.json()["message"]
        r = c.post("/api/public/dataset-items", json={"dataset_name": "ok"})  # python name, not wire name
        assert r.status_code == 400 and "datasetName" in r.json()["message"]
        r = c.post("/api/public/dataset-items", json={"datasetName": "ok", "status": "DELETED"})
        assert r.status_code == 400
        r = c.post("/api/public/dataset-items", json={"datasetName": "ok", "id": "x" * 256})
        assert r.status_code == 400
        r = c.post("/api/public/scores", content=b"not json", headers={"content-type": "application/json"})
        assert r.status_code == 400
    assert standin.dataset_items == {}
