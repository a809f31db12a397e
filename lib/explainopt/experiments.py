"""Run a grid of configurations in parallel, caching each finished cell with its provenance.

``run_grid(func, configs, cache=...)`` calls ``func(**config)`` for every configuration (a dict of
JSON-serializable parameters), in worker processes (loky) or on an existing dask.distributed cluster
(``scheduler=``), with a tqdm progress bar. Each computed cell is stored with its provenance: the
fingerprint of the code that computed it (:func:`code_fingerprint`), package versions, machine, wall
time and date. A cell whose code fingerprint differs from the current code's is *stale* and is
computed again, so a changed algorithm never serves an old result.

Two caches, one convention (:func:`chapter_cache`): below the paper scale a chapter caches in local
pickles (:class:`PickleCache`, ``.cache/<chapter>``); at the paper scale in the committed results store
(:class:`ResultStore`, ``results/paper/<chapter>``), which a budgeted run fills (``budget=``, most
informative cells first with ``order=``), a later run on another machine continues, and the book renders
(``missing="skip"``). Writes are atomic or flushed cell by cell, so an interrupted run loses nothing
already computed.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import gzip
import hashlib
import importlib
import importlib.util
import inspect
import json
import os
import pickle
import platform
import tempfile
import time
import zlib
from collections.abc import Callable, Iterable
from concurrent import futures
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

import joblib
import numpy as np
import pandas as pd
from joblib.externals.loky import get_reusable_executor
from tqdm import tqdm  # plain text bars: no widgets needed in papermill runs

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = __name__.split(".")[0]
VERSIONED = ("explainopt", "numpy", "scipy", "scikit-learn", "cvxpy", "highspy", "clarabel", "pyscipopt", "torch",
             "ortools", "gurobipy", "mosek")


# --------------------------------------------------------------------------- provenance

def versions() -> dict[str, str]:
    """Versions of Python and of the packages that shape the results."""
    out = {"python": platform.python_version()}
    for name in VERSIONED:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


def machine() -> str:
    """Operating system, processor and number of cores."""
    return f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores"


def cache_dir(chapter: str) -> Path:
    """The one cache folder of a chapter: ``$EXPLAINOPT_CACHE/<chapter>`` (default ``.cache/<chapter>``
    in the repository)."""
    return Path(os.environ.get("EXPLAINOPT_CACHE", ROOT / ".cache")) / chapter


# --------------------------------------------------------------------------- code fingerprints

@functools.cache
def _module_file(name: str) -> Path | None:
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, AttributeError, ValueError):  # e.g. a function name below a module
        return None
    return Path(spec.origin) if spec and spec.origin and spec.origin.endswith(".py") else None


def _absolute(module: str, node: ast.ImportFrom) -> str:
    """The absolute module name of a ``from ... import`` inside `module`."""
    if not node.level:
        return node.module or ""
    package = module if _is_package(module) else module.rpartition(".")[0]
    for _ in range(node.level - 1):
        package = package.rpartition(".")[0]
    return f"{package}.{node.module}" if node.module else package


def _is_package(module: str) -> bool:
    path = _module_file(module)
    return path is not None and path.name == "__init__.py"


def _package_module(name: str) -> str | None:
    """`name` itself if it is a module of this package, else None."""
    return name if (name == PACKAGE or name.startswith(PACKAGE + ".")) and _module_file(name) else None


@functools.cache
def _imports(module: str) -> dict[str, str]:
    """Names bound by import statements anywhere in `module` -> the package module they come from."""
    tree = ast.parse(_module_file(module).read_text())
    bound = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _package_module(alias.name):
                    bound[alias.asname or alias.name.split(".")[0]] = alias.name
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(module, node)
            for alias in node.names:
                target = _package_module(f"{base}.{alias.name}") or _package_module(base)
                if target:
                    bound[alias.asname or alias.name] = target
    return bound


@functools.cache
def _module_closure(module: str) -> frozenset[str]:
    """`module` and every package module it imports, transitively (packages include their __init__)."""
    seen, todo = set(), [module]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo += list(_imports(name).values())
        parent = name.rpartition(".")[0]
        if parent.startswith(PACKAGE):
            todo.append(parent)
    return frozenset(seen)


def _top_level(tree: ast.Module) -> dict[str, ast.AST]:
    """Module-level definitions and assignments by the names they bind."""
    out = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out[node.name] = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        out[name.id] = node
    return out


@functools.cache
def code_fingerprint(func: Callable) -> str:
    """Hash of the code that `func` can run: its own source, the module-level definitions of its module
    that it refers to (transitively), and the whole source of every package module it reaches through
    imports (transitively). Editing an algorithm changes the fingerprint of every experiment that uses
    it; editing a figure helper the experiment never names does not."""
    try:
        path = Path(inspect.getsourcefile(func))
        source = path.read_text()
    except (TypeError, OSError):
        return hashlib.sha256(f"{func.__module__}.{func.__qualname__}".encode()).hexdigest()[:16]
    tree = ast.parse(source)
    definitions = _top_level(tree)
    imported = _imports(func.__module__) if _package_module(func.__module__) else {}
    parts, modules, seen, todo = [], set(), set(), [func.__name__]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        if name in imported:
            modules |= _module_closure(imported[name])
        if name in definitions:
            node = definitions[name]
            parts.append(ast.get_source_segment(source, node) or ast.dump(node))
            todo += [n.id for n in ast.walk(node) if isinstance(n, ast.Name)]
    for module in sorted(modules):
        parts.append(f"# {module}\n" + _module_file(module).read_text())
    return hashlib.sha256("\n".join(sorted(set(parts))).encode()).hexdigest()[:16]


# --------------------------------------------------------------------------- cached cells

def config_key(func: Callable, config: dict) -> str:
    """Stable key of (function, configuration): same parameters, same file. A configuration that leaves
    the solver to the default (``solver`` None or "auto") is keyed with ``EXPLAINOPT_SOLVER`` too, which
    decides that default."""
    keyed = dict(config)
    if "solver" in keyed and keyed["solver"] in (None, "auto") and os.environ.get("EXPLAINOPT_SOLVER"):
        keyed["solver"] = f"auto={os.environ['EXPLAINOPT_SOLVER'].lower()}"
    text = json.dumps({"func": _qualified(func), "config": keyed}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def _qualified(func: Callable) -> str:
    return f"{func.__module__}.{func.__qualname__}"


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


def compute_cell(func: Callable, config: dict) -> dict:
    """``func(**config)`` with its provenance: the code fingerprint, the function and configuration,
    wall time, date, machine and package versions."""
    start, began = time.perf_counter(), datetime.now(timezone.utc)
    result = func(**config)
    provenance = {"code": code_fingerprint(func), "function": _qualified(func), "config": config,
                  "wall_time_s": time.perf_counter() - start, "date": began.isoformat(timespec="seconds"),
                  "machine": machine(), "versions": versions()}
    return {"result": result, "provenance": provenance}


class PickleCache:
    """A local cache: one pickle file per cell in `folder` (``.cache/<chapter>``, git-ignored)."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)

    def path(self, func: Callable, config: dict) -> Path:
        return self.folder / f"{func.__name__}-{config_key(func, config)}.pkl"

    def get(self, func: Callable, config: dict) -> dict | None:
        """The cell ``{"result", "provenance"}`` if it is cached and its code is current, else None."""
        path = self.path(func, config)
        if not path.exists():
            return None
        with path.open("rb") as handle:
            cell = pickle.load(handle)
        return cell if cell.get("provenance", {}).get("code") == code_fingerprint(func) else None

    def put(self, func: Callable, config: dict, cell: dict) -> None:
        atomic_write_bytes(self.path(func, config), pickle.dumps(cell))


