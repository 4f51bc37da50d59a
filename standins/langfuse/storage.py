"""What the stand-in holds, in the API's JSON shape (camelCase keys), for reads and assertions.

* ``datasets``: name -> Dataset
* ``dataset_items``: id -> DatasetItem
* ``spans``: (trace_id, span_id) -> decoded span (hex ids, ``attributes`` as Python values)
* ``span_receipts``: Counter (trace_id, span_id) -> how many times the span was received
* ``seeded_spans``: spans added with ``add_trace`` (served by reads, not in ``spans``)
* ``scores``: id -> latest stored score; ``score_rows``: (id, UTC day, name) -> score (what
  reads return); ``score_receipts``: Counter id -> receipts
* ``dataset_runs`` / ``dataset_run_items`` (v3 mode): runs by (dataset id, name), and every
  run item accepted (a duplicate POST is a second entry, as on the real server)
* ``ingestion_events``: Counter event type -> events accepted at /api/public/ingestion
"""

from __future__ import annotations

import threading
import typing
from collections import Counter
from typing import Any, Dict, List, Optional, Tuple

from . import rules
from .spans import A_EXP_ID, A_EXP_ITEM_ID, A_EXP_ITEM_ROOT, SpanKey


class Storage:
    """The stored data and the operations the routes and tests apply to it. ``_lock`` is held
    by the server around each request's handler."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self.clear()

    def clear(self) -> None:
        """Forget all stored data."""
        with self._lock:
            self.datasets: Dict[str, Dict[str, Any]] = {}
            self.dataset_items: Dict[str, Dict[str, Any]] = {}
            self.spans: Dict[SpanKey, Dict[str, Any]] = {}
            self._by_trace: Dict[str, Dict[SpanKey, Dict[str, Any]]] = {}  # spans and seeded spans by trace id
            self.span_receipts: typing.Counter[SpanKey] = Counter()
            self.seeded_spans: Dict[SpanKey, Dict[str, Any]] = {}
            self.scores: Dict[str, Dict[str, Any]] = {}
            self.score_rows: Dict[Tuple[str, str, str], Dict[str, Any]] = {}
            self.score_receipts: typing.Counter[str] = Counter()
            self.dataset_runs: Dict[Tuple[str, str], Dict[str, Any]] = {}  # (dataset id, run name) -> run (v3)
            self.dataset_run_items: List[Dict[str, Any]] = []  # every accepted POST (v3): duplicates show
            self._run_item_visible: Dict[str, float] = {}  # run item id -> when reads see it (monotonic)
            self.ingestion_events: typing.Counter[str] = Counter()  # event type -> accepted events

    # ------------------------------------------------------------------ spans
    def receive_span(self, span: Dict[str, Any]) -> None:
        """A span as exported: it replaces an earlier one with its key; receipts are counted."""
        key = (span["trace_id"], span["span_id"])
        self.spans[key] = span
        self._by_trace.setdefault(span["trace_id"], {})[key] = span
        self.span_receipts[key] += 1

    def seed_span(self, span: Dict[str, Any]) -> None:
        """A span that was there before the code under test ran (kept out of ``spans``)."""
        key = (span["trace_id"], span["span_id"])
        with self._lock:
            self.seeded_spans[key] = span
            self._by_trace.setdefault(span["trace_id"], {}).setdefault(key, span)

    def all_spans(self) -> Dict[SpanKey, Dict[str, Any]]:
        return {**self.seeded_spans, **self.spans}

    def trace_spans(self, trace_id: str) -> Dict[SpanKey, Dict[str, Any]]:
        """Received and seeded spans of one trace."""
        return self._by_trace.get(trace_id, {})

    def span_by_id(self, span_id: str) -> Optional[Dict[str, Any]]:
        for span in self.all_spans().values():
            if span["span_id"] == span_id:
                return span
        return None

    def find_spans(self, *, name: Optional[str] = None, trace_id: Optional[str] = None,
                   **attributes: Any) -> List[Dict[str, Any]]:
        """Received spans filtered by name / trace id / exact attribute values.

        Attribute keys use ``__`` for ``.``: ``find_spans(langfuse__experiment__id="abc")``.
        """
        want = {k.replace("__", "."): v for k, v in attributes.items()}
        with self._lock:
            spans = list(self.spans.values())
        return [
            s for s in spans
            if (name is None or s["name"] == name)
            and (trace_id is None or s["trace_id"] == trace_id)
            and all(s["attributes"].get(k) == v for k, v in want.items())
        ]

    def duplicate_span_receipts(self) -> Dict[SpanKey, int]:
        with self._lock:
            return {k: n for k, n in self.span_receipts.items() if n > 1}

    def experiment_item_spans(self) -> List[Dict[str, Any]]:
        """Spans that are experiment items: they carry experiment id + item id and are the
        item's root observation (``...item.root_observation_id`` equals their span id, or
        is absent).  Duplicated publication shows up as several spans for one item id."""
        out = []
        for span in self.all_spans().values():
            a = span["attributes"]
            if not a.get(A_EXP_ID) or not a.get(A_EXP_ITEM_ID):
                continue
            root = a.get(A_EXP_ITEM_ROOT)
            if root is not None and root != span["span_id"]:
                continue
            out.append(span)
        out.sort(key=lambda s: (s["start_time_unix_nano"], s["span_id"]), reverse=True)
        return out

    # ------------------------------------------------------------------ scores
    def store_score(self, score: Dict[str, Any]) -> None:
        """Store a score row; one with the same (id, UTC day, name) is replaced
        (``rules.score_day_key``) and keeps its ``createdAt``."""
        key = rules.score_day_key(score)
        previous = self.score_rows.get(key)
        if previous is not None:
            score["createdAt"] = previous["createdAt"]
        self.score_rows[key] = score
        self.scores[score["id"]] = score
        self.score_receipts[score["id"]] += 1

    def delete_score(self, score_id: str) -> bool:
        """Every row of the score; False when there was none."""
        keys = [k for k in self.score_rows if k[0] == score_id]
        if not keys:
            return False
        for k in keys:
            del self.score_rows[k]
        self.scores.pop(score_id, None)
        return True

    # ------------------------------------------------------------------ dataset run items (v3)
    def add_run_item(self, run_item: Dict[str, Any], visible_at: float) -> None:
        """An accepted run item, readable from ``visible_at`` (``time.monotonic``) on."""
        self.dataset_run_items.append(run_item)
        self._run_item_visible[run_item["id"]] = visible_at

    def visible_run_items(self, run_id: str, now: float) -> List[Dict[str, Any]]:
        return [r for r in self.dataset_run_items if r["datasetRunId"] == run_id
                and self._run_item_visible.get(r["id"], 0.0) <= now]

    def run_items_of(self, run_name: str) -> List[Dict[str, Any]]:
        """Every accepted run item of the v3 dataset run named ``run_name``."""
        ids = {r["id"] for r in self.dataset_runs.values() if r["name"] == run_name}
        return [r for r in self.dataset_run_items if r["datasetRunId"] in ids]
