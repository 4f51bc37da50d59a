"""Every benchmark measures the package with its bytecode compiled, as an installation has it.

Where PYTHONDONTWRITEBYTECODE is set (this project's machine sets it), a fresh clone never
caches bytecode: every process would compile the package from source, about 70 ms each, which
weighs on a loop of many short commands far more than on one long process, and so bends the
ratios the benchmarks report (docs/benchmarks.md, "the backfill again, with the bytecode
compiled on both sides"). Each script calls ``compile_package()`` before it measures.
"""

from __future__ import annotations

import compileall
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "bench_pipeline"


def compile_package() -> None:
    """Write the package's bytecode (``__pycache__``) next to its sources, quietly."""
    compileall.compile_dir(str(PACKAGE), quiet=1)