def _encode(value):
    if isinstance(value, np.ndarray):
        return {"__array__": value.tolist(), "dtype": str(value.dtype)}
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (set, tuple)):
        return list(value)
    raise TypeError(f"a stored result must be made of JSON values and NumPy arrays, not {type(value).__name__}")


def _decode(obj):
    if "__array__" in obj:
        return np.asarray(obj["__array__"], dtype=obj["dtype"])
    return obj


def stored_form(result):
    """`result` as the :class:`ResultStore` gives it back (JSON values, NumPy arrays restored)."""
    return json.loads(json.dumps(result, default=_encode), object_hook=_decode)


_GZIP_MAGIC, _READ_CHUNK = b"\x1f\x8b\x08", 1 << 16


def _gzip_text(data: bytes) -> str:
    """The text of concatenated gzip members (what :meth:`ResultStore.put` appends). A member torn by an
    interrupted write is skipped, and reading goes on at the next member's header, so the cells appended
    after it are read too. Fed in chunks, so that a file of many members reads in linear time."""
    view, start, text = memoryview(data), 0, []
    while start < len(data):
        member, end, chunks = zlib.decompressobj(wbits=zlib.MAX_WBITS | 16), start, []
        with contextlib.suppress(zlib.error):
            while not member.eof and end < len(data):
                chunks.append(member.decompress(view[end:end + _READ_CHUNK]))
                end = min(end + _READ_CHUNK, len(data))
        if member.eof:  # whole, its checksum verified
            text += chunks
            start = end - len(member.unused_data)
        else:
            start = data.find(_GZIP_MAGIC, start + 1)
            if start < 0:
                break
    return b"".join(text).decode()


