""""Paper vs. this book" tables and the chapter results that the reproduction-status page reads.

A chapter states each of the paper's claims with :func:`claim`, collects them in :func:`claims_table`
and saves them (with the run's provenance) by :func:`save_chapter_results`; ``book/status`` is
generated from those files, never written by hand.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .experiments import atomic_write_bytes

REPRODUCED, PARTLY, DIFFERS, NOT_RUN = "reproduced", "partly", "differs", "not run"
VERDICTS = (REPRODUCED, PARTLY, DIFFERS, NOT_RUN)


@dataclass
class Claim:
    """One claim of a paper, the paper's number, ours, and the verdict with its reason."""

    claim: str
    paper: str
    ours: str
    verdict: str
    why: str = ""

    def __post_init__(self):
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict {self.verdict!r} not in {VERDICTS}")


def missing(*values) -> bool:
    """True when any value is None, NaN, or an empty collection: the data behind a claim are missing."""
    for value in values:
        if value is None:
            return True
        if isinstance(value, (pd.Series, pd.DataFrame, np.ndarray, list, tuple, dict, set)):
            array = np.asarray(value.to_numpy() if hasattr(value, "to_numpy") else list(value), dtype=object)
            if array.size == 0 or pd.isna(array).any():
                return True
        elif pd.isna(value):
            return True
    return False


def every(values, predicate=bool) -> bool | None:
    """Whether `predicate` holds for every value; None (*not run*) when the values are missing."""
    if missing(values):
        return None
    return bool(all(predicate(v) for v in (values.to_numpy() if hasattr(values, "to_numpy") else values)))


def claim(claim: str, *, paper, ours, holds, why: str = "", partly=False, evidence: int | None = None,
          minimum: int = 1) -> Claim:
    """A claim whose verdict follows from a check computed from the run (`holds`).

    holds: True -> reproduced (or *partly* when `partly`, itself computed from the numbers), False ->
    differs; None or NaN -> not run. evidence / minimum: how many cells (instances, counterfactuals, ...)
    the check rests on and how many it needs; below the minimum the verdict is *not run*, whatever
    `holds` says, and the reason names both numbers.
    """
    if evidence is not None and evidence < minimum:
        holds = None
        why = f"{why}; " if why else ""
        why += f"{evidence} of the {minimum} cells this check needs have been computed"
    if holds is None or (not isinstance(holds, (bool, np.bool_)) and pd.isna(holds)):
        verdict = NOT_RUN
    else:
        verdict = (PARTLY if partly else REPRODUCED) if bool(holds) else DIFFERS
    return Claim(claim, _fmt(paper), _fmt(ours), verdict, why)


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value)


def claims_table(claims: list[Claim]) -> pd.DataFrame:
    """The "paper vs. this book" table."""
    return pd.DataFrame([asdict(c) for c in claims]).rename(columns=str.capitalize)


def results_dir() -> Path:
    """Where executed chapters leave their results (``book/chapters/results``)."""
    return Path(os.environ.get("EXPLAINOPT_RESULTS", "book/chapters/results"))


def save_chapter_results(chapter: str, claims: list[Claim], provenance: dict, tables: dict | None = None,
                         folder: Path | None = None) -> Path:
    """Write the chapter's claims, provenance and optional tables (DataFrames) as ``<folder>/<chapter>.json``
    (default folder: :func:`results_dir`)."""
    payload = {
        "chapter": chapter,
        "provenance": provenance,
        "claims": [asdict(c) for c in claims],
        "tables": {name: json.loads(df.to_json(orient="split")) for name, df in (tables or {}).items()},
    }
    path = Path(folder or results_dir()) / f"{chapter}.json"
    atomic_write_bytes(path, json.dumps(payload, indent=1, default=str).encode())
    return path


def _chapter_results(folder: Path) -> dict[str, dict]:
    """Chapter -> saved results in `folder` (chapters only, not appendices)."""
    return {p.stem: json.loads(p.read_text()) for p in sorted(Path(folder).glob("[0-9]*.json"))}


def _summary(data: dict) -> dict:
    prov, verdicts = data["provenance"], [c["verdict"] for c in data["claims"]]
    checked = [v for v in verdicts if v != NOT_RUN]
    cells = prov.get("cells") or {}
    return {
        "scale": prov.get("scale"),
        "cells": f"{cells['computed']} of {cells['total']}" if cells.get("total") else "",
        "solvers": prov.get("solvers"),
        "wall time (s)": round(prov.get("wall_time_s", float("nan")), 1),
        "reproduced": f"{sum(v == REPRODUCED for v in checked)} of {len(checked)}",
        "partly": sum(v == PARTLY for v in checked),
        "differ": sum(v == DIFFERS for v in checked),
        "not run": len(verdicts) - len(checked),
    }


def status_table(folders: dict[str, Path] | Path | None = None) -> pd.DataFrame:
    """One row per chapter, a group of columns per results folder (e.g. ``{"this build": ...,
    "paper (store)": ...}``): scale, grid cells computed, solvers, wall time, claims reproduced / checked."""
    if not isinstance(folders, dict):
        folders = {"": Path(folders or results_dir())}
    found = {label: _chapter_results(folder) for label, folder in folders.items()}
    rows = []
    for chapter in sorted(set().union(*found.values())):
        row = {"chapter": chapter}
        for label, results in found.items():
            summary = _summary(results[chapter]) if chapter in results else {}
            row.update({f"{label}: {k}" if label else k: v for k, v in summary.items()})
        rows.append(row)
    return pd.DataFrame(rows)


def scale_changes(claims: list[Claim], other: Path, *, labels=("book", "paper")) -> pd.DataFrame:
    """The claims whose verdict at this scale differs from the verdict saved in `other` (a chapter's
    results file of another scale, :func:`save_chapter_results`), both checked: the claim, and our number,
    verdict and reason at each scale (`labels`: other's, this run's), so that the two reasons side by
    side say what the larger sample changed. Empty when `other` does not exist."""
    before = {c["claim"]: c for c in json.loads(Path(other).read_text())["claims"]} if Path(other).exists() else {}
    fields = ("ours", "verdict", "why")
    rows = [{"claim": c.claim, **{f"{labels[0]}: {f}": before[c.claim].get(f, "") for f in fields},
             **{f"{labels[1]}: {f}": getattr(c, f) for f in fields}}
            for c in claims if c.claim in before and NOT_RUN not in (c.verdict, before[c.claim]["verdict"])
            and c.verdict != before[c.claim]["verdict"]]
    return pd.DataFrame(rows, columns=["claim"] + [f"{label}: {f}" for label in labels for f in fields])


def claims_by_scale(folders: dict[str, Path]) -> pd.DataFrame:
    """Every claim of every chapter with its verdict in each results folder, side by side."""
    found = {label: _chapter_results(folder) for label, folder in folders.items()}
    rows = {}
    for label, results in found.items():
        for chapter, data in results.items():
            for c in data["claims"]:
                rows.setdefault((chapter, c["claim"]), {"chapter": chapter, "claim": c["claim"]})[label] = c["verdict"]
    return pd.DataFrame(list(rows.values())).fillna("") if rows else pd.DataFrame()
