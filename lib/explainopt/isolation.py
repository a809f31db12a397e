"""Calls in fresh Python interpreters, for solvers that cannot share a process with highspy.

OR-Tools and highspy (which cvxpy imports) bundle clashing builds of HiGHS: whichever of the two a process
loads second fails to load. :func:`map_isolated` therefore runs such calls in new interpreters
(``python -m explainopt.isolation``) that import the solver's module before anything else, whatever the
calling process or its main script has imported. The tasks and their results travel as pickles through
temporary files. This module imports nothing of the package.
"""

from __future__ import annotations

import importlib
import logging
import os
import pickle
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path


class _HighsUnavailable(logging.Filter):
    """Drops cvxpy's warning that it cannot load highspy (expected in these interpreters, which never use it)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "importing solver HIGHS" not in record.getMessage()


def _call(task, *, preload: str):
    with tempfile.TemporaryDirectory() as folder:
        task_file, result_file = Path(folder, "task.pkl"), Path(folder, "result.pkl")
        task_file.write_bytes(pickle.dumps(task))
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        done = subprocess.run([sys.executable, "-m", __name__, preload, str(task_file), str(result_file)],
                              env=env, capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"an isolated call (preloading {preload}) failed:\n{done.stderr[-3000:]}")
        return pickle.loads(result_file.read_bytes())


def map_isolated(func, tasks, *, preload: str, n_jobs: int = 1) -> list:
    """``[func(*args) for args in tasks]``, each call in a fresh interpreter that imports `preload` first;
    `n_jobs` interpreters at a time. `func` and the arguments must be picklable (module-level functions)."""
    tasks = [(func, tuple(args)) for args in tasks]
    with ThreadPoolExecutor(max_workers=max(1, n_jobs)) as pool:
        return list(pool.map(lambda task: _call(task, preload=preload), tasks))


def _main(preload: str, task_file: str, result_file: str) -> None:
    logging.getLogger("__cvxpy__").addFilter(_HighsUnavailable())
    importlib.import_module(preload)
    func, args = pickle.loads(Path(task_file).read_bytes())
    Path(result_file).write_bytes(pickle.dumps(func(*args)))


if __name__ == "__main__":
    _main(*sys.argv[1:])
