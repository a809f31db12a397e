"""The chapter layer: each paper's experimental protocol, apart from the algorithms it exercises.

One module per chapter, named like its notebook (``notebooks/02_robust_regions.ipynb`` ->
:mod:`explainopt.chapters.robust_regions`). A chapter module holds what only that paper needs: its data
and models, the function that computes one cell of its grid, the grids of the three scales, the tables
that put our numbers beside the paper's (transcribed into ``data/``, never typed into code), the checks
behind each claim, and the chapter's figures. The algorithms it calls live in the library's concept
modules (:mod:`explainopt.encoders`, :mod:`explainopt.counterfactuals`, :mod:`explainopt.clemo`, ...),
which never import a chapter: a reader can reuse an algorithm on their own model and data without any
protocol attached. ``tests/test_architecture.py`` checks the rule.

A chapter module offers ``SCALES`` (its settings at the smoke, book and paper scales) and
``grids(settings) -> {name: experiments.Grid}``: every grid its notebook runs, with the order in which
a budgeted paper-scale run should compute the cells (those behind claims the book scale cannot decide
first; the run takes it round-robin over the configurations, :func:`explainopt.book.fill_order`), and
may declare ``GRID_CLAIMS`` (grid name -> the claims its cells decide, for the run's printed plan). The
notebook and ``python -m explainopt.book run --budget`` use the same grids.

This module offers what every chapter shares: :func:`settings` (the scale's grid with the reader's
overrides), :func:`as_list` (list parameters as papermill passes them), :func:`solver_key` (the solver
as grid cells are keyed), :func:`paper_table` (a transcribed table of a paper) and :func:`module` (the
chapter module of a chapter number).
"""

from __future__ import annotations

import importlib
import json
from importlib import resources

import pandas as pd


def as_list(value, *, name: str = "parameter") -> list:
    """A list parameter as given by papermill: a list/tuple, or a string (``-p dimensions "[2, 3]"``).

    Strings are read as JSON, else as comma-separated items (``"x^3, sin x"``).
    """
    if isinstance(value, (list, tuple)):
        return list(value)
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            parsed = [item.strip() for item in value.split(",") if item.strip()]
        return parsed if isinstance(parsed, list) else [parsed]
    if isinstance(value, (int, float)) or hasattr(value, "dtype"):
        return [value]
    raise TypeError(f"{name} must be a list or a string such as '[2, 3]'; got {type(value).__name__}")


def settings(scales: dict, scale: str, **overrides) -> dict:
    """The settings of `scale` in a chapter's `scales`, with the reader's overrides applied.

    An override left None keeps the scale's value; a list-valued setting accepts the strings papermill
    passes (:func:`as_list`). An override the scale does not know is an error naming the known ones.
    """
    if scale not in scales:
        raise ValueError(f"scale={scale!r}: expected one of {list(scales)}")
    chosen = dict(scales[scale])
    unknown = set(overrides) - set(chosen)
    if unknown:
        raise ValueError(f"unknown setting(s) {sorted(unknown)}; this chapter's settings: {sorted(chosen)}")
    for name, value in overrides.items():
        if value is not None:
            chosen[name] = as_list(value, name=name) if isinstance(chosen[name], (list, tuple)) else value
    return chosen


def solver_key(solver: str | None) -> str | None:
    """The solver as every chapter keys its grid cells: None for the default (a notebook's ``"auto"``),
    so that the notebook and the budgeted runner find the same stored cells; a named solver as given."""
    return None if str(solver or "auto").lower() == "auto" else solver


def paper_table(name: str) -> pd.DataFrame:
    """A table transcribed from a paper, stored as ``chapters/data/<name>.csv`` (the file's header
    comment lines, starting with ``#``, say where each number comes from)."""
    with resources.files(__package__).joinpath("data", f"{name}.csv").open() as handle:
        return pd.read_csv(handle, comment="#")


#: Chapter number -> chapter module (named like the chapter's notebook).
MODULES = {"01": "optimizing_explanations", "02": "robust_regions", "03": "clemo", "04": "proplace",
           "05": "robust_ensembles", "06": "robustness_benchmark"}


def module(chapter: str):
    """The chapter module of chapter `chapter` (``"02"`` -> :mod:`explainopt.chapters.robust_regions`)."""
    if chapter not in MODULES:
        raise ValueError(f"chapter {chapter!r} has no chapter module; chapters: {sorted(MODULES)}")
    return importlib.import_module(f"{__name__}.{MODULES[chapter]}")


def has_grids(chapter: str) -> bool:
    """Whether the chapter declares grids that a budgeted run can compute into its results store."""
    return chapter in MODULES and hasattr(module(chapter), "grids")