def _gzip(text: str) -> bytes:
    return gzip.compress(text.encode(), mtime=0)  # no timestamp: the same cells, the same bytes


def _parse_line(line: str) -> dict | None:
    """One stored cell, or None for a line torn by an interrupted write."""
    try:
        return json.loads(line, object_hook=_decode)
    except json.JSONDecodeError:
        return None


class ResultStore:
    """The committed results store of a chapter: ``results/<scale>/<chapter>/<function>.jsonl.gz``.

    One JSON line per computed cell: its key, result (JSON values; NumPy arrays tagged and restored) and
    provenance (:func:`compute_cell`). Each line is appended as a gzip member of its own (gzip reads
    concatenated members as one stream) by the one process that runs the grid and flushed at once, so an
    interrupted run loses nothing already computed; a torn last member is ignored when read. A line whose
    code fingerprint differs from the current code is *stale*: it is not served, and the cell is computed
    again (the new line supersedes it; :meth:`compact` drops old lines).
    Nothing in the store is written by hand.
    """

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        self._lines: dict[str, dict[str, dict]] = {}

    @classmethod
    def of_chapter(cls, chapter: str, scale: str = "paper") -> "ResultStore":
        return cls(ROOT / "results" / scale / chapter)

    def path(self, func: Callable) -> Path:
        return self.folder / f"{func.__name__}.jsonl.gz"

    def _read(self, func: Callable) -> dict[str, dict]:
        """Key -> last stored cell of `func` (read once per process)."""
        name = func.__name__
        if name not in self._lines:
            cells = {}
            path = self.path(func)
            if path.exists():
                for cell in filter(None, map(_parse_line, _gzip_text(path.read_bytes()).splitlines())):
                    cells[cell["key"]] = cell
            self._lines[name] = cells
        return self._lines[name]

    def get(self, func: Callable, config: dict) -> dict | None:
        cell = self._read(func).get(config_key(func, config))
        return cell if cell and cell["provenance"]["code"] == code_fingerprint(func) else None

    def stale(self, func: Callable, config: dict) -> bool:
        """Whether the stored cell exists but was computed by other code."""
        cell = self._read(func).get(config_key(func, config))
        return bool(cell) and cell["provenance"]["code"] != code_fingerprint(func)

    def put(self, func: Callable, config: dict, cell: dict) -> None:
        key = config_key(func, config)
        line = json.dumps({"key": key, **cell}, default=_encode, separators=(",", ":"))
        path = self.path(func)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("ab") as handle:
            handle.write(_gzip(line + "\n"))
            handle.flush()
            os.fsync(handle.fileno())
        self._read(func)[key] = json.loads(line, object_hook=_decode)

    def cells(self, func: Callable) -> list[dict]:
        """Every current cell of `func` in the store."""
        code = code_fingerprint(func)
        return [c for c in self._read(func).values() if c["provenance"]["code"] == code]

    def current(self) -> list[dict]:
        """Every cell of every function in the store that the current code computed (with its
        ``function``, resolved from the provenance)."""
        out = []
        for path in sorted(self.folder.glob("*.jsonl.gz")):
            lines = _gzip_text(path.read_bytes()).splitlines()
            name = next((c["provenance"]["function"] for c in map(_parse_line, lines) if c), None)
            if name:
                module, _, qualname = name.rpartition(".")
                func = getattr(importlib.import_module(module), qualname)
                out += [{**c, "function": func} for c in self.cells(func)]
        return out

    def compact(self, func: Callable) -> None:
        """Rewrite `func`'s file as one gzip member with one line per key (the last one), dropping
        superseded lines."""
        cells = self._read(func)
        text = "".join(json.dumps(c, default=_encode, separators=(",", ":")) + "\n" for c in cells.values())
        atomic_write_bytes(self.path(func), _gzip(text))


