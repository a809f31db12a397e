"""Execute the chapter notebooks with papermill and build the Jupyter Book.

Command line::

    python -m explainopt.book run --scale smoke|book|paper [--only 01 03] [-p name value ...]
    python -m explainopt.book run --scale book [--recompute]
    python -m explainopt.book run --scale paper --only 05 --budget 2h [--jobs 16] [--scheduler ADDRESS] [--grids NAME ...]
                                  [--max-cell-seconds 300] [--where norm=l2] [--plan]
    python -m explainopt.book merge OTHER/results/paper [--scale paper|book]
    python -m explainopt.book revalidate [--only 04 06] [--scale paper|book] [--fraction 0.05] [--recompute-under 60] [--jobs 2]
    python -m explainopt.book retime 05 [--scale paper|book] [--grids simulations] [--where dataset=COMPAS sim=3] [--jobs 2]
    python -m explainopt.book build [--warnings-as-errors]
    python -m explainopt.book student 02 [--no-lab]
    python -m explainopt.book student-book [--chapters book/chapters] [--output _build/student] [--no-build]

``run`` executes ``notebooks/NN_*.ipynb`` into ``book/chapters/`` (a failing cell fails the command,
naming the notebook and the cell), hides the papermill-injected parameters cell in the rendered book,
and regenerates the reproduction-status page and the landing page's verdict totals from the chapters'
saved results and the teaching page's exercise index from the notebooks. With ``--budget`` it first
prints its plan (the cells per grid, their estimated core-hours, the claims they decide; ``--plan`` stops
there), then computes in parallel the chapter's grid cells that the results store (``results/<scale>/NN``)
does not hold yet, claims first (every configuration's first cell, then round-robin: :func:`fill`), and
stops submitting cells when the budget is spent; run it again, on any machine, to go on; ``merge`` folds
in the cells that another machine's copy of the store holds and this one lacks, so several machines can
fill one chapter side by side; ``retime`` computes stored cells again on this machine, so that their
wall times compare with this machine's other cells. At the paper scale a chapter renders from the store
and computes no cell itself; at the book scale it computes what its committed store (``results/book/NN``) lacks or holds stale,
and ``--recompute`` computes every cell again. ``build`` runs ``jupyter-book build`` with
execution off. ``student-book`` builds the student edition, the executed chapters without their solutions,
into ``_build/student``.

Inside a notebook, :func:`start_chapter` shows the "this run" box, :func:`verdict_summary` the box of the
chapter's committed verdicts at both scales, :meth:`ChapterRun.grid` runs a grid of the chapter through
its cache, and :meth:`ChapterRun.finish` saves the claims table and shows the provenance footer.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import copy
import json
import os
import re
import shutil
import subprocess
import sys
import time
import warnings
from collections import Counter
from concurrent.futures import BrokenExecutor
from datetime import datetime, timezone
from dataclasses import dataclass, field
from pathlib import Path

import joblib
import nbformat
import pandas as pd
import papermill
import plotly
import yaml
from IPython.display import Markdown, display
from joblib.externals.loky import get_reusable_executor
from tqdm import tqdm  # plain text bars, as the runner's

from . import chapters, experiments, reporting, validation, verdicts
from .numerics import code_paths
from .experiments import (COMMITTED, RECOMPUTE, RESULTS, ROOT, Grid, ResultStore, StoreError, chapter_cache,
                          grid_progress, machine, parse_duration, read_store_file, resolve_function, run_grid,
                          versions)

SCALES = ("smoke", "book", "paper")
class ChapterFailed(RuntimeError):
    """A chapter notebook raised in one of its cells."""


# --------------------------------------------------------------------------- inside a chapter

def _field(result, name: str):
    return result.get(name) if isinstance(result, dict) else getattr(result, name, None)


def _values(field) -> list:
    """A result field as a list: the values of a per-method dict, else the field itself."""
    return list(field.values()) if isinstance(field, dict) else [field]


@dataclass
class ChapterRun:
    """Provenance of one chapter execution: parameters, start time, the solvers that produced results."""

    chapter: str
    parameters: dict
    started: float = field(default_factory=time.perf_counter)
    solvers: Counter = field(default_factory=Counter)
    fallbacks: Counter = field(default_factory=Counter)
    cells: Counter = field(default_factory=Counter)  # "total", "computed" over the grids run
    compute_s: float = 0.0  # the grid cells' own compute times, from their provenance
    to_compute_s: float | None = 0.0  # the missing cells' estimated compute times (None: some cannot be estimated)
    to_compute_borrowed_s: float = 0.0  # the part of it priced from other configurations (none stored of their own)

    @property
    def scale(self) -> str:
        return self.parameters["scale"]

    def grid(self, grid: Grid, *, n_jobs: int = 1) -> list:
        """Run a grid of the chapter through the chapter's cache (:func:`chapter_cache`).

        Below the paper scale missing and stale cells are computed (at the book scale into the committed
        store ``results/book/NN``, so a render computes only what the store lacks); at the paper scale the
        chapter renders from the results store and missing cells come back as None (``python -m
        explainopt.book run --budget`` computes them). Records the solvers the results name, how many cells were
        available, how long they took to compute (:func:`compute_time`) and how long the missing ones are
        estimated to take (:func:`estimated_costs`) and, of that, the part priced from other configurations.
        """
        cache = chapter_cache(self.chapter, self.scale)
        missing = "skip" if self.scale == "paper" else "compute"
        results = run_grid(grid.func, grid.configs, cache=cache, missing=missing, n_jobs=n_jobs, progress=False)
        self.cells["total"] += len(results)
        self.cells["computed"] += sum(r is not None for r in results)
        self.compute_s += compute_time(cache, grid)
        if any(r is None for r in results) and self.to_compute_s is not None:
            own, borrowed = cost_estimates(grid, cache)
            costs = estimated_costs(own, borrowed)
            left = [c for c, r in zip(costs, results) if r is None]
            self.to_compute_s = None if None in left else self.to_compute_s + sum(left)
            if self.to_compute_s is not None:
                self.to_compute_borrowed_s += sum(c for c, o, r in zip(costs, own, results) if r is None and o is None)
        self.record([r for r in results if isinstance(r, dict)])
        return results

    def machines(self, grid: Grid) -> list[str | None]:
        """The machine each cell of `grid` was computed on (its provenance: system, processor, cores; None
        where not stored), so that a chapter compares wall times only between cells of one machine."""
        cache = chapter_cache(self.chapter, self.scale)
        cells = [cache.get(grid.func, config) for config in grid.configs]
        return [None if cell is None else cell["provenance"].get("machine") for cell in cells]

    def not_computed(self, what: str) -> Markdown:
        """The sentence a chapter shows instead of `what` (a figure, a table) whose cells are missing: at the
        paper scale, the command that computes them into the results store."""
        how = f"run `make paper NAME={self.chapter}`" if self.scale == "paper" else "run the chapter's grids"
        return Markdown(f"*{what}: not computed yet ({how}).*")

    def coverage(self) -> str:
        """"1 840 of 4 320 cells" of the grids run so far (Markdown)."""
        return reporting.cells_text(self.cells["computed"], self.cells["total"])

    def record(self, results) -> None:
        """Count the solvers named by results: dicts or objects with a ``solver`` field (``"highs+scip"``
        names two; a dict of them, one per method, counts each), a DataFrame with a ``solver`` column, or a
        list of them. A ``fallback_from`` field counts the cells a commercial solver refused for its
        licence's size."""
        if isinstance(results, pd.DataFrame):
            results = results.to_dict("records")
        elif isinstance(results, dict) or hasattr(results, "solver"):
            results = [results]
        for result in results:
            for solver in _values(_field(result, "solver")):
                for name in str(solver or "").split("+"):
                    if name and name != "nan":
                        self.solvers[name] += 1
            for refused in _values(_field(result, "fallback_from")):
                if isinstance(refused, str) and refused:
                    self.fallbacks[refused] += 1

    def used(self, *solver_names: str) -> None:
        """Record solvers (or algorithms) that produced results without a result object to read."""
        self.solvers.update(s for s in solver_names if s)

    def provenance(self) -> dict:
        return {
            "scale": self.parameters.get("scale"),
            "parameters": self.parameters,
            "solvers": ", ".join(sorted(self.solvers)) or "none",
            "fallbacks": dict(self.fallbacks),
            "cells": dict(self.cells),
            "compute_time_s": self.compute_s if self.cells["total"] else None,
            "to_compute_s": self.to_compute_s if self.cells["total"] else None,
            "to_compute_borrowed_s": self.to_compute_borrowed_s if self.to_compute_s and self.cells["total"] else None,
            "wall_time_s": time.perf_counter() - self.started,
            "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "versions": versions(),
            "platform": machine(),
        }

    def finish(self, claims: list, tables: dict | None = None, committed_tables: dict | None = None):
        """Save the claims (for the status page) and display the provenance footer. The committed verdicts
        (``results/<scale>/NN.json``) are written only by a run at the scale's defaults (:func:`off_defaults`),
        with `committed_tables` (small tables that belong with the verdicts, e.g. the settings a tuning chose);
        a run with other parameters says where its own are. An appendix, which has no claims, commits nothing."""
        prov = self.provenance()
        saved = reporting.save_chapter_results(self.chapter, claims, prov, {**(tables or {}), **(committed_tables or {})})
        off = off_defaults(self.chapter, self.parameters)
        if self.scale in COMMITTED and not off and claims:  # the verdicts travel with the repository
            reporting.save_chapter_results(self.chapter, claims, prov, committed_tables,
                                           folder=RESULTS / self.scale)
        elif self.scale in COMMITTED:
            changed = ", ".join(f"`{k}={v!r}`" for k, v in off.items())
            display(Markdown(f"*This run's parameters differ from the {self.scale} scale's defaults ({changed}): "
                             f"its verdicts are saved in `{saved}`, and the committed "
                             f"`results/{self.scale}/{self.chapter}.json` is left as it was.*"))
        if self.scale == "paper":
            self.show_scale_changes(claims)
        pkgs = ", ".join(f"{k} {v}" for k, v in prov["versions"].items())
        refused = "".join(f"; {n} cells that {name} refused (licence too small) were solved by the open-source "
                          "solver" for name, n in self.fallbacks.items())
        grid = (f"; {reporting.grid_text(self.cells)} of the grid computed, in "
                f"{reporting.compute_time_text(prov)} of the cells' own compute time" if self.cells["total"] else "")
        display(Markdown(
            f"*Provenance: scale `{prov['scale']}`{grid}, solvers {prov['solvers']}{refused}, rendered in "
            f"{prov['wall_time_s']:.0f} s on {prov['platform']}; {pkgs}.*"
        ))

    def show_scale_changes(self, claims: list) -> None:
        """The claims whose verdict at this scale differs from the committed book-scale one, with our number
        at each scale and this run's reason: what the larger sample changed."""
        book = RESULTS / "book" / f"{self.chapter}.json"
        if not book.exists():
            display(Markdown("*No book-scale verdicts are committed for this chapter (`results/book`): "
                             f"`make chapter NAME={self.chapter}` computes them, for a comparison of the scales.*"))
            return
        changes = reporting.scale_changes(claims, book)
        when = json.loads(book.read_text())["provenance"].get("date", "an earlier run")
        if changes.empty:
            display(Markdown(f"*No claim checked at both the book scale ({when}) and this scale changes its verdict.*"))
            return
        display(Markdown(
            f"**Verdicts that move between the scales.** {len(changes)} of the claims checked at both scales "
            f"change verdict between the book scale (`results/book/{self.chapter}.json`, {when}) and this run. "
            "The book scale judges on a sample of the paper's grid, this run on every stored cell; our number and "
            "the reason at each scale show what the larger sample changed:"))
        display(changes)


