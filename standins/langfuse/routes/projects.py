"""``/api/public/health`` (health.ts: ``{status, version}``, no auth) and ``/api/public/projects``
(projects/index.ts)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..messages import Response, json_response
from ..routing import route

if TYPE_CHECKING:
    from ..server import LangfuseStandIn


def health(server: "LangfuseStandIn", **_: Any) -> Response:
    return json_response(200, {"status": "OK", "version": server.server_version})


def projects(server: "LangfuseStandIn", **_: Any) -> Response:
    return json_response(200, {"data": [{
        "id": server.project_id, "name": server.project_name,
        "organization": {"id": "org-standin", "name": "stand-in org"},
        "metadata": {},
    }]})


ROUTES = [
    route("GET", r"^/api/public/health/?$", "health", health, needs_auth=False),
    route("GET", r"^/api/public/projects$", "projects.get", projects),
]