def as_cache(cache) -> PickleCache | ResultStore | None:
    """None, a folder (a :class:`PickleCache`) or a cache object."""
    if cache is None or isinstance(cache, (PickleCache, ResultStore)):
        return cache
    return PickleCache(cache)


def chapter_cache(chapter: str, scale: str) -> PickleCache | ResultStore:
    """The one cache convention of the chapters: the committed :class:`ResultStore` at the paper scale,
    a local :class:`PickleCache` in :func:`cache_dir` otherwise."""
    return ResultStore.of_chapter(chapter, scale) if scale == "paper" else PickleCache(cache_dir(chapter))


def cached_call(func: Callable, config: dict, cache=None):
    """``func(**config)``, read from / written to `cache` (see :func:`as_cache`) when one is given."""
    cache = as_cache(cache)
    if cache is None:
        return func(**config)
    cell = cache.get(func, config)
    if cell is None:
        cell = compute_cell(func, config)
        cache.put(func, config, cell)
    return cell["result"]


# --------------------------------------------------------------------------- grids

def parse_duration(text: str | float | None) -> float | None:
    """Seconds from ``"2h"``, ``"90m"``, ``"45s"``, ``"1h30m"`` or a number of seconds (None: no limit)."""
    if text is None or isinstance(text, (int, float)):
        return None if text is None else float(text)
    total, number = 0.0, ""
    for char in str(text).strip().lower():
        if char.isdigit() or char == ".":
            number += char
        elif char in "hms" and number:
            total += float(number) * {"h": 3600, "m": 60, "s": 1}[char]
            number = ""
        else:
            raise ValueError(f"duration {text!r}: expected e.g. '2h', '90m', '1h30m' or seconds")
    return total + (float(number) if number else 0.0)


@contextlib.contextmanager
def _executor(n_jobs: int, scheduler: str | None):
    """A concurrent.futures executor: loky processes here, or a dask.distributed cluster's."""
    if scheduler:
        from distributed import Client  # optional dependency (the `dask` extra): imported only when asked for

        with Client(scheduler) as client:
            yield client.get_executor()
    else:
        executor = get_reusable_executor(max_workers=joblib.cpu_count() if n_jobs in (-1, None) else max(1, n_jobs))
        try:
            yield executor
        except BaseException:  # a failed cell or an interrupt: stop the cells in flight now, not at exit
            executor.shutdown(wait=False, kill_workers=True)
            raise


@dataclass
class Grid:
    """A chapter's grid: the cell function, its configurations and the order in which a budgeted run
    computes them (indices into `configs`, most informative first; None: as listed)."""

    func: Callable
    configs: list[dict]
    order: list[int] | None = None

    def __len__(self) -> int:
        return len(self.configs)