def compute_time(cache, grid: Grid) -> float:
    """Seconds the grid's cells in `cache` took to compute, from each cell's provenance (wherever and whenever
    it was computed: at the paper scale often on other machines); cells not in the cache count nothing."""
    cells = (cache.get(grid.func, config) for config in grid.configs)
    return sum(cell["provenance"].get("wall_time_s", 0.0) for cell in cells if cell is not None)


#: Parameters that change how a chapter runs, not what it computes.
NEUTRAL = frozenset({"scale", "n_jobs", "cache_dir"})


def notebook_defaults(chapter: str) -> dict:
    """The defaults of a chapter notebook's parameters: the literal assignments of its first code cell."""
    notebooks = chapter_notebooks([chapter], missing_ok=True)
    if not notebooks:
        return {}
    cell = next(c for c in nbformat.read(notebooks[0], as_version=4).cells if c.cell_type == "code")
    out = {}
    for node in ast.parse(cell.source).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            with contextlib.suppress(ValueError):
                out[node.targets[0].id] = ast.literal_eval(node.value)
    return out


def _same(a, b) -> bool:
    return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


def off_defaults(chapter: str, parameters: dict) -> dict:
    """The parameters of a run that differ from the chapter's defaults at its scale: the notebook's
    defaults, where None stands for the scale's setting (the chapter module's ``SCALES``). Parameters that
    do not change results (:data:`NEUTRAL`) are left out."""
    defaults = notebook_defaults(chapter)
    setting = scale_setting(chapter, parameters.get("scale"))
    off = {}
    for name, value in parameters.items():
        if name in NEUTRAL or (name not in defaults and name not in setting):
            continue
        allowed = [defaults[name]] if name in defaults else []
        if name in setting and (name not in defaults or defaults[name] is None):
            allowed += [setting[name], None]
        if not any(_same(value, a) for a in allowed):
            off[name] = value
    return off


def scale_setting(chapter: str, scale: str | None) -> dict:
    """The chapter's settings at `scale` (its module's ``SCALES[scale]``; empty for a chapter without a
    module, such as the appendix, or an unknown scale)."""
    module = chapters.module(chapter) if chapter in chapters.MODULES else None
    return dict(getattr(module, "SCALES", {}).get(scale, {}))


def _code(value) -> str:
    """`value`'s repr as Markdown code that a table cell can hold (a ``|`` would end the cell)."""
    return "`" + repr(value).replace("|", "\\|") + "`"


def value_in_effect(chapter: str, scale: str, name: str, value) -> str:
    """A parameter's value in the "this run" box (Markdown). A None stands for the scale's setting of the
    same name (or without its ``n_`` prefix: ``n_factuals`` -> ``factuals``) in the chapter module's
    ``SCALES``; the box then shows that value, e.g. "`None` → `2` (the smoke scale's)"."""
    shown = _code(value)
    if value is not None:
        return shown
    setting = scale_setting(chapter, scale)
    key = next((k for k in (name, name.removeprefix("n_")) if k in setting), None)
    if key is None:
        return shown
    if setting[key] is None:
        return f"{shown} (the {scale} scale's setting too)"
    return f"{shown} → {_code(setting[key])} (the {scale} scale's)"


def start_chapter(chapter: str, **parameters) -> ChapterRun:
    """Validate the common parameters (scale, solver, seed: :mod:`explainopt.validation`), show the "this
    run" box and start the clock. The box gives every
    parameter's value in effect: where a parameter is None, the scale's setting (:func:`value_in_effect`)."""
    scale = parameters.get("scale")
    if scale not in SCALES:
        raise ValueError(f"scale={scale!r}: expected one of {SCALES}")
    validation.check_solver(parameters.get("solver"))  # before any work, not 40 s later inside a worker
    if "seed" in parameters:
        validation.check_seed(parameters["seed"], "seed")
    rows = "\n".join(f"| `{k}` | {value_in_effect(chapter, scale, k, v)} |" for k, v in parameters.items())
    display(Markdown(f"**This run.** Parameters (change them with papermill `-p`):\n\n| parameter | value |\n|---|---|\n{rows}\n"
                     + run_it_yourself(chapter) + unpinned_warning()))
    return ChapterRun(chapter, dict(parameters))


#: What threadpoolctl reports for OpenBLAS's pinned SSE3 kernels (NumPy's OpenBLAS 0.3.31 calls them Katmai).
PINNED_BLAS = frozenset({"openblas Prescott", "openblas Katmai"})


def unpinned_warning() -> str:
    """A warning (Markdown) when an OpenBLAS in this process runs other kernels than the pinned ones
    (:mod:`explainopt.numerics`): NumPy or SciPy was imported before explainopt, so numbers can differ from
    the store's in their last digits, and iteration counts by more."""
    paths = code_paths()
    unpinned = sorted(b for b in paths["blas"] if b.startswith("openblas") and b not in PINNED_BLAS)
    if not paths["pinned"] or not unpinned:
        return ""
    return (f"\n**Warning:** this process runs {', '.join(unpinned)} kernels, not the pinned ones: NumPy or SciPy "
            "was imported before `explainopt`. Restart the kernel and import `explainopt` first (or run the chapter "
            "with `python -m explainopt.book run`), so that its numbers are those of the store on any machine.\n")


def repository() -> tuple[str, str]:
    """The compendium's public repository URL and branch, from ``_config.yml``."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text()).get("repository", {})
    return config.get("url", "").rstrip("/"), config.get("branch", "main")


def run_it_yourself(chapter: str) -> str:
    """Links that open the chapter's source notebook on the usual notebook services, and the local command."""
    notebook = chapter_notebooks([chapter])[0].name if chapter_notebooks([chapter], missing_ok=True) else ""
    url, branch = repository()
    if not (url.startswith("https://github.com/") and notebook):
        return ""
    slug, path = url.removeprefix("https://github.com/"), f"notebooks/{notebook}"
    return (f"\n**Run it yourself:** [Binder](https://mybinder.org/v2/gh/{slug}/{branch}?labpath={path}) · "
            f"[Colab](https://colab.research.google.com/github/{slug}/blob/{branch}/{path}) "
            f"(first `!pip install git+{url}`) · [source notebook]({url}/blob/{branch}/{path}) · "
            f"on your machine `make student NAME={chapter}` (smoke scale, opens JupyterLab).\n")


# --------------------------------------------------------------------------- running notebooks

