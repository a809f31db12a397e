"""Run a grid of configurations in parallel, caching each finished cell with its provenance.

``run_grid(func, configs, cache=...)`` calls ``func(**config)`` for every configuration (a dict of
JSON-serializable parameters), in worker processes (loky) or on an existing dask.distributed cluster
(``scheduler=``), with a tqdm progress bar. Each computed cell is stored with its provenance: the
fingerprint of the code that computed it (:func:`code_fingerprint`), package versions, machine, wall
time and date. A cell whose code fingerprint differs from the current code's is *stale* and is
computed again, so a changed algorithm never serves an old result.

Two caches (the chapters' convention is :func:`chapter_cache`): local pickles
(:class:`PickleCache`, ``.cache/<chapter>``, the smoke scale) and the committed results store
(:class:`ResultStore`, ``results/<scale>/<chapter>``, the book and the paper scale), which a budgeted run
fills (``budget=``, in the order ``order=`` gives), a later run on another machine continues, and the book
renders (``missing="skip"`` at the paper scale). Writes are atomic or flushed cell by cell, so an interrupted run loses nothing
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
import io
import json
import math
import os
import pickle
import platform
import tempfile
import time
import tokenize
import warnings
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

from .numerics import code_paths, cpu_model

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = __name__.split(".")[0]
#: When this process loaded the package's code (about; a fingerprint taken later must hash that same code).
LOADED_AT = time.time()
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
    """Operating system, processor model and number of cores (``explainopt.numerics.code_paths``
    records the code paths too)."""
    return f"{platform.system()} {platform.machine()}, {cpu_model()}, {os.cpu_count()} cores"


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


#: The package's own machinery: grids, stores and provenance (this module), claims and their reports, figures,
#: the notebook runner. Left out of every fingerprint, so that editing them stales no stored cell. A cell may
#: read other cells through it (chapter 4's take their networks from ``run_grid``, whose code the fingerprint
#: takes through the network cell function itself); what it reads back is the cell as computed, bit for bit
#: (``stored_form``, tests/test_experiments.py), so no edit here that keeps that test passing moves a result.
MACHINERY = frozenset(f"{PACKAGE}.{name}" for name in ("experiments", "reporting", "verdicts", "plots", "book"))


def _package_module(name: str) -> str | None:
    """`name` itself if it is a module of this package whose code a fingerprint takes, else None."""
    in_package = name == PACKAGE or name.startswith(PACKAGE + ".")
    return name if in_package and name not in MACHINERY and _module_file(name) else None


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


def code_text(source: str) -> str:
    """`source` without its docstrings, comments and blank lines: what a fingerprint hashes, so that
    editing documentation stales no cell. Cut from the source text itself (not an AST dump, which
    differs between Python versions)."""
    lines = source.splitlines()

    def column(line: int, offset: int) -> int:  # ast counts UTF-8 bytes, tokenize and str characters
        return len(lines[line - 1].encode()[:offset].decode(errors="ignore"))

    cuts = []  # (line, start column, end line, end column), 1-based lines as ast and tokenize give them
    for node in ast.walk(ast.parse(source)):
        body = getattr(node, "body", None)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body:
            first = body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                cuts.append((first.lineno, column(first.lineno, first.col_offset), first.end_lineno,
                             column(first.end_lineno, first.end_col_offset)))
    with contextlib.suppress(tokenize.TokenError, IndentationError):
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.COMMENT:
                cuts.append((*token.start, *token.end))
    for line, col, end_line, end_col in sorted(cuts, reverse=True):
        head, tail = lines[line - 1][:col], lines[end_line - 1][end_col:]
        lines[line - 1:end_line] = [head + tail]
    return "\n".join(line.rstrip() for line in lines if line.strip())


#: Folders of the data files a cell's code may name (chapters' transcribed tables and grids, the registry).
DATA_FOLDERS = (Path(__file__).parent, Path(__file__).parent / "chapters" / "data")


def _data_files(tree: ast.AST) -> list[Path]:
    """The package's data files that string constants in `tree` name (``"clemo_table1"`` for
    ``chapters/data/clemo_table1.csv``, ``"registry.json"``): a cell that reads a grid or a transcribed
    table is stale when the file changes."""
    names = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
             and 0 < len(n.value) < 200 and "\n" not in n.value}
    found = set()
    for name in names:
        for folder in DATA_FOLDERS:
            for candidate in (folder / name, folder / f"{name}.csv"):
                with contextlib.suppress(OSError, ValueError):
                    if candidate.is_file() and candidate.suffix in (".csv", ".json"):
                        found.add(candidate)
    return sorted(found)


@functools.cache
def _module_parts(module: str) -> tuple[str, ...]:
    """What a fingerprint takes from a whole package module: its code and the data files it names."""
    source = _module_file(module).read_text()
    files = _data_files(ast.parse(source))
    return (f"# {module}\n" + code_text(source), *(f"# {f.name}\n" + f.read_text() for f in files))


@functools.cache
def code_fingerprint(func: Callable) -> str:
    """Hash of the code that `func` can run: its own code, the module-level definitions of its module
    that it refers to (transitively), and the code of every package module it reaches through imports
    (transitively), each without docstrings and comments (:func:`code_text`), and the data files any of
    it names (:func:`_data_files`). Editing an algorithm or a grid file changes the fingerprint of every
    experiment that uses it; editing a figure helper the experiment never names, or a docstring, does not."""
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
            parts.append(code_text(ast.get_source_segment(source, node) or ast.dump(node)))
            parts += [f"# {f.name}\n" + f.read_text() for f in _data_files(node)]
            todo += [n.id for n in ast.walk(node) if isinstance(n, ast.Name)]
    for module in sorted(modules):
        parts += _module_parts(module)
    _check_unchanged([path, *(_module_file(m) for m in modules)])
    return hashlib.sha256("\n".join(sorted(set(parts))).encode()).hexdigest()[:16]


class CodeChanged(RuntimeError):
    """The code on disk changed after this process loaded it: a fingerprint would name code that did not run."""


def _check_unchanged(paths) -> None:
    """Raise :class:`CodeChanged` if a file was modified after this process loaded the package: a cell it
    computes would be stamped with the fingerprint of the edited files, not of the code in memory."""
    now = time.time()  # a file dated after now comes from a skewed clock or archive, not from an edit
    changed = sorted(str(p) for p in paths if LOADED_AT < p.stat().st_mtime <= now)
    if changed:
        raise CodeChanged(f"{', '.join(changed)} changed after this process started; restart it (a new kernel, "
                          "a new run) so that its cells are computed and stamped by the same code")


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
                  "machine": machine(), "code_paths": code_paths(), "versions": versions()}
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


class StoreError(ValueError):
    """A results-store file that cannot be read as one: the message names the file and what is wrong."""


@dataclass
class StoreText:
    """The text read from a store file: its lines, and how many damaged gzip members were skipped (the
    complete lines before the damage in each are kept: :func:`_gzip_text`)."""

    lines: list[str]
    damaged: int = 0


def _gzip_text(data: bytes) -> StoreText:
    """The text of concatenated gzip members (what :meth:`ResultStore.put` appends). A member torn by an
    interrupted write, or damaged, keeps the complete lines before the damage; reading goes on at the next
    member's header, so the cells after it are read too. Fed in chunks, so that a file of many members
    reads in linear time."""
    view, start, lines, damaged = memoryview(data), 0, [], 0
    while start < len(data):
        member, end, chunks = zlib.decompressobj(wbits=zlib.MAX_WBITS | 16), start, []
        with contextlib.suppress(zlib.error):
            while not member.eof and end < len(data):
                chunks.append(member.decompress(view[end:end + _READ_CHUNK]))
                end = min(end + _READ_CHUNK, len(data))
        text = b"".join(chunks).decode(errors="replace")
        if member.eof:  # whole, its checksum verified
            lines += text.splitlines()
            start = end - len(member.unused_data)
        else:
            damaged += 1
            lines += text.splitlines()[:-1]  # the readable prefix; its last line may be cut
            start = data.find(_GZIP_MAGIC, start + 1)
            if start < 0:
                break
    return StoreText(lines, damaged)


def _gzip(text: str) -> bytes:
    return gzip.compress(text.encode(), mtime=0)  # no timestamp: the same cells, the same bytes


def _parse_line(line: str) -> dict | None:
    """One stored cell, or None for a line that is not one whole cell (torn or damaged)."""
    try:
        cell = json.loads(line, object_hook=_decode)
    except json.JSONDecodeError:
        return None
    provenance = cell.get("provenance") if isinstance(cell, dict) else None
    whole = isinstance(provenance, dict) and {"code", "function", "config"} <= set(provenance)
    return cell if whole and "key" in cell and "result" in cell else None


def read_store_file(path: Path) -> list[dict]:
    """Every whole cell of a store file, in the order written. Damaged members and lines are skipped with
    a warning that names the file and counts them; a file with content but no readable cell, or not gzip
    at all, is a :class:`StoreError`."""
    data = Path(path).read_bytes()
    if not data:
        return []
    if not data.startswith(_GZIP_MAGIC):
        raise StoreError(f"{path}: not a results-store file (gzip members of JSON lines); if it holds JSON "
                         "lines, compress it with gzip, else move it out of the store")
    text = _gzip_text(data)
    cells = [c for c in map(_parse_line, text.lines) if c is not None]
    lost = len(text.lines) - len(cells)
    if not cells and (lost or text.damaged):
        raise StoreError(f"{path}: no readable cell ({text.damaged} damaged gzip members, {lost} unreadable "
                         "lines); restore it from git (git checkout -- FILE)")
    if lost or text.damaged:
        warnings.warn(f"{path}: skipped {lost} unreadable lines and {text.damaged} damaged gzip members "
                      f"(a damaged member loses its cells after the damage); read {len(cells)} cells",
                      stacklevel=2)
    return cells


def resolve_function(name: str) -> Callable:
    """The function of a stored cell's provenance (``module.qualname``); a :class:`StoreError` if the
    code no longer has it (renamed or removed)."""
    module, _, qualname = name.rpartition(".")
    try:
        return getattr(importlib.import_module(module), qualname)
    except (ImportError, AttributeError) as exc:
        raise StoreError(f"the stored cells' function {name} is not in the code any more ({exc})") from None


class ResultStore:
    """The committed results store of a chapter: ``results/<scale>/<chapter>/<function>.jsonl.gz``.

    One JSON line per computed cell: its key, result (JSON values; NumPy arrays tagged and restored) and
    provenance (:func:`compute_cell`). Each line is a gzip member of its own (gzip reads concatenated
    members as one stream, ``gzip -dc FILE`` shows the lines), appended by the process that runs the grid
    and flushed at once: an interrupted run loses nothing already computed, and a damaged byte loses one
    cell (:func:`read_store_file`). A line whose code fingerprint differs from the current code is
    *stale*: it is not served, and the cell is computed again (the new line supersedes it; :meth:`compact`
    drops old lines) unless :func:`revalidate` shows that the new code reproduces it.
    Nothing in the store is written by hand.
    """

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        self._lines: dict[str, dict[str, dict]] = {}
        self._seen: dict[str, tuple] = {}  # function -> the version of its file (_file_version) this store last read

    @classmethod
    def of_chapter(cls, chapter: str, scale: str = "paper") -> "ResultStore":
        return cls(ROOT / "results" / scale / chapter)

    def path(self, func: Callable) -> Path:
        return self.folder / f"{func.__name__}.jsonl.gz"

    def _read(self, func: Callable) -> dict[str, dict]:
        """Key -> last stored cell of `func` (read once per process)."""
        name = func.__name__
        if name not in self._lines:
            path = self.path(func)
            self._seen[name] = _file_version(path)
            self._lines[name] = {c["key"]: c for c in read_store_file(path)} if path.exists() else {}
        return self._lines[name]

    def _refresh(self, func: Callable) -> None:
        if _file_version(self.path(func)) != self._seen.get(func.__name__):
            self._lines.pop(func.__name__, None)

    def get(self, func: Callable, config: dict, *, fresh: bool = False) -> dict | None:
        """The current stored cell of (func, config), else None; `fresh`: read the file again first if
        another process has appended to it since."""
        if fresh:
            self._refresh(func)
        cell = self._read(func).get(config_key(func, config))
        return cell if cell and cell["provenance"]["code"] == code_fingerprint(func) else None

    def stale(self, func: Callable, config: dict) -> bool:
        """Whether the stored cell exists but was computed by other code."""
        cell = self._read(func).get(config_key(func, config))
        return bool(cell) and cell["provenance"]["code"] != code_fingerprint(func)

    def put(self, func: Callable, config: dict, cell: dict) -> None:
        key = config_key(func, config)
        line = json.dumps({"key": key, **cell}, default=_encode, separators=(",", ":"))
        data, path, cells = _gzip(line + "\n"), self.path(func), self._read(func)
        with self._writing(func):
            unchanged = _file_version(path) == self._seen.get(func.__name__)  # else another process wrote since
            with path.open("ab") as handle:                                   # we read: get(fresh=True) reads again
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            if unchanged:
                self._seen[func.__name__] = _file_version(path)
        cells[key] = json.loads(line, object_hook=_decode)

    @contextlib.contextmanager
    def _writing(self, func: Callable):
        """Hold the store's write lock of `func`'s file (``flock`` on a file beside the store): appends and
        :meth:`compact` exclude each other across processes, so a rewrite never drops a line appended meanwhile."""
        import fcntl  # POSIX only, as the claims

        lock = self.folder / ".claims" / f"{func.__name__}.lock"
        lock.parent.mkdir(parents=True, exist_ok=True)
        with lock.open("a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            yield

    def all_cells(self, func: Callable) -> list[dict]:
        """Every cell of `func` in the store, current or stale (the last line of each key)."""
        return list(self._read(func).values())

    def cells(self, func: Callable) -> list[dict]:
        """Every current cell of `func` in the store."""
        code = code_fingerprint(func)
        return [c for c in self.all_cells(func) if c["provenance"]["code"] == code]

    def functions(self) -> list[Callable]:
        """The cell functions the store holds files of (from their cells' provenance)."""
        out = []
        for path in sorted(self.folder.glob("*.jsonl.gz")):
            cells = read_store_file(path)
            if cells:
                out.append(resolve_function(cells[0]["provenance"]["function"]))
        return out

    def current(self) -> list[dict]:
        """Every cell of every function in the store that the current code computed (with its
        ``function``, resolved from the provenance)."""
        return [{**c, "function": func} for func in self.functions() for c in self.cells(func)]

    def compact(self, func: Callable) -> None:
        """Rewrite `func`'s file with one line per key (the last one), each its own gzip member, dropping
        superseded lines. It reads the file again under the write lock, so lines another process appended
        are kept."""
        path = self.path(func)
        with self._writing(func):
            cells = {c["key"]: c for c in read_store_file(path)} if path.exists() else {}
            data = b"".join(_gzip(json.dumps(c, default=_encode, separators=(",", ":")) + "\n") for c in cells.values())
            atomic_write_bytes(path, data)
            self._lines[func.__name__], self._seen[func.__name__] = cells, _file_version(path)

    def claim(self, func: Callable, config: dict):
        """A claim on one cell while this process computes it (``CellClaim``), so that two runners on
        one store never compute the same cell; None if another process holds it."""
        claim = CellClaim(self.folder / ".claims" / f"{func.__name__}-{config_key(func, config)}")
        return claim if claim.acquire() else None


def _file_version(path: Path) -> tuple:
    """(inode, size, modification time in ns) of a store file, () if there is none: an append changes the size,
    a compaction (``os.replace``) the inode and the time, even where it brings the file back to a size a reader
    saw (audit 43 N2) or the file system hands a freed inode back (audit 43b P1)."""
    try:
        stat = path.stat()
    except FileNotFoundError:
        return ()
    return stat.st_ino, stat.st_size, stat.st_mtime_ns


class CellClaim:
    """An exclusive lock (``flock``) on a file beside the store: held by the runner that computes the cell,
    released when it is stored, and by the system when the runner dies, so a killed run leaves no claim."""

    def __init__(self, path: Path):
        self.path, self._handle = path, None

    def acquire(self) -> bool:
        import fcntl  # POSIX only: claims are for the Linux machines that fill the store

        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = self.path.open("a")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            return False
        self._handle = handle
        return True

    def release(self) -> None:
        if self._handle is not None:
            self.path.unlink(missing_ok=True)
            self._handle.close()
            self._handle = None


# --------------------------------------------------------------------------- reproduction

#: Statuses of a result that a limit (time, iterations) decided: such a cell need not reproduce.
LIMITED = frozenset({"time_limit", "iteration_limit", "no_solution", "max_iter"})
#: Relative and absolute tolerance of numbers when a stored cell is computed again (solver tolerances).
TOLERANCE = 1e-5
#: The tolerance of an optimum's argmin once its objective reproduces (:func:`differences`), a judgment: chapter 1's
#: paper cell ecd81d58 (a flat optimum) gave explanations 3e-5 apart on two CPUs, its objective 3e-9 apart.
ARGMIN_TOLERANCE = 1e-3


def limited(result) -> bool:
    """Whether a limit decided some part of `result` (a status in ``LIMITED`` anywhere in it)."""
    if isinstance(result, dict):
        return any(limited(v) for v in result.values())
    if isinstance(result, (list, tuple)):
        return any(limited(v) for v in result)
    return isinstance(result, str) and result in LIMITED


def _volatile(key: str) -> bool:
    return "time" in key.lower() or key.endswith("_s")


def _vector(value) -> bool:
    """An array or list of several floats: an optimum's argmin, where a result states its objective (counts,
    integers, are none)."""
    if isinstance(value, np.ndarray):
        return value.size > 1 and np.issubdtype(value.dtype, np.floating)
    return isinstance(value, list) and len(value) > 1 and all(isinstance(v, float) for v in value)


def _optimum(stored: dict, again: dict, tolerance: float) -> bool:
    """Whether `stored` states a finite scalar ``objective`` that `again` reproduces to `tolerance`."""
    objective = stored.get("objective")
    finite = isinstance(objective, (int, float)) and not isinstance(objective, bool) and math.isfinite(objective)
    return finite and not differences(objective, again.get("objective"), tolerance=tolerance)


def differences(stored, again, path: str = "result", tolerance: float = TOLERANCE) -> list[str]:
    """Where `again` does not reproduce `stored` (both in :func:`stored_form`): times are skipped, numbers
    compared to `tolerance` (relative and absolute), everything else exactly. Empty when it reproduces.

    A result that states a finite scalar ``objective`` is an optimum: where the objective reproduces to
    `tolerance`, its float vectors (the argmin) are compared to ``ARGMIN_TOLERANCE``, since at a flat
    optimum the argmin moves with the solver's path far more than the objective does."""
    if isinstance(stored, dict):
        if not isinstance(again, dict) or set(stored) != set(again):
            return [f"{path}: fields differ"]
        optimum = _optimum(stored, again, tolerance)
        return [d for key in stored if not _volatile(key)
                for d in differences(stored[key], again[key], f"{path}.{key}",
                                     max(tolerance, ARGMIN_TOLERANCE) if optimum and _vector(stored[key]) else tolerance)]
    if isinstance(stored, (list, tuple)) and not (stored and all(isinstance(v, (int, float)) for v in stored)):
        if not isinstance(again, (list, tuple)) or len(stored) != len(again):
            return [f"{path}: lengths differ"]
        return [d for i, (a, b) in enumerate(zip(stored, again)) for d in differences(a, b, f"{path}[{i}]", tolerance)]
    if isinstance(stored, (np.ndarray, list, tuple, float, int)) and not isinstance(stored, bool):
        try:
            a, b = np.asarray(stored, dtype=float), np.asarray(again, dtype=float)
        except (TypeError, ValueError):
            return [f"{path}: {stored!r} != {again!r}"]
        if a.shape != b.shape:
            return [f"{path}: shapes differ"]
        if not np.allclose(a, b, rtol=tolerance, atol=tolerance, equal_nan=True):
            return [f"{path}: largest difference {np.nanmax(np.abs(a - b)):.3g}"]
        return []
    return [] if stored == again else [f"{path}: {stored!r} != {again!r}"]


def _strata(cells: list[dict]) -> dict[tuple, list[dict]]:
    """Stale cells by the code that computed them and their data set (when the configuration names one)."""
    out: dict[tuple, list[dict]] = {}
    for cell in cells:
        out.setdefault((cell["provenance"]["code"], str(cell["provenance"]["config"].get("dataset"))), []).append(cell)
    return out


def revalidation_sample(cells: list[dict], *, fraction: float = 0.05, minimum: int = 3,
                        random_state: int = 0) -> list[dict]:
    """A stratified random sample of stale `cells` (:func:`_strata`): at least `fraction` of them and at
    least `minimum` (all, if fewer), at least one per stratum, the rest in proportion to the strata."""
    size = min(len(cells), max(minimum, math.ceil(fraction * len(cells))))
    rng, strata = np.random.default_rng(random_state), list(_strata(cells).values())
    quota = [max(1, size * len(s) // len(cells)) for s in strata]
    for i in sorted(range(len(strata)), key=lambda i: len(strata[i]) - quota[i], reverse=True):
        if sum(quota) >= size:
            break
        quota[i] += 1  # the shortfall of rounding down, to the strata with the most cells left
    return [s[j] for s, q in zip(strata, quota) for j in sorted(rng.permutation(len(s))[:q])]


def revalidate(store: "ResultStore", func: Callable, *, configs: Iterable[dict] | None = None, fraction: float = 0.05,
               minimum: int = 3, random_state: int = 0, n_jobs: int = 1, tolerance: float = TOLERANCE) -> dict:
    """After a change of code that should not move results: compute a stratified random sample of
    `func`'s stale cells again and re-stamp the other stale cells with the current code's fingerprint where
    the sample reproduces (:func:`differences`); their provenance keeps everything else and gains
    ``revalidated`` (the old fingerprint, the date, the sample's keys).

    The stale cells are judged per version of the code that computed them (their old fingerprint): each
    version gets its own sample (:func:`revalidation_sample`), and a version is re-stamped only if every
    sampled cell of it reproduces and at least one of them decides (a cell that a limit decided, before or
    now, :func:`limited`, is no evidence either way: ``inconclusive``). One version that moved thus keeps
    its own cells stale without holding back the others. `configs`: only the stale cells of these
    configurations (a chapter's current grids; cells of configurations no grid has any more are left as
    they are). The sampled cells are stored as computed now either way. The store file is compacted at the end
    (:meth:`ResultStore.compact`, under the store's write lock: a fill may append meanwhile).
    Returns ``{"stale", "sampled", "differs": {key: [differences]}, "inconclusive", "kept": {old fingerprint:
    why}, "restamped"}``."""
    code = code_fingerprint(func)
    keys = None if configs is None else {config_key(func, c) for c in configs}
    stale = [c for c in store.all_cells(func) if c["provenance"]["code"] != code and (keys is None or c["key"] in keys)]
    report = {"function": func.__name__, "stale": len(stale), "sampled": 0, "differs": {}, "inconclusive": [],
              "kept": {}, "restamped": 0}
    versions = {}
    for cell in stale:
        versions.setdefault(cell["provenance"]["code"], []).append(cell)
    sample = [c for cells in versions.values()
              for c in revalidation_sample(cells, fraction=fraction, minimum=minimum, random_state=random_state)]
    again = joblib.Parallel(n_jobs=n_jobs)(joblib.delayed(compute_cell)(func, c["provenance"]["config"])
                                           for c in sample)
    report["sampled"], decided = len(sample), set()
    for cell, new in zip(sample, again):
        store.put(func, cell["provenance"]["config"], new)
        old = cell["provenance"]["code"]
        if limited(cell["result"]) or limited(stored_form(new["result"])):  # a limit decided: no evidence either way
            report["inconclusive"].append(cell["key"])
            continue
        found = differences(cell["result"], stored_form(new["result"]), tolerance=tolerance)
        if found:
            report["differs"][cell["key"]] = found
            report["kept"][old] = "a sampled cell differs"
        decided.add(old)
    for old in set(versions) - decided:
        report["kept"].setdefault(old, "no sampled cell decides (a limit decided each)")
    stamp = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "tolerance": tolerance}
    sampled = {c["key"] for c in sample}
    for old, cells in versions.items():
        if old in report["kept"]:
            continue
        keys_of = [c["key"] for c in sample if c["provenance"]["code"] == old]
        for cell in cells:
            if cell["key"] not in sampled:
                provenance = {**cell["provenance"], "code": code,
                              "revalidated": {**stamp, "sample": keys_of, "of": len(cells), "from": old}}
                store.put(func, cell["provenance"]["config"], {"result": cell["result"], "provenance": provenance})
                report["restamped"] += 1
    if report["restamped"]:
        store.compact(func)
    return report


def as_cache(cache) -> PickleCache | ResultStore | None:
    """None, a folder (a :class:`PickleCache`) or a cache object."""
    if cache is None or isinstance(cache, (PickleCache, ResultStore)):
        return cache
    return PickleCache(cache)


#: The committed results: ``results/<scale>/NN.json`` (verdicts) and ``results/<scale>/NN/`` (the stores).
RESULTS = ROOT / "results"
#: The scales whose verdicts and cells are committed, ``results/<scale>/NN.json`` and ``results/<scale>/NN/``.
COMMITTED = ("book", "paper")
#: Set by ``run --recompute`` to the moment it started: the chapters' kernels then serve no cell stored before.
RECOMPUTE = "EXPLAINOPT_RECOMPUTE_SINCE"


class RecomputingStore(ResultStore):
    """A results store that serves only the cells computed since `since` (an ISO date, as the cells'
    provenance dates them): every older cell is computed again and its new line supersedes the old one."""

    def __init__(self, folder, since: str):
        super().__init__(folder)
        self.since = since

    def get(self, func, config: dict, *, fresh: bool = False) -> dict | None:
        cell = super().get(func, config, fresh=fresh)
        return cell if cell is not None and cell["provenance"]["date"] >= self.since else None


def chapter_cache(chapter: str, scale: str) -> PickleCache | ResultStore:
    """The one cache convention of the chapters: at the scales whose results are committed (:data:`COMMITTED`)
    the committed results store ``results/<scale>/NN`` (same provenance, staleness, ``merge`` and
    ``revalidate`` at both), at the smoke scale the local pickles of ``.cache/NN``. Under ``run --recompute``
    (:data:`RECOMPUTE`) a store that serves only the cells computed since the run began."""
    if scale not in COMMITTED:
        return PickleCache(cache_dir(chapter))
    folder, since = RESULTS / scale / chapter, os.environ.get(RECOMPUTE)
    return RecomputingStore(folder, since) if since else ResultStore(folder)


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


def _exit_with_parent(interval: float = 0.5) -> None:
    """In a worker: exit as soon as the process that started it is gone (a runner killed with ``kill -9``
    cannot stop its workers itself)."""
    import threading

    parent = os.getppid()

    def watch():
        while os.getppid() == parent:
            time.sleep(interval)
        os._exit(1)

    threading.Thread(target=watch, daemon=True, name="exit-with-parent").start()


@contextlib.contextmanager
def _executor(n_jobs: int, scheduler: str | None):
    """A concurrent.futures executor: loky processes here, or a dask.distributed cluster's."""
    if scheduler:
        from distributed import Client  # optional dependency (the `dask` extra): imported only when asked for

        with Client(scheduler) as client:
            yield client.get_executor()
    else:
        executor = get_reusable_executor(max_workers=joblib.cpu_count() if n_jobs in (-1, None) else max(1, n_jobs),
                                         initializer=_exit_with_parent)
        try:
            yield executor
        except BaseException:  # a failed cell or an interrupt: stop the cells in flight now, not at exit
            executor.shutdown(wait=False, kill_workers=True)
            raise


@dataclass
class Grid:
    """A chapter's grid: the cell function, its configurations and the order in which a budgeted run
    computes them (indices into `configs`, most informative first; None: as listed). `cost_by`: the
    configuration keys that move a cell's cost, the most first; a configuration with no stored cell is
    estimated from those that share the most of them (``explainopt.book.cost_estimates``)."""

    func: Callable
    configs: list[dict]
    order: list[int] | None = None
    cost_by: tuple[str, ...] = ()

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
    configs : list of dict
        keyword arguments; each must be JSON-serializable (it names the cell).
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
    claims, queue = {}, iter(todo)

    def next_cell() -> int | None:
        """The next cell to compute: claimed in a results store, so that another runner skips it."""
        for i in queue:
            if not isinstance(cache, ResultStore):
                return i
            claim = cache.claim(func, configs[i])
            if claim is None:  # another runner is computing it
                continue
            cell = cache.get(func, configs[i], fresh=True)
            if cell is None:
                claims[i] = claim
                return i
            claim.release()  # another runner stored it meanwhile
            results[i] = cell["result"]
        return None

    def store(i: int, cell: dict) -> None:
        results[i] = _store(cache, func, configs[i], cell)
        if i in claims:
            claims.pop(i).release()
        bar.update()

    try:
        if n_jobs == 1 and not scheduler:
            while deadline is None or time.monotonic() < deadline:
                i = next_cell()
                if i is None:
                    break
                store(i, compute_cell(func, configs[i]))
        else:
            width = n_jobs if n_jobs > 0 else joblib.cpu_count()  # cells in flight: none waits past a deadline
            with _executor(n_jobs, scheduler) as executor:
                pending = {}
                while True:  # keep every worker busy; submit no new cell after the deadline
                    while len(pending) < width and (deadline is None or time.monotonic() < deadline):
                        i = next_cell()
                        if i is None:
                            break
                        pending[executor.submit(compute_cell, func, configs[i])] = i
                    if not pending:
                        break
                    done, _ = futures.wait(pending, return_when=futures.FIRST_COMPLETED)
                    for future in done:
                        store(pending.pop(future), future.result())
    finally:
        for claim in claims.values():
            claim.release()
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


__all__ = ["COMMITTED", "RECOMPUTE", "RESULTS", "RecomputingStore", "Grid", "PickleCache", "ResultStore", "StoreError", "atomic_write_bytes", "cache_dir", "chapter_cache",
           "CodeChanged", "code_fingerprint", "code_text", "compute_cell", "config_key", "differences", "grid_progress", "limited",
           "machine", "parse_duration", "read_store_file", "results_frame", "revalidate", "revalidation_sample",
           "run_grid", "stored_form", "versions"]
