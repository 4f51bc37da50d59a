"""A route of the stand-in, and the gates that make a route absent in some server generations."""

from __future__ import annotations

import re
from typing import Callable, NamedTuple, Optional

from . import rules
from .messages import Response, json_response


class Route(NamedTuple):
    """``handler(server, query=..., headers=..., body=..., **path parameters)``. ``gate``
    (``rules.py``): ``legacy`` - 404 before auth in events_only mode (``rejectInEventsOnlyMode``);
    ``v4:<what>`` - 404 after auth without the v4 opt-in; ``ingestion`` / ``run_items`` - the
    endpoint exists only in modes that have it."""

    method: str
    pattern: "re.Pattern[str]"
    name: str
    handler: Callable[..., Response]
    needs_auth: bool = True
    gate: Optional[str] = None


def route(method: str, path: str, name: str, handler: Callable[..., Response], needs_auth: bool = True,
          gate: Optional[str] = None) -> Route:
    return Route(method, re.compile(path), name, handler, needs_auth, gate)


def gate_response(mode: rules.Mode, gate: Optional[str], stage: str) -> Optional[Response]:
    """The 404 a gated route answers in this mode at this stage ("before"/"after" auth), if any."""
    if gate is None:
        return None
    if gate == "legacy" and mode.events_only and stage == "before":
        return json_response(404, {"message": rules.EVENTS_ONLY_404})
    if gate.startswith("v4:") and not mode.v4_reads and stage == "after":
        return json_response(404, {"message": rules.V4_ONLY_404.format(what=gate[3:])})
    if gate == "ingestion" and not mode.ingestion and stage == "before":
        return json_response(404, {"message": "stand-in (sdk5 mode): POST /api/public/ingestion is not offered"})
    if gate == "run_items" and not mode.run_item_writes and stage == "before":
        return json_response(404, {"message": "stand-in (sdk5 mode): POST /api/public/dataset-run-items is not offered"})
    return None