def chapter_notebooks(only: list[str] | None = None, folder: Path | None = None, *,
                      missing_ok: bool = False) -> list[Path]:
    """Chapter notebooks in order, optionally only those whose name starts with one of `only`."""
    notebooks = sorted((folder or ROOT / "notebooks").glob("[0-9A-Z][0-9]_*.ipynb"))
    if only:
        notebooks = [nb for nb in notebooks if any(nb.name.startswith(o) for o in only)]
        if not notebooks and not missing_ok:
            raise ValueError(f"no notebook matches {only}; notebooks start with 01, 02, ...")
    return notebooks


#: The chapter's opening box (:func:`verdict_summary`), found in an executed notebook by its call.
VERDICT_BOX = re.compile(r'verdict_summary\("(\w+)"\)')


def tidy_executed(path: Path) -> None:
    """Tag papermill's injected-parameters cell (and the defaults cell) so the book does not show them, join
    each cell's consecutive outputs to one stream (:func:`joined_streams`), and show the opening box as the
    run left the committed verdicts (:func:`refresh_verdict_box`)."""
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        tags = cell.metadata.setdefault("tags", [])
        if "injected-parameters" in tags or "parameters" in tags:
            if "remove-cell" not in tags:
                tags.append("remove-cell")
        if cell.cell_type == "code":
            cell.outputs = joined_streams(cell.outputs)
            refresh_verdict_box(cell)
    nbformat.write(nb, path)


def refresh_verdict_box(cell) -> None:
    """Compute the opening box of an executed cell that shows one again. The box runs first and the chapter
    commits its verdicts last, so a run that moved a verdict showed the run before's in its own box (chapter
    3's paper page read 0.049% above the optimum at the top, 0.12% in its claims table)."""
    box = VERDICT_BOX.search(cell.source)
    for output in cell.outputs if box else ():
        if output.get("output_type") == "execute_result":
            fresh = verdict_summary(box.group(1))
            output["data"] = {"text/html": fresh.html, "text/markdown": fresh.markdown, "text/plain": repr(fresh)}


def joined_streams(outputs: list) -> list:
    """`outputs` with consecutive stream outputs of one stream (stdout, stderr) joined into one. The kernel
    sends a cell's printed text in as many messages as its flushes happened to cut it, so under load one
    ``print`` can arrive as its text and, apart, its final newline: the book showed that newline as an empty
    code box (chapter 3's smoke page, in one clean-clone run of two)."""
    joined = []
    for output in outputs:
        last = joined[-1] if joined else None
        if (output.get("output_type") == "stream" and last is not None and last.get("output_type") == "stream"
                and last.get("name") == output.get("name")):
            last["text"] = last["text"] + output["text"]
        else:
            joined.append(output)
    return joined


def execute_chapter(notebook: Path, output_dir: Path, parameters: dict, *, progress: bool = True) -> Path:
    """Execute one notebook with papermill; raise :class:`ChapterFailed` naming the failing cell."""
    output_dir.mkdir(parents=True, exist_ok=True)
    output = output_dir / notebook.name
    os.environ.setdefault("EXPLAINOPT_RESULTS", str((output_dir / "results").resolve()))
    try:
        papermill.execute_notebook(str(notebook), str(output), parameters=parameters, cwd=str(ROOT),
                                   progress_bar=progress, kernel_name="python3")
    except papermill.PapermillExecutionError as exc:
        raise ChapterFailed(
            f"{notebook.name}: cell {exc.exec_count} raised {exc.ename}: {exc.evalue} "
            f"(executed copy with the traceback: {output})"
        ) from None
    tidy_executed(output)
    return output


def committed_folders() -> dict[str, Path]:
    """The committed verdicts by scale: ``{"book scale": results/book, "paper scale": results/paper}``."""
    return {f"{scale} scale": RESULTS / scale for scale in COMMITTED}


def verdict_summary(chapter: str) -> reporting.Rendered:
    """The box a chapter opens with (a hidden-input cell right after its set-up): its committed verdicts at
    the book and the paper scale (:func:`~explainopt.reporting.verdict_summary`), whatever scale renders it.

    Its table sits in a block of its own: the theme gives each child of an admonition side margins, so a
    table of 100 % width directly inside the box would stick out of it by those margins."""
    box = reporting.verdict_summary(chapter, committed_folders())
    return reporting.Rendered(box.html.replace("<table", "<div><table").replace("</table>", "</table></div>"),
                              box.markdown)


def chapter_link(chapter: str) -> str:
    """A MyST link to a chapter's page, titled by the page ("chapter NN" when it has no notebook)."""
    notebooks = chapter_notebooks([chapter], missing_ok=True)
    return f"{{doc}}`/book/chapters/{notebooks[0].stem}`" if notebooks else f"chapter {chapter}"


def write_verdict_totals(output_dir: Path) -> Path:
    """``verdict_totals.md`` (included by the landing page): the committed verdicts counted over every chapter
    at the book and at the paper scale, then one line per chapter, linked to it; computed from
    ``results/book`` and ``results/paper`` (:data:`RESULTS`)."""
    table = reporting.totals_table(committed_folders())
    table["chapter"] = ["**every chapter**" if c == "all" else chapter_link(c) for c in table.chapter]
    page = output_dir / "verdict_totals.md"
    page.write_text(
        "The verdicts committed with the book, counted by scale (the {doc}`/book/chapters/status` page has "
        "them claim by claim). A *partial grid* is one whose cells are not all computed yet: its verdicts "
        "rest on the cells computed so far; *still to compute* estimates, in core time, what the missing cells "
        "would take (the status page says how).\n\n" + reporting.markdown_table(table, raw=("chapter",)) + "\n",
        encoding="utf-8")
    return page


STATUS_INTRO = (
    "# Reproduction status\n\n"
    "Generated by `python -m explainopt.book run` from the claims tables that the executed chapters saved; "
    "nothing on this page is written by hand. A claim is *reproduced* when our number supports the paper's "
    "statement, *partly* when it does in part, *differs* when it does not (the chapter explains why), "
    "*undecided* when its check read the evidence its rule needs and reads it neither way (a shortfall "
    "within noise, a test short of significance), and *not run* when it has less evidence than that or lacks a "
    "number it needs (at a small scale, most often); the counts name their denominators (the claims decided, "
    "and all claims). The book- and paper-scale verdicts are those committed in `results/book/` and "
    "`results/paper/`, the latter rendered from the results store. *Grid* is how much of a chapter's grid the "
    "verdicts rest on; a *partial grid* misses cells, and its verdicts may still change. *Compute time* is the "
    "sum of the grid cells' own compute times, each recorded in the cell's provenance when it was computed; "
    "*not recorded* where the results were saved before it was recorded (the time to render a chapter, at the "
    "paper scale from the store, is not a compute time and is not shown). *Still to compute* estimates the "
    "compute time of the missing cells, one core each: a cell at the median of its configuration's stored cells, "
    "else at that of the most similar configurations' (chapter 2's regions: the same model, radius and dataset at "
    "the other norm, else the same model and radius, else the same model), else at the grid's median; "
    "*borrowed* is the part priced from other configurations, a guess that their own first cells correct; "
    "*unknown* where a grid has no stored cell to go by.\n")


def status_folders(output_dir: Path) -> dict[str, Path]:
    """The results the status page shows: the committed scales, and first this build's own results when it
    ran at another scale (a smoke build)."""
    built = output_dir / "results"
    scales = {json.loads(p.read_text())["provenance"].get("scale") for p in built.glob("[0-9]*.json")}
    if scales and scales <= set(COMMITTED):  # a book or paper build shows as the committed verdicts
        return committed_folders()
    return {f"this build ({', '.join(sorted(map(str, scales)))} scale)" if scales else "this build": built,
            **committed_folders()}


def status_section(label: str, folder: Path) -> str:
    """The status page's section of one results folder: a row per chapter
    (:func:`~explainopt.reporting.status_table`)."""
    table = reporting.status_table(folder)
    body = reporting.markdown_table(table) if len(table) else "_No chapter has been executed at this scale yet._"
    return f"## {label.capitalize()}\n\n{body}\n"


def write_status_page(output_dir: Path) -> Path:
    """The reproduction-status page, generated from the chapters' results files: a table per scale (the
    build's own when it ran at a scale that is not committed, the book's and the paper's committed verdicts),
    then every claim with its verdict at each scale. Every cell is escaped."""
    folders = status_folders(output_dir)
    claims = verdicts.claims_by_scale(folders)
    detail = f"## Every claim, by scale\n\n{reporting.markdown_table(claims)}\n" if len(claims) else ""
    page = output_dir / "status.md"
    page.write_text("\n".join([STATUS_INTRO, *(status_section(l, f) for l, f in folders.items()), detail]),
                    encoding="utf-8")
    return page


#: The exercises' levels, easiest first: every exercise names one in its ``*Level: ...*`` line.
LEVELS = ("predict-then-run", "derivation", "implementation", "research")
#: A MyST directive's opening fence (backticks or colons, three or more) and its name.
FENCE = re.compile(r"^(?P<fence>`{3,}|:{3,})\{(?P<name>[\w-]+)\}[ \t]*(?P<argument>[^\n]*)$")


def _closing_fence(lines: list[str], start: int, fence: str) -> int:
    """The index of the line that closes the directive opened by `fence` at `start` (len(lines) if none)."""
    end = start + 1
    while end < len(lines) and not (lines[end].strip().startswith(fence) and set(lines[end].strip()) == {fence[0]}):
        end += 1
    return end


