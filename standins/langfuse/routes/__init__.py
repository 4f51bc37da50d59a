"""The stand-in's endpoints by API area; ``ROUTES`` is the table the server matches in order."""

from __future__ import annotations

from . import datasets, experiments, observations, projects, run_items, scores, traces

ROUTES = (*projects.ROUTES, *datasets.ROUTES, *traces.ROUTES, *scores.ROUTES, *run_items.ROUTES,
          *experiments.ROUTES, *observations.ROUTES)
