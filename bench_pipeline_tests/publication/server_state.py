"""What a publication left in the stand-in, the same way for both server generations.

v4 (events mode): an experiment item is a span carrying ``langfuse.experiment.*`` attributes.
v3 (legacy mode): it is a dataset run item naming the evaluation span (trace + observation).
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime, timedelta

import httpx
from langfuse.api.client import LangfuseAPI

from bench_pipeline.publication.plan import AttemptPlan
from standins.langfuse import LangfuseStandIn

from bench_pipeline_tests.support.publication_standin import SECRET


def legacy(standin: LangfuseStandIn) -> bool:
    return standin.mode.name == "v3"


def item_spans(standin: LangfuseStandIn, run_name: str | None = None) -> dict[str, dict]:
    """dataset item id -> the evaluation span of its experiment item (one run, or the only one)."""
    if legacy(standin):
        items = standin.run_items_of(run_name) if run_name else standin.dataset_run_items
        by_item = {r["datasetItemId"]: standin.spans[(r["traceId"], r["observationId"])] for r in items}
        assert len(by_item) == len(items), "an item has more than one dataset run item"
        return by_item
    spans = standin.experiment_item_spans()
    if run_name:
        spans = [s for s in spans if s["attributes"]["langfuse.experiment.name"] == run_name]
    by_item = {s["attributes"]["langfuse.experiment.item.id"]: s for s in spans}
    assert len(by_item) == len(spans), "an item has more than one experiment item span"
    return by_item


def experiment_items_per_run(standin: LangfuseStandIn) -> dict[str, set[str]]:
    """run name -> dataset item ids of its experiment items."""
    out: dict[str, set[str]] = {}
    if legacy(standin):
        names = {r["id"]: r["name"] for r in standin.dataset_runs.values()}
        for r in standin.dataset_run_items:
            out.setdefault(names[r["datasetRunId"]], set()).add(r["datasetItemId"])
        return out
    for span in standin.experiment_item_spans():
        a = span["attributes"]
        out.setdefault(a["langfuse.experiment.name"], set()).add(a["langfuse.experiment.item.id"])
    return out


def experiment_id_of(standin: LangfuseStandIn, dataset_id: str, run_name: str) -> str:
    if legacy(standin):
        return standin.dataset_runs[(dataset_id, run_name)]["id"]
    return standin.experiment_id(dataset_id, run_name)


def output_of(span: dict) -> dict:
    return json.loads(span["attributes"]["langfuse.observation.output"])


def snapshot(standin: LangfuseStandIn) -> dict:
    """Server state with server-assigned values (dataset/experiment ids, URL) normalised."""
    ds_ids = {d["id"]: "DS" for d in standin.datasets.values()}
    exp_ids = {s["attributes"]["langfuse.experiment.id"]: "EXP" for s in standin.experiment_item_spans()}
    exp_ids.update({r["id"]: "EXP" for r in standin.dataset_runs.values()})

    def norm(v):
        if isinstance(v, str):
            v = v.replace(standin.base_url, "BASE")
            for old, new in {**ds_ids, **exp_ids}.items():
                v = v.replace(old, new)
        return v

    return {
        "datasets": sorted(standin.datasets),
        "dataset_metadata": {k: v["metadata"] for k, v in standin.datasets.items()},
        "items": {k: (v["datasetName"], v["input"], v["expectedOutput"], v["metadata"], v["status"])
                  for k, v in standin.dataset_items.items()},
        "spans": {k: (s["name"], s["parent_span_id"],
                      {a: norm(x) for a, x in s["attributes"].items()}) for k, s in standin.spans.items()},
        "scores": {(k[0], k[2]): (s["name"], s["value"], s["dataType"], s["traceId"], s["observationId"],
                                  norm(s["datasetRunId"])) for k, s in standin.score_rows.items()},
        "run_items": sorted((r["datasetRunName"], r["datasetItemId"], r["traceId"], r["observationId"])
                            for r in standin.dataset_run_items),
    }


def assert_no_duplicates(standin: LangfuseStandIn, n_attempts: int, *, receipts: bool = True,
                         runs: int = 1) -> None:
    per_run = experiment_items_per_run(standin)
    assert sum(len(v) for v in per_run.values()) == n_attempts * runs
    if legacy(standin):
        keys = Counter((r["datasetRunId"], r["datasetItemId"]) for r in standin.dataset_run_items)
        assert max(keys.values(), default=1) == 1, "a dataset run item was posted twice"
    else:
        spans = standin.experiment_item_spans()
        assert len({(s["attributes"]["langfuse.experiment.id"], s["attributes"]["langfuse.experiment.item.id"])
                    for s in spans}) == len(spans)
    assert len({k[0] for k in standin.score_rows}) == len(standin.score_rows)  # one row per score id
    if receipts:
        assert standin.duplicate_span_receipts() == {}


def api(standin: LangfuseStandIn) -> LangfuseAPI:
    return LangfuseAPI(base_url=standin.base_url, username=standin.public_key, password=SECRET)


def raw(standin: LangfuseStandIn) -> httpx.Client:
    return httpx.Client(base_url=standin.base_url, auth=(standin.public_key, SECRET), timeout=5)


def read_back(standin: LangfuseStandIn, dataset_id: str, run_name: str) -> dict:
    """What the generation's read APIs return for one run: item id -> (trace id, observation id,
    the score names read with it), and the run scores' names, all through the server's own reads
    (and their score time windows)."""
    items: dict[str, tuple[str, str, set[str]]] = {}
    run_scores: set[str] = set()
    exp_id = experiment_id_of(standin, dataset_id, run_name)
    if legacy(standin):
        with raw(standin) as c:
            page = 1
            while True:
                body = c.get("/api/public/dataset-run-items", params={
                    "datasetId": dataset_id, "runName": run_name, "page": page, "limit": 100}).json()
                for row in body["data"]:
                    # GET /api/public/traces/{id}: the trace's observations and its scores (window: 1 h)
                    trace = c.get(f"/api/public/traces/{row['traceId']}").json()
                    assert row["observationId"] in {o["id"] for o in trace["observations"]}
                    names = {s["name"] for s in trace["scores"]}
                    obs_scores = c.get("/api/public/v2/scores", params={
                        "observationId": row["observationId"], "limit": 100}).json()["data"]
                    assert {s["name"] for s in obs_scores} <= names  # every score of the observation is read
                    items[row["datasetItemId"]] = (row["traceId"], row["observationId"],
                                                   {s["name"] for s in obs_scores})
                if page >= body["meta"]["totalPages"]:
                    break
                page += 1
            page = 1
            while True:
                body = c.get("/api/public/v2/scores", params={"datasetRunId": exp_id, "page": page,
                                                               "limit": 100}).json()
                run_scores |= {s["name"] for s in body["data"]}
                if page >= body["meta"]["totalPages"]:
                    break
                page += 1
        return {"items": items, "run_scores": run_scores, "experiment_id": exp_id}
    client = api(standin)
    since = datetime.now(UTC) - timedelta(days=30)
    cursor = None
    while True:
        page = client.experiments.list_items(from_start_time=since, experiment_id=exp_id, fields="core,scores",
                                             score_limit=50, limit=100, cursor=cursor)
        for row in page.data:
            items[row.experiment_item_id] = (row.trace_id, row.id, {s.name for s in row.scores})
        cursor = page.meta.cursor
        if not cursor:
            break
    exps = client.experiments.list(from_start_time=since, fields="core,scores", score_limit=50)
    (exp,) = [e for e in exps.data if e.id == exp_id]
    run_scores = {s.name for s in exp.scores}  # at most 50 (scoreLimit): the window is what is checked
    return {"items": items, "run_scores": run_scores, "experiment_id": exp_id, "item_count": exp.item_count}


def expected_score_names(plan_attempt: AttemptPlan) -> set[str]:
    return {name for name, _, _ in plan_attempt.scores}