def run_grid(
    func: Callable,
    configs: Iterable[dict],
    *,
    cache=None,
    missing: str = "compute",
    n_jobs: int = 1,
    scheduler: str | None = None,
    budget: float | str | None = None,
    order: Iterable[int] | None = None,
    progress: bool = True,
    description: str | None = None,
) -> list:
    """Evaluate ``func(**config)`` for every configuration; results in the order of `configs`.

    Parameters
    ----------
    func : a module-level function (picklable for process-based workers).
    configs : dicts of keyword arguments; each must be JSON-serializable (it names the cell).
    cache : None, a folder (local pickles) or a :class:`ResultStore`; cells found there, computed by the
        current code, are not computed again (see :func:`chapter_cache`).
    missing : ``compute`` the cells not in the cache, or ``skip`` them (their result is None): how a
        chapter renders from the store what has been computed so far.
    n_jobs : parallel worker processes (-1: all cores); scheduler: the address of an existing
        dask.distributed scheduler to run the cells on instead (then n_jobs: how many of its workers to
        keep busy).
    budget : stop submitting cells after this long (seconds or ``"2h"``); cells already running (at most
        one per worker) finish and are stored; the rest stay missing (None in the result) for a later run
        to compute. A cell that raises, or an interrupt, stops the workers at once; the cells finished
        before are stored.
    order : the order in which missing cells are submitted (indices into `configs`; default: as given),
        e.g. the cells behind undecided claims first.
    """
    if missing not in ("compute", "skip"):
        raise ValueError(f"missing={missing!r}: expected 'compute' or 'skip'")
    configs, cache = list(configs), as_cache(cache)
    results = [None] * len(configs)
    todo = []
    for i, config in enumerate(configs):
        cell = cache.get(func, config) if cache is not None else None
        if cell is not None:
            results[i] = cell["result"]
        else:
            todo.append(i)
    if missing == "skip" or not todo:
        return results
    if order is not None:
        rank = {i: r for r, i in enumerate(order)}
        todo.sort(key=lambda i: rank.get(i, len(rank) + i))
    deadline = None if budget is None else time.monotonic() + parse_duration(budget)
    bar = tqdm(total=len(todo), desc=description or func.__name__, disable=not progress)
    if n_jobs == 1 and not scheduler:
        for i in todo:
            if deadline is not None and time.monotonic() >= deadline:
                break
            results[i] = _store(cache, func, configs[i], compute_cell(func, configs[i]))
            bar.update()
    else:
        width = n_jobs if n_jobs > 0 else joblib.cpu_count()  # cells in flight: none waits past a deadline
        with _executor(n_jobs, scheduler) as executor:
            pending, queue = {}, iter(todo)
            while True:  # keep every worker busy; submit no new cell after the deadline
                while len(pending) < width and (deadline is None or time.monotonic() < deadline):
                    i = next(queue, None)
                    if i is None:
                        break
                    pending[executor.submit(compute_cell, func, configs[i])] = i
                if not pending:
                    break
                done, _ = futures.wait(pending, return_when=futures.FIRST_COMPLETED)
                for future in done:
                    i = pending.pop(future)
                    results[i] = _store(cache, func, configs[i], future.result())
                    bar.update()
    bar.close()
    return results


def _store(cache, func, config, cell):
    if cache is not None:
        cache.put(func, config, cell)
    return cell["result"]


def grid_progress(func: Callable, configs: Iterable[dict], cache) -> dict:
    """How much of a grid `cache` holds: ``{"cells", "computed", "stale"}`` (stale: computed by other code)."""
    configs, cache = list(configs), as_cache(cache)
    computed = sum(cache.get(func, c) is not None for c in configs) if cache is not None else 0
    stale = sum(cache.stale(func, c) for c in configs) if isinstance(cache, ResultStore) else 0
    return {"cells": len(configs), "computed": computed, "stale": stale}


def results_frame(configs: Iterable[dict], results: Iterable[dict]) -> pd.DataFrame:
    """One row per configuration: its parameters next to the fields of its (dict) result."""
    return pd.DataFrame([{**config, **result} for config, result in zip(configs, results)])


__all__ = ["Grid", "PickleCache", "ResultStore", "atomic_write_bytes", "cache_dir", "cached_call", "chapter_cache",
           "code_fingerprint", "compute_cell", "config_key", "grid_progress", "machine", "parse_duration",
           "results_frame", "run_grid", "stored_form", "versions"]
