"""Run a grid of configurations in parallel, caching each finished one on disk.

``run_grid(func, configs, cache_dir=...)`` calls ``func(**config)`` for every configuration (a dict of
JSON-serializable parameters) with joblib, shows progress with tqdm, and stores each result (anything
picklable, typically a dict or a DataFrame) under a file named by the hash of the function name and
the configuration. Writes are atomic (temporary file + rename), so an interrupted run loses nothing
already computed and resumes where it stopped. ``backend="dask"`` runs on a dask cluster (a
``distributed.Client`` must be active); the default ``loky`` uses local processes.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

import joblib
import pandas as pd
from tqdm import tqdm  # plain text bars: no widgets needed in papermill runs


def config_key(func: Callable, config: dict) -> str:
    """Stable key of (function, configuration): same parameters, same file."""
    text = json.dumps({"func": f"{func.__module__}.{func.__qualname__}", "config": config},
                      sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write `data` to `path` so that readers never see a partial file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def cached_call(func: Callable, config: dict, cache_dir: str | Path | None):
    """``func(**config)``, read from / written to ``cache_dir`` when one is given."""
    if cache_dir is None:
        return func(**config)
    path = Path(cache_dir) / f"{func.__name__}-{config_key(func, config)}.pkl"
    if path.exists():
        with path.open("rb") as handle:
            return pickle.load(handle)
    result = func(**config)
    atomic_write_bytes(path, pickle.dumps(result))
    return result


def run_grid(
    func: Callable,
    configs: Iterable[dict],
    *,
    cache_dir: str | Path | None = None,
    n_jobs: int = 1,
    backend: str = "loky",
    progress: bool = True,
    description: str | None = None,
) -> list:
    """Evaluate ``func(**config)`` for every configuration; results in the order of `configs`.

    Parameters
    ----------
    func : a module-level function (picklable for process-based backends).
    configs : dicts of keyword arguments; each must be JSON-serializable (it names the cache file).
    cache_dir : folder for the per-configuration cache; None disables caching.
    n_jobs : parallel workers (joblib convention: -1 = all cores).
    backend : joblib backend: ``loky`` (processes), ``threading`` or ``dask``.
    """
    configs = list(configs)
    jobs = (joblib.delayed(cached_call)(func, config, cache_dir) for config in configs)
    bar = tqdm(total=len(configs), desc=description or func.__name__, disable=not progress)
    results = []
    with joblib.parallel_config(backend=backend, n_jobs=n_jobs):
        for result in joblib.Parallel(return_as="generator")(jobs):
            results.append(result)
            bar.update()
    bar.close()
    return results


def results_frame(configs: Iterable[dict], results: Iterable[dict]) -> pd.DataFrame:
    """One row per configuration: its parameters next to the fields of its (dict) result."""
    return pd.DataFrame([{**config, **result} for config, result in zip(configs, results)])
