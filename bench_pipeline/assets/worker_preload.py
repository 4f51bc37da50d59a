"""What the per-run step's fork server loads once, so that each partition's worker process
(forked from it) starts warm: every module a partition needs, the compiled report
templates and pandera's validators for the three stage frames (together about 0.8 s that
every fresh process would otherwise spend on its first partition).

Imported only by the fork server (``partition_pool._pooled``); it starts no thread.
"""

import pandas as pd

from .. import reports
from ..frames import attempts_frame, raw_results_frame, tasks_frame  # noqa: F401 - loaded for the workers
from ..run_reader import read_run_files  # noqa: F401
from ..schemas import AttemptMetricsSchema, RawResultsSchema, TaskGroupsSchema
from . import partition_pool  # noqa: F401 - the workers' own code, and all it imports


def warm_up() -> None:
    for html, name in ((False, "summary.md.j2"), (True, "report.html.j2")):
        reports._env(html).get_template(name)
    for schema in (RawResultsSchema, AttemptMetricsSchema, TaskGroupsSchema):
        columns = schema.to_schema().columns
        schema.validate(pd.DataFrame({name: pd.Series([], dtype=str(c.dtype)) for name, c in columns.items()}))
    pd.DataFrame({"a": [1]}).to_markdown()  # loads tabulate


warm_up()