def directive_blocks(source: str, name: str) -> list[dict]:
    """The ``{name}`` directives of a MyST text, in order: ``argument`` (the title), ``options`` (the
    ``:key: value`` lines that open the block) and ``body``; nested directives stay in the body."""
    lines, blocks, i = source.splitlines(), [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        end = _closing_fence(lines, i, m["fence"])
        if m["name"] == name:
            body, options = lines[i + 1:end], {}
            while body and re.match(r"^:[\w-]+:", body[0]):
                key, _, value = body.pop(0)[1:].partition(":")
                options[key] = value.strip()
            blocks.append({"argument": m["argument"].strip(), "options": options, "body": "\n".join(body)})
        i = end + 1
    return blocks


def chapter_numbers(toc: Path | None = None) -> dict[str, int]:
    """The number Sphinx gives each page of a ``numbered`` part of ``_toc.yml`` (the chapters: 1, 2, ...),
    by the page's name (``01_optimizing_explanations``). Exercises are numbered within their chapter from
    it (``numfig_secnum_depth: 1`` in ``_config.yml``): Exercise 2.1 is chapter 2's first."""
    parts = yaml.safe_load((toc or ROOT / "_toc.yml").read_text()).get("parts", [])
    numbers = {}
    for part in (p for p in parts if p.get("numbered")):
        for k, entry in enumerate(part.get("chapters", []), start=1):
            numbers[Path(entry["file"]).name] = k
    return numbers


def exercises(notebooks: list[Path] | None = None) -> pd.DataFrame:
    """Every exercise of the chapters, read from the notebooks' Markdown cells, in the book's order: chapter,
    number (as the book shows it: ``"2.1"``, numbered within the chapter, :func:`chapter_numbers`), label,
    title, level (the ``*Level: ...*`` line each exercise starts with, one of :data:`LEVELS`), minutes (its
    ``*Time: ~N min*``, a student's time once the chapter is read; None where missing) and whether it has a
    ``{hint}`` block."""
    numbers, rows, unnumbered = chapter_numbers(), [], 0
    for notebook in notebooks or chapter_notebooks():
        cells = nbformat.read(notebook, as_version=4).cells
        found = [block for cell in cells if cell.cell_type == "markdown"
                 for block in directive_blocks(cell.source, "exercise")]
        for k, block in enumerate(found, start=1):
            level = re.search(r"\*Level:\s*(?P<level>[^.*]+)", block["body"])
            minutes = re.search(r"\*Time:\s*~?\s*(?P<minutes>\d+)\s*min", block["body"])
            hint = bool(directive_blocks(block["body"], "hint"))
            if notebook.stem in numbers:
                number = f"{numbers[notebook.stem]}.{k}"
            else:  # a page outside the numbered part: Sphinx counts its exercises across the book
                unnumbered += 1
                number = str(unnumbered)
            rows.append({"chapter": notebook.stem, "number": number, "label": block["options"].get("label"),
                         "title": block["argument"], "level": level["level"].strip().lower() if level else None,
                         "minutes": int(minutes["minutes"]) if minutes else None, "hint": hint})
    return pd.DataFrame(rows, columns=["chapter", "number", "label", "title", "level", "minutes", "hint"])


def minutes_text(minutes) -> str:
    """``"45 min"``, ``"1 h 30 min"``, ``"2 h"``; ``"—"`` when not given."""
    if minutes is None or pd.isna(minutes):
        return "—"
    hours, rest = divmod(int(minutes), 60)
    return " ".join([f"{hours} h"] * bool(hours) + [f"{rest} min"] * bool(rest or not hours))


def _level_order(levels) -> list[str]:
    return [lv for lv in LEVELS if lv in set(levels)] + sorted(set(levels) - set(LEVELS) - {None})


def write_exercise_index(output_dir: Path) -> Path:
    """``exercise_index.md`` (included by the teaching page), generated from the notebooks: the exercises'
    counts and times by level, then each chapter's exercises grouped by level, easiest first, with number
    (a link), title, level and time estimate."""
    table = exercises()
    page = output_dir / "exercise_index.md"
    if table.empty:
        page.write_text("_No exercise yet._\n", encoding="utf-8")
        return page
    levels = _level_order(table.level)
    lines = [f"{len(table)} exercises in {table.chapter.nunique()} chapters, about "
             f"{minutes_text(table.minutes.sum())} of work in all. Times are estimates for a student who has read "
             "the chapter.\n", "| level | exercises | time |", "|---|---|---|"]
    for level in levels:
        rows = table[table.level == level]
        lines.append(f"| {level} | {len(rows)} | {minutes_text(rows.minutes.sum())} |")
    numbers = chapter_numbers()
    for chapter, rows in table.groupby("chapter", sort=False):
        name = f"Chapter {numbers[chapter]}" if chapter in numbers else f"Appendix {chapter[:2]}"
        lines += ["", f"### {name}", "",
                  f"{{doc}}`/book/chapters/{chapter}`: {len(rows)} exercises, about "
                  f"{minutes_text(rows.minutes.sum())}.", "",
                  "| level | exercise | time |", "|---|---|---|"]
        for level in _level_order(rows.level):
            for row in rows[rows.level == level].itertuples():
                title, time_ = row.title.replace("|", "\\|"), minutes_text(row.minutes)
                lines.append(f"| {level} | {{numref}}`Exercise %s <{row.label}>`: {title} | "
                             f"{'~' * (time_ != '—')}{time_} |")
    page.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return page


def write_pages(output_dir: Path) -> None:
    """The generated pages of the book: the reproduction status, the landing page's verdict totals and the
    exercise index."""
    write_status_page(output_dir)
    write_verdict_totals(output_dir)
    write_exercise_index(output_dir)


#: Configuration keys that number one replicate of an experiment (a factual, an instance, a simulation, a
#: chunk of samples, a seed): a cell's *configuration* is its config without them (:func:`configuration`).
REPLICATE_KEYS = ("index", "instance", "chunk", "seed", "sim", "factual")


def configuration(config: dict) -> str:
    """The configuration a cell is a replicate of: its config without :data:`REPLICATE_KEYS`, as a key."""
    return json.dumps({k: v for k, v in config.items() if k not in REPLICATE_KEYS}, sort_keys=True, default=str)


def fill_rounds(grid: Grid, stored: set[int]) -> dict[int, int]:
    """The cells of `grid` not in `stored` (indices) -> their round: a configuration's first cell is in round
    0, its second in round 1, and so on, counting its cells already stored; in the grid's own order
    (``grid.order``, the chapter's priorities; the cells it leaves out after it, as listed)."""
    order = list(grid.order) if grid.order is not None else []
    order += sorted(set(range(len(grid))) - set(order))
    count = Counter(configuration(grid.configs[i]) for i in stored)
    rounds = {}
    for i in (i for i in order if i not in stored):
        key = configuration(grid.configs[i])
        rounds[i], count[key] = count[key], count[key] + 1
    return rounds


def fill_order(grid: Grid, stored: set[int]) -> list[int]:
    """The cells of `grid` not in `stored` (indices), stratified: round-robin over the configurations
    (:func:`fill_rounds`), so that every configuration gets its first cell before any gets a second, its
    second before any gets a third; within a round, the grid's own order."""
    rounds = fill_rounds(grid, stored)
    return sorted(rounds, key=rounds.get)  # a stable sort: the grid's order within each round


def cost_estimates(grid: Grid, store) -> tuple[list[float | None], list[float | None]]:
    """Per cell of `grid`, two estimates of its compute time (seconds): its *own*, the median stored wall time
    of its configuration's cells (:func:`configuration`; current or stale cells alike, wherever computed), and,
    for a configuration with none, a *borrowed* one: the median over the stored cells that share its values of
    the longest leading part of ``grid.cost_by`` that any stored cell shares. None where there is no such cell."""
    stored = stored_times(grid, store)
    times: dict[str, list[float]] = {}
    for config, seconds in stored:
        times.setdefault(configuration(config), []).append(seconds)
    own = [_median(times.get(configuration(c))) for c in grid.configs]
    return own, [borrowed_cost(c, stored, grid.cost_by) if o is None else None for c, o in zip(grid.configs, own)]


def stored_times(grid: Grid, store) -> list[tuple[dict, float]]:
    """(config, wall time in seconds) of every cell of `grid`'s function in `store` that recorded one."""
    if not isinstance(store, ResultStore):
        return []
    return [(cell["provenance"]["config"], cell["provenance"]["wall_time_s"]) for cell in store.all_cells(grid.func)
            if cell["provenance"].get("wall_time_s") is not None]


def borrowed_cost(config: dict, stored: list[tuple[dict, float]], cost_by: tuple[str, ...]) -> float | None:
    """The median wall time of the `stored` (config, seconds) that share `config`'s values of the longest
    leading part of `cost_by` any of them shares; None where none shares even the first key."""
    for k in range(len(cost_by), 0, -1):
        alike = [s for c, s in stored if all(c.get(key) == config.get(key) for key in cost_by[:k])]
        if alike:
            return _median(alike)
    return None


def _median(values) -> float | None:
    return float(pd.Series(values).median()) if values else None


def matches(config: dict, where: dict | None) -> bool:
    """Whether a cell's `config` has every value `where` names (``{"norm": "l2"}``; None: every cell)."""
    return not where or all(config.get(key) == value for key, value in where.items())


def estimated_costs(own: list, borrowed: list) -> list[float | None]:
    """Each cell's estimated compute time (seconds) from :func:`cost_estimates`: its own, else its borrowed one,
    else the grid's median own estimate (None where the grid has none: the store holds none of its cells)."""
    known = [s for s in own if s is not None]
    guess = float(pd.Series(known).median()) if known else None
    return [o if o is not None else b if b is not None else guess for o, b in zip(own, borrowed)]


def grid_plan(name: str, grid: Grid, store, *, max_cell_s: float | None = None, where: dict | None = None) -> dict:
    """What :func:`fill` would compute of one grid: ``todo`` (indices, in :func:`fill_order`), ``first`` (those
    of them that are a configuration's first cell, in the same order), ``hours`` (estimated core-hours,
    :func:`cost_estimates`: a cell's own estimate, else one borrowed from similar configurations, else the grid's
    median own estimate), ``borrowed`` and ``unknown`` (the cells of `todo` counted at the second and at the
    third), and the cells left out by the cost filter, which reads own estimates only (a borrowed one is a guess,
    and a burst that guessed wrong waits on a long cell): ``too_long`` (estimated over `max_cell_s`) and
    ``unknown_left`` (no own estimate). `where`: only the cells whose configuration :func:`matches` it (the
    others are neither computed nor counted as left out)."""
    stored = {i for i, c in enumerate(grid.configs) if store.get(grid.func, c) is not None}
    (own, borrowed), rounds = cost_estimates(grid, store), fill_rounds(grid, stored)
    order = [i for i in sorted(rounds, key=rounds.get) if matches(grid.configs[i], where)]
    too_long = [i for i in order if max_cell_s is not None and own[i] is not None and own[i] > max_cell_s]
    unknown_left = [i for i in order if max_cell_s is not None and own[i] is None]
    todo = [i for i in order if i not in set(too_long) | set(unknown_left)]
    costs = estimated_costs(own, borrowed)
    unknown = sum(own[i] is None and borrowed[i] is None for i in todo)
    hours = None if any(costs[i] is None for i in todo) else sum(costs[i] for i in todo) / 3600
    return {"grid": name, "cells": len(grid), "stored": len(stored), "todo": todo, "first": [i for i in todo if rounds[i] == 0],
            "hours": hours, "borrowed": sum(own[i] is None and borrowed[i] is not None for i in todo),
            "unknown": unknown, "too_long": len(too_long), "unknown_left": len(unknown_left)}


def chosen_grids(chapter: str, grids: dict, only: list[str] | None) -> list[str]:
    """The names of the chapter's `grids` that `only` names (all when None); a ValueError naming the grids
    for a name the chapter has no grid of."""
    unknown = set(only or ()) - set(grids)
    if unknown:
        raise ValueError(f"chapter {chapter} has no grid {sorted(unknown)}; its grids: {list(grids)}")
    return [name for name in grids if not only or name in only]


def chapter_plan(chapter: str, scale: str = "paper", *, only: list[str] | None = None,
                 max_cell_s: float | None = None, where: dict | None = None) -> list[dict]:
    """:func:`grid_plan` of every grid of the chapter (those named in `only`), each with the claims it decides
    (the chapter module's ``GRID_CLAIMS``, where it declares them). A grid that depends on another's cells
    (chapter 4's factuals on its networks) shows the cells it has now."""
    module = chapters.module(chapter)
    grids = module.grids(chapters.settings(module.SCALES, scale))
    store, claims = chapter_cache(chapter, scale), getattr(module, "GRID_CLAIMS", {})
    return [{**grid_plan(name, grids[name], store, max_cell_s=max_cell_s, where=where), "claims": claims.get(name, [])}
            for name in chosen_grids(chapter, grids, only)]


def plan_text(chapter: str, rows: list[dict], *, max_cell_s: float | None = None, where: dict | None = None) -> str:
    """The plan a budgeted run prints before it starts (`rows`: :func:`chapter_plan`'s): per grid the cells it
    will compute, their estimated core-hours, the cells the cost filter (`max_cell_s`) leaves out and the
    claims the grid decides."""
    def hours(h):
        return "unknown" if h is None else f"{h:.2f}"

    limit = "" if max_cell_s is None else f" (cells estimated at most {max_cell_s:g} s)"
    limit += "" if not where else " (cells where " + ", ".join(f"{k}={v}" for k, v in where.items()) + ")"
    lines = [f"[explainopt] plan for chapter {chapter}{limit}"]
    for r in rows:
        left = []
        if r["too_long"]:
            left.append(f"{r['too_long']} over {max_cell_s:g} s")
        if r["unknown_left"]:
            left.append(f"{r['unknown_left']} of unknown cost")
        lines.append(f"  {r['grid']}: {len(r['todo'])} to compute ({len(r['first'])} a configuration's first) of "
                     f"{r['cells']} ({r['stored']} stored), about {hours(r['hours'])} core-hours"
                     + (f", {r['borrowed']} of them estimated from similar configurations" if r["borrowed"] else "")
                     + (f", {r['unknown']} of them at the grid's median" if r["unknown"] and r["hours"] else "")
                     + (f"; left out: {', '.join(left)}" if left else ""))
        if r["todo"]:
            lines += [f"      decides: {c}" for c in r["claims"]]
    total = [r["hours"] for r in rows if r["todo"]]
    lines.append(f"  in all: {sum(len(r['todo']) for r in rows)} cells, about "
                 f"{hours(None if None in total else sum(total))} core-hours")
    return "\n".join(lines)


def fill(chapter: str, scale: str = "paper", *, budget=None, n_jobs: int = -1, scheduler: str | None = None,
         only: list[str] | None = None, max_cell_s: float | None = None, where: dict | None = None,
         isolate: bool = False) -> dict:
    """Compute the cells of a chapter's grids (those named in `only`, default all) that its results store
    lacks, until `budget` (seconds or ``"2h"``) is spent, claims first: first every configuration's first
    cell, grid after grid in the chapter's order, then the other cells, grid after grid, in round-robin over
    the configurations (:func:`fill_order`). Two passes, not one per round: each pass of a grid ends when its
    slowest cell does, and its other workers wait. `max_cell_s`: only cells estimated to take at most this
    long (its configuration's stored cells, :func:`cost_estimates`; a configuration with none is left out);
    `where`: only cells whose configuration has these values (:func:`matches`, e.g. ``{"norm": "l2"}``).
    Each grid is read again before each of its passes: a grid may depend on an earlier one's cells (chapter 4 draws
    its factuals with its stored networks). `isolate`: with n_jobs=1, each cell in a worker process
    (:func:`fill_isolated`; the command line's budgeted run). Returns ``{grid: {"cells", "computed", "stale"}}``
    afterwards."""
    module = chapters.module(chapter)
    settings = chapters.settings(module.SCALES, scale)
    deadline = None if budget is None else time.monotonic() + parse_duration(budget)
    store = chapter_cache(chapter, scale)
    names = chosen_grids(chapter, module.grids(settings), only)
    for first in (True, False):
        for name in names:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if left == 0:
                break
            grid = module.grids(settings)[name]
            todo = grid_plan(name, grid, store, max_cell_s=max_cell_s, where=where)["first" if first else "todo"]
            if todo:
                cells, description = [grid.configs[i] for i in todo], f"{chapter} {name}"
                if isolate and n_jobs == 1 and not scheduler:
                    fill_isolated(grid.func, cells, store, budget=left, description=description)
                else:
                    run_grid(grid.func, cells, cache=store, budget=left, n_jobs=n_jobs, scheduler=scheduler,
                             description=description)
    grids = module.grids(settings)
    return {name: grid_progress(grids[name].func, grids[name].configs, store) for name in names}


def fill_isolated(func, configs: list[dict], store: ResultStore, *, budget: float | None = None,
                  description: str = "") -> None:
    """Compute the cells `configs` of one grid into `store`, one at a time in a worker process, for at most
    `budget` seconds. A worker killed outright (a native crash: SCIP aborted inside chapter 6's heloc forest
    cell) costs that cell only: a warning names it, it stays missing, and the fill goes on with a new worker.
    (Run in-process, such a crash ended the fill; :func:`~explainopt.experiments.run_grid` is left as it is,
    since chapter 4's cells call it and its code is in their fingerprints.) A fill killed or stopped
    (``kill``, SIGTERM) takes its worker down with it, and with it the worker's claim on its cell."""
    deadline = None if budget is None else time.monotonic() + budget
    for config in tqdm(configs, desc=description):
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            break
        worker = get_reusable_executor(max_workers=1, initializer=experiments._exit_with_parent)
        try:
            worker.submit(run_grid, func, [config], cache=store, budget=left, progress=False).result()
        except BrokenExecutor as error:
            warnings.warn(f"{func.__name__}{config}: its worker died ({error}); the cell stays missing",
                          RuntimeWarning, stacklevel=2)


def scheduler_slots(address: str) -> int:
    """How many cells a dask.distributed cluster computes at once: its workers' threads, all together."""
    from distributed import Client  # optional dependency (the `dask` extra)

    with Client(address, timeout=30) as client:
        return sum(w["nthreads"] for w in client.scheduler_info()["workers"].values())


def cells_in_flight(n_jobs: int, scheduler: str | None) -> int:
    """The `n_jobs` of a budgeted run: on a dask cluster with ``-1`` (the default), the cluster's threads
    (:func:`scheduler_slots`), else as given; a warning when a cluster gets two cells or fewer at once."""
    if scheduler and n_jobs in (-1, None):
        n_jobs = scheduler_slots(scheduler)
        print(f"[explainopt] {scheduler}: {n_jobs} worker threads, so {n_jobs} cells in flight", flush=True)
    if scheduler and n_jobs <= 2:
        warnings.warn(f"--scheduler {scheduler} with --jobs {n_jobs}: at most {n_jobs} cells in flight however large "
                      "the cluster is; leave --jobs out to use every worker thread", stacklevel=2)
    return n_jobs


def run(scale: str, only: list[str] | None = None, output_dir: Path | None = None,
        parameters: dict | None = None, *, budget=None, n_jobs: int = -1, scheduler: str | None = None,
        grids: list[str] | None = None, max_cell_s: float | None = None, where: dict | None = None,
        plan_only: bool = False, recompute: bool = False) -> list[Path]:
    """Execute the chapters at `scale` into `output_dir` (default ``book/chapters``); with a `budget`,
    first :func:`fill` their results stores (the budget is shared, chapter after chapter; `grids`: only
    the grids of these names; `max_cell_s`: only cells estimated to take at most this long; `where`: only
    cells whose configuration has these values), after printing
    each chapter's plan (:func:`plan_text`); `plan_only`: print the plans and stop. `recompute` (book scale
    only): the render computes every cell again, stored or not (:func:`chapter_cache`, :data:`RECOMPUTE`)."""
    if scale not in SCALES:
        raise ValueError(f"scale={scale!r}: expected one of {SCALES}")
    if recompute and scale != "book":
        raise ValueError(f"recompute at the {scale} scale: only a book-scale render computes its cells into a store "
                         "(the smoke scale's are in .cache/NN: delete it; a paper-scale render computes nothing)")
    output_dir = Path(output_dir or ROOT / "book" / "chapters")
    os.environ["EXPLAINOPT_RESULTS"] = str((output_dir / "results").resolve())
    if recompute:  # read by chapter_cache in the chapters' kernels
        os.environ[RECOMPUTE] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    notebooks = chapter_notebooks(only)
    with_grids = [nb.name[:2] for nb in notebooks if chapters.has_grids(nb.name[:2])]
    if plan_only or budget is not None:
        n_jobs = cells_in_flight(n_jobs, scheduler)
        for chapter in with_grids:
            print(plan_text(chapter, chapter_plan(chapter, scale, only=grids, max_cell_s=max_cell_s, where=where),
                            max_cell_s=max_cell_s, where=where), flush=True)
        if budget is not None:
            width = joblib.cpu_count() if n_jobs in (-1, None) and not scheduler else n_jobs
            print(f"[explainopt] the budget, {budget} on {width} workers, is {parse_duration(budget) * width / 3600:.2f} "
                  "core-hours", flush=True)
        if plan_only:
            return []
        deadline = time.monotonic() + parse_duration(budget)
        for chapter in with_grids:
            report = fill(chapter, scale, budget=max(0.0, deadline - time.monotonic()), n_jobs=n_jobs,
                          scheduler=scheduler, only=grids, max_cell_s=max_cell_s, where=where, isolate=True)
            for name, p in report.items():
                print(f"[explainopt] {chapter} {name}: {p['computed']} of {p['cells']} cells stored"
                      + (f" ({p['stale']} stale)" if p["stale"] else ""), flush=True)
    done = []
    for notebook in notebooks:
        start = time.perf_counter()
        print(f"[explainopt] {notebook.name} at scale {scale} ...", flush=True)
        done.append(execute_chapter(notebook, output_dir, {"scale": scale, **(parameters or {})}))
        print(f"[explainopt] {notebook.name} done in {time.perf_counter() - start:.0f} s", flush=True)
    write_pages(output_dir)
    return done


def build(root: Path | None = None, *, warnings_as_errors: bool = False) -> None:
    """``jupyter-book build`` with execution off; raises CalledProcessError on failure."""
    script = Path(sys.executable).with_name("jupyter-book")  # the CLI installed beside this Python
    cmd = [str(script) if script.exists() else "jupyter-book", "build", str(root or ROOT)]
    if warnings_as_errors:
        cmd += ["-W", "-n", "--keep-going"]
    subprocess.run(cmd, check=True)


def prepare_student_copy(chapter: str, folder: Path | None = None, scale: str = "smoke") -> Path:
    """A copy of the chapter's notebook for a student, its parameters set to `scale` (not executed):
    ``student/NN_name.ipynb``; an existing copy (the student's own edits) is never overwritten."""
    notebook = chapter_notebooks([chapter])[0]
    target = Path(folder or ROOT / "student") / notebook.name
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        papermill.execute_notebook(str(notebook), str(target), parameters={"scale": scale}, prepare_only=True,
                                   kernel_name="python3")
    return target


# --------------------------------------------------------------------------- the student edition

#: The sphinx-exercise directives that hold a solution: a block, or everything between a start and an end.
SOLUTION_DIRECTIVES = ("solution", "solution-start", "solution-end")
STUDENT_NOTE = ("```{note}\nThis is the **student edition** of the book: every exercise keeps its level, time and "
                "hints, and the solutions are left out. The full book shows them, folded under each exercise.\n```\n")


def _drop_solutions(source: str, inside: bool) -> tuple[str, bool]:
    """A Markdown text without its solution directives and what lies between a ``{solution-start}`` and its
    ``{solution-end}``; `inside`: whether the text starts inside such a pair (it returns the state at its end)."""
    lines, kept, i = source.splitlines(), [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if m:
            end = _closing_fence(lines, i, m["fence"])
            if m["name"] in SOLUTION_DIRECTIVES:
                inside = {"solution-start": True, "solution-end": False}.get(m["name"], inside)
            elif not inside:
                kept += lines[i:end + 1]
            i = end + 1
            continue
        if not inside:
            kept.append(lines[i])
        i += 1
    return "\n".join(kept).strip("\n"), inside


def strip_solutions(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy of a chapter notebook without its solutions: every ``{solution}`` block, and every cell,
    Markdown or code (with its outputs), from a ``{solution-start}`` to its ``{solution-end}``. The exercises
    and their hints stay; a Markdown cell left empty is dropped."""
    out = copy.deepcopy(nb)
    cells, inside = [], False
    for cell in out.cells:
        if cell.cell_type == "markdown":
            cell.source, inside_after = _drop_solutions(cell.source, inside)
            if cell.source.strip():
                cells.append(cell)
            inside = inside_after
        elif not inside:
            cells.append(cell)
    out.cells = cells
    return out


def student_book(chapters_dir: Path | None = None, target: Path | None = None, *, build_html: bool = True) -> Path:
    """The student edition of the book, without solutions (``make student-book``): the executed chapters of
    `chapters_dir` (default ``book/chapters``, as ``make book`` leaves them) and the generated pages beside
    them, with the book's pages and configuration, copied into `target` (default ``_build/student``), the
    solutions removed (:func:`strip_solutions`) and a note on the landing page; then built there with
    jupyter-book. Returns the folder of the HTML (``_build/student/_build/html``)."""
    chapters_dir = Path(chapters_dir or ROOT / "book" / "chapters")
    target = Path(target or ROOT / "_build" / "student")
    executed = chapter_notebooks(folder=chapters_dir)
    if not executed:
        raise FileNotFoundError(f"{chapters_dir}: no executed chapter; `make book` (python -m explainopt.book run) "
                                "executes them first")
    shutil.rmtree(target / "book", ignore_errors=True)
    (target / "book" / "chapters").mkdir(parents=True)
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    config["title"] = f"{config.get('title', 'explainopt')} (student edition)"
    (target / "_config.yml").write_text(yaml.safe_dump(config, allow_unicode=True, sort_keys=False), encoding="utf-8")
    shutil.copy(ROOT / "_toc.yml", target / "_toc.yml")
    for page in (ROOT / "book").glob("*.*"):
        shutil.copy(page, target / "book" / page.name)
    for page in chapters_dir.glob("*.md"):  # status, verdict totals, exercise index
        shutil.copy(page, target / "book" / "chapters" / page.name)
    for notebook in executed:
        nbformat.write(strip_solutions(nbformat.read(notebook, as_version=4)),
                       target / "book" / "chapters" / notebook.name)
    intro = target / "book" / "intro.md"
    title, _, rest = intro.read_text(encoding="utf-8").partition("\n")
    intro.write_text(f"{title}\n\n{STUDENT_NOTE}{rest}", encoding="utf-8")
    if build_html:
        shutil.rmtree(target / "_build", ignore_errors=True)
        build(target)
    return target / "_build" / "html"


def _key_value(text: str) -> tuple[str, object]:
    """``"norm=l2"`` -> ``("norm", "l2")``, the value read as JSON when it parses (``"rho=0.05"`` -> 0.05)."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise SystemExit(f"--where {text!r}: expected KEY=VALUE, e.g. norm=l2")
    return key, _parse_value(value)


def _parse_value(text: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _chapter_folders(folder: Path) -> list[Path]:
    """The chapter folders of a store copy: ``results/<scale>`` (its sub-folders), or one chapter's folder."""
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder}: no such folder; give another copy's results/paper folder")
    if any(folder.glob("*.jsonl.gz")):
        return [folder]
    chapters_in = sorted(p for p in folder.iterdir() if p.is_dir() and any(p.glob("*.jsonl.gz")))
    if not chapters_in:
        raise ValueError(f"{folder}: no results-store files (NN/<function>.jsonl.gz) in it; give another copy's "
                         "results/paper folder")
    return chapters_in


def merge(folder: str | Path, scale: str = "paper", *, into: str | Path | None = None) -> dict[str, dict]:
    """Fold another copy of the results store (``folder``: another clone's or machine's ``results/<scale>``,
    one sub-folder per chapter, or one chapter's folder) into this one (``into``, default
    ``results/<scale>``): every cell computed by the current code that this store lacks is appended with its
    own provenance, and every cell the other store retimed (:func:`retime`) supersedes the stored cell it was
    computed again from, where its result reproduces that cell's (:func:`_not_retimed_from`). Nothing is
    rewritten, only appended, so that a fill writing to this store meanwhile loses nothing. Returns per
    chapter ``{"added": n, "retimed": n, "not_taken": {key: why}, "problems": [...]}``: the retimed cells it
    did not take, and the files or cells it could not read (not a store file, damaged, a function the code no
    longer has, cells of other code), which it skips."""
    into = Path(into or RESULTS / scale)
    report = {}
    for theirs in _chapter_folders(Path(folder)):
        mine, problems, added, retimed, not_taken = ResultStore(into / theirs.name), [], 0, 0, {}
        for path in sorted(theirs.glob("*.jsonl.gz")):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    cells = read_store_file(path)
                    func = resolve_function(cells[0]["provenance"]["function"]) if cells else None
                except StoreError as exc:
                    problems.append(str(exc))
                    continue
            problems += [str(w.message) for w in caught]
            other = ResultStore(theirs)
            current = other.cells(func) if func else []
            stale = len(other.all_cells(func)) - len(current) if func else 0
            problems += [f"{path}: {stale} cells computed by other code, not added"] if stale else []
            for cell in current:
                config = cell["provenance"]["config"]
                stored = mine.get(func, config)
                if stored is None:
                    added += 1
                elif not (why := _not_retimed_from(cell, stored)):
                    retimed += 1
                else:
                    if cell["provenance"].get("retimed") and stored["provenance"] != cell["provenance"]:
                        not_taken[cell["key"]] = why
                    continue
                mine.put(func, config, {"result": cell["result"], "provenance": cell["provenance"]})
        report[theirs.name] = {"added": added, "retimed": retimed, "not_taken": not_taken, "problems": problems}
    return report


#: What a retimed cell's provenance names of the cell it was computed again from (:func:`retime`).
RETIMED_FROM = ("machine", "wall_time_s", "date")
#: How :func:`_not_retimed_from` begins when a retimed cell's result does not reproduce the stored one's.
RESULT_DIFFERS = "its result differs from the stored cell's"


def _not_retimed_from(cell: dict, stored: dict) -> str:
    """Why `cell` is not `stored` computed again on another machine by :func:`retime` ("" if it is): its
    provenance must name the stored cell's machine, wall time and date (all recorded), and its result
    reproduce the stored one, times aside (:func:`~explainopt.experiments.differences`), neither decided by
    a limit (a time limit's answer depends on the machine's speed)."""
    old = cell["provenance"].get("retimed") or {}
    if not all(old.get(k) is not None and old.get(k) == stored["provenance"].get(k) for k in RETIMED_FROM):
        return "it names another stored cell (machine, wall time, date) than this store's"
    if experiments.limited(stored["result"]) or experiments.limited(cell["result"]):
        return "a limit decided one of the two results"
    found = experiments.differences(stored["result"], cell["result"])
    return f"{RESULT_DIFFERS}: {'; '.join(found)}" if found else ""


#: Stale cells that took at most this long (seconds, stored wall time) are all computed again by
#: :func:`revalidate`, not sampled: a 5% sample has little power against a change that moves a few cells.
#: Measured after SCIP lost its NLP relaxation: of the cells re-stamped on a sample that reproduced, 4 of 65
#: paper-scale chapter-2 baseline cells moved (by up to 1.3e-4), 7 of 13 book-scale ones (6 decided by the
#: book's 8 s limit) and 3 of 30 book-scale chapter-6 cells; none of them had been sampled.
RECOMPUTE_UNDER_S = 60.0


def cheap_and_costly(store: ResultStore, func, configs: list[dict], seconds: float) -> tuple[list[dict], list[dict]]:
    """`configs` split by the stored wall time of their cell (of any code version): at most `seconds`, or
    longer (a configuration with no stored cell counts as costly; :func:`~explainopt.experiments.revalidate`
    passes over it anyway)."""
    wall = {c["key"]: c["provenance"].get("wall_time_s") for c in store.all_cells(func)}
    cheap = [c for c in configs if (wall.get(experiments.config_key(func, c)) or float("inf")) <= seconds]
    keys = {experiments.config_key(func, c) for c in cheap}
    return cheap, [c for c in configs if experiments.config_key(func, c) not in keys]


def revalidate(chapters_: list[str] | None = None, scale: str = "paper", *,
               recompute_under: float = RECOMPUTE_UNDER_S, **options) -> list[dict]:
    """:func:`~explainopt.experiments.revalidate` the cells of the chapters' current grids (default: every
    chapter with a store), function by function in the order of the chapter's grids (a cell may read an
    earlier grid's cells from the store, e.g. chapter 4's factuals its networks), grids read again after
    each. Stale cells that took at most `recompute_under` seconds are all computed again (and stored);
    only the costlier ones are judged on a sample and re-stamped (:func:`cheap_and_costly`). Each report
    says which (``"all"``: every stale cell computed again)."""
    reports = []
    for folder in sorted(p for p in (RESULTS / scale).iterdir() if p.is_dir()):
        if chapters_ and folder.name not in chapters_:
            continue
        store, module = ResultStore(folder), chapters.module(folder.name)
        settings = chapters.settings(module.SCALES, scale)
        in_grids = list(dict.fromkeys(grid.func for grid in module.grids(settings).values()))
        stored = store.functions()
        for func in [f for f in in_grids if f in stored] + [f for f in stored if f not in in_grids]:
            configs = [c for grid in module.grids(settings).values() if grid.func is func for c in grid.configs]
            cheap, costly = cheap_and_costly(store, func, configs, recompute_under)
            for subset, every in ((cheap, True), (costly, False)):
                report = experiments.revalidate(store, func, configs=subset,
                                                **{**options, "fraction": 1.0} if every else options)
                if every and not report["stale"]:
                    continue
                reports.append({"chapter": folder.name, **report, "all": every})
                print(f"[explainopt] {folder.name} {func.__name__}: {_revalidation_text(report, every)}", flush=True)
    return reports


def _revalidation_text(report: dict, every: bool = False) -> str:
    if not report["stale"]:
        return "nothing stale"
    reproduce = report["sampled"] - len(report["inconclusive"]) - len(report["differs"])
    if every:
        text = f"{report['stale']} stale cells short enough to compute all again: {reproduce} reproduce"
        if report["inconclusive"]:
            text += f" ({len(report['inconclusive'])} decided by a limit)"
        if report["differs"]:
            text += "; differ (stored as computed now): " + "; ".join(
                f"{k[:8]} {d[0]}" for k, d in list(report["differs"].items())[:5])
        return text
    text = f"{report['stale']} stale, {reproduce} of {report['sampled']} sampled cells reproduce"
    if report["inconclusive"]:
        text += f" ({len(report['inconclusive'])} decided by a limit)"
    text += f"; {report['restamped']} re-stamped"
    if report["kept"]:
        text += "; kept stale: " + "; ".join(f"the cells of {old[:8]} ({why})" for old, why in report["kept"].items())
    if report["differs"]:
        text += "; differ: " + "; ".join(f"{k[:8]} {d[0]}" for k, d in list(report["differs"].items())[:5])
    return text


def retime(chapter: str, scale: str = "paper", *, grids: list[str] | None = None, where: dict | None = None,
           n_jobs: int = 1, tolerance: float = experiments.TOLERANCE) -> dict:
    """Compute stored cells again on this machine, so that their wall times compare with the cells this machine
    computed (a chapter compares times only between cells of one machine, :meth:`ChapterRun.machines`; chapter
    5's benchmark solve times pair each factual's naive and benchmark cells). The cells: the current ones of
    the chapter's grids (`grids`, default all) whose configuration has the values in `where`, computed on
    another machine or before the processor was recorded. A cell that reproduces (times aside,
    :func:`~explainopt.experiments.differences`) is stored as computed now (a line appended, which supersedes
    the old one), its provenance naming the machine, wall time and date it replaces (``retimed``); one that
    does not, or that a limit decided (its time then
    says little), is kept as it was and reported. Returns ``{"cells", "retimed", "differs": {key: [...]},
    "limited": [keys]}``."""
    store, module, here = ResultStore(RESULTS / scale / chapter), chapters.module(chapter), machine()
    todo = []
    for name, grid in module.grids(chapters.settings(module.SCALES, scale)).items():
        if grids and name not in grids:
            continue
        cells = [store.get(grid.func, c) for c in grid.configs if matches(c, where)]
        todo += [(grid.func, c) for c in cells if c is not None and c["provenance"].get("machine") != here]
    again = joblib.Parallel(n_jobs=n_jobs)(joblib.delayed(experiments.compute_cell)(func, cell["provenance"]["config"])
                                           for func, cell in todo)
    report = {"cells": len(todo), "retimed": 0, "differs": {}, "limited": []}
    for (func, cell), new in zip(todo, again):
        result, old = experiments.stored_form(new["result"]), cell["provenance"]
        if experiments.limited(cell["result"]) or experiments.limited(result):
            report["limited"].append(cell["key"])
        elif found := experiments.differences(cell["result"], result, tolerance=tolerance):
            report["differs"][cell["key"]] = found
        else:
            new["provenance"]["retimed"] = {k: old.get(k) for k in RETIMED_FROM}
            store.put(func, old["config"], new)
            report["retimed"] += 1
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m explainopt.book", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p_run = sub.add_parser("run", help="execute chapter notebooks with papermill")
    p_run.add_argument("--scale", default="book", choices=SCALES)
    p_run.add_argument("--only", nargs="+", help="chapter prefixes, e.g. 01 03")
    p_run.add_argument("--output", type=Path, help="output folder (default book/chapters)")
    p_run.add_argument("-p", nargs=2, action="append", metavar=("NAME", "VALUE"), default=[],
                       help="extra notebook parameter (value parsed as JSON when possible)")
    p_run.add_argument("--budget", help="first compute missing grid cells into the results store for at most "
                                         "this long (e.g. 2h, 90m), most informative first")
    p_run.add_argument("--jobs", type=int, default=-1, help="cells in flight for --budget (-1: all cores, or with "
                                                             "--scheduler every worker thread of the cluster)")
    p_run.add_argument("--scheduler", help="address of a dask.distributed scheduler to compute the cells on")
    p_run.add_argument("--grids", nargs="+", help="with --budget: fill only these grids of the chapter "
                                                   "(e.g. figure2 region_path)")
    p_run.add_argument("--max-cell-seconds", type=float, metavar="S",
                       help="with --budget: only cells whose configuration's stored cells took at most S seconds "
                            "(median); cells of a configuration with no stored cell are left out")
    p_run.add_argument("--where", nargs="+", metavar="KEY=VALUE",
                       help="with --budget: only cells whose configuration has these values (e.g. norm=l2 "
                            "model=network; a value is read as JSON when it parses)")
    p_run.add_argument("--plan", action="store_true", help="print what --budget would compute (cells, estimated "
                                                            "core-hours, the claims they decide) and stop")
    p_run.add_argument("--recompute", action="store_true", help="book scale: compute every cell again, stored or "
                                                                 "not (make book FRESH=1)")
    p_merge = sub.add_parser("merge", help="add the cells of another copy of the results store that this one lacks")
    p_merge.add_argument("folder", type=Path, help="the other copy's results/<scale> folder")
    p_merge.add_argument("--scale", default="paper", choices=COMMITTED)
    p_reval = sub.add_parser("revalidate", help="after a change that should not move results: compute a sample of the "
                                                 "stale cells again and, if all reproduce, re-stamp the rest")
    p_reval.add_argument("--only", nargs="+", help="chapter numbers, e.g. 04 06 (default: all)")
    p_reval.add_argument("--scale", default="paper", choices=COMMITTED)
    p_reval.add_argument("--fraction", type=float, default=0.05, help="share of the stale cells computed again")
    p_reval.add_argument("--minimum", type=int, default=3, help="fewest cells computed again per function")
    p_reval.add_argument("--recompute-under", type=float, default=RECOMPUTE_UNDER_S, metavar="S",
                         help="stale cells that took at most S seconds are all computed again, not sampled")
    p_reval.add_argument("--jobs", type=int, default=1, help="parallel workers")
    p_retime = sub.add_parser("retime", help="compute stored cells again on this machine, so that their wall times "
                                              "compare with this machine's other cells")
    p_retime.add_argument("chapter", help="chapter number, e.g. 05")
    p_retime.add_argument("--scale", default="paper", choices=COMMITTED)
    p_retime.add_argument("--grids", nargs="+", help="only these grids of the chapter")
    p_retime.add_argument("--where", nargs="+", metavar="KEY=VALUE", help="only cells whose configuration has these values")
    p_retime.add_argument("--jobs", type=int, default=1, help="parallel workers")
    p_build = sub.add_parser("build", help="build the HTML book with jupyter-book (execution off)")
    p_build.add_argument("--warnings-as-errors", action="store_true")
    p_student = sub.add_parser("student", help="a student's copy of a chapter at the smoke scale, opened in JupyterLab")
    p_student.add_argument("chapter", help="chapter prefix, e.g. 02")
    p_student.add_argument("--no-lab", action="store_true", help="only write student/NN_name.ipynb")
    p_sbook = sub.add_parser("student-book", help="the book without solutions, built into _build/student")
    p_sbook.add_argument("--chapters", type=Path, help="the executed chapters (default book/chapters)")
    p_sbook.add_argument("--output", type=Path, help="where to build it (default _build/student)")
    p_sbook.add_argument("--no-build", action="store_true", help="only write the sources, without the HTML")
    args = parser.parse_args(argv)
    if args.command == "run":
        try:
            run(args.scale, args.only, args.output, {k: _parse_value(v) for k, v in args.p}, budget=args.budget,
                n_jobs=args.jobs, scheduler=args.scheduler, grids=args.grids, max_cell_s=args.max_cell_seconds,
                where=dict(_key_value(text) for text in args.where or ()) or None,
                plan_only=args.plan, recompute=args.recompute)
        except ChapterFailed as exc:
            print(f"[explainopt] FAILED: {exc}", file=sys.stderr)
            return 1
    elif args.command == "merge":
        reports = merge(args.folder, args.scale)
        for chapter, report in reports.items():
            print(f"[explainopt] chapter {chapter}: {report['added']} cells added, {report['retimed']} retimed")
            for problem in report["problems"]:
                print(f"[explainopt]   not read: {problem}")
            for key, why in report["not_taken"].items():
                print(f"[explainopt]   retimed cell {key} not taken: {why}")
        if any(why.startswith(RESULT_DIFFERS) for r in reports.values() for why in r["not_taken"].values()):
            return 1  # a cell computed again with another result: a reproducibility alarm, as in retime
    elif args.command == "revalidate":
        reports = revalidate(args.only, args.scale, recompute_under=args.recompute_under, fraction=args.fraction,
                             minimum=args.minimum, n_jobs=args.jobs)
        return 1 if any(r["differs"] for r in reports) else 0
    elif args.command == "retime":
        report = retime(args.chapter, args.scale, grids=args.grids, n_jobs=args.jobs,
                        where=dict(_key_value(text) for text in args.where or ()) or None)
        print(f"[explainopt] chapter {args.chapter}: {report['retimed']} of {report['cells']} cells retimed"
              + (f"; decided by a limit, kept: {len(report['limited'])}" if report["limited"] else "")
              + ("; do not reproduce, kept: " + "; ".join(f"{k[:8]} {d[0]}" for k, d in report["differs"].items())
                 if report["differs"] else ""))
        return 1 if report["differs"] else 0
    elif args.command == "student":
        copy = prepare_student_copy(args.chapter)
        print(f"[explainopt] {copy.relative_to(ROOT)} (scale smoke; change the parameters cell to go further)")
        if not args.no_lab:
            lab = Path(sys.executable).with_name("jupyter-lab")
            os.execv(lab, [str(lab), str(copy)])
    elif args.command == "student-book":
        try:
            html = student_book(args.chapters, args.output, build_html=not args.no_build)
        except FileNotFoundError as exc:
            print(f"[explainopt] {exc}", file=sys.stderr)
            return 1
        print(f"[explainopt] the student edition: {html / 'index.html' if not args.no_build else html.parent.parent}")
    else:
        build(warnings_as_errors=args.warnings_as_errors)
    return 0


# --------------------------------------------------------------------------- Sphinx extension

PLOTLY_JS = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


def _copy_plotly(app, exception) -> None:
    if exception is None:
        (Path(app.outdir) / "_static").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(PLOTLY_JS, Path(app.outdir) / "_static" / PLOTLY_JS.name)


def setup(app) -> dict:
    """Sphinx extension (named in ``_config.yml``): every page loads plotly.js from ``_static``, so the
    interactive figures (:func:`explainopt.plots.interactive`) work in the built book without network."""
    app.add_js_file(PLOTLY_JS.name)
    app.connect("build-finished", _copy_plotly)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


if __name__ == "__main__":
    sys.exit(main())
