""""Paper vs. this book" tables and the chapter results that the reproduction-status page reads.

A chapter states each of the paper's claims with :func:`claim`, collects them in :func:`claims_table`
and saves them (with the run's provenance) by :func:`save_chapter_results`; ``book/status`` is
generated from those files, never written by hand.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

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


def claim(claim: str, *, paper, ours, holds: bool | None, why: str = "", partly: bool = False) -> Claim:
    """A claim whose verdict follows from a check computed by the chapter (`holds`).

    holds=True -> reproduced (or partly, if `partly`), False -> differs, None -> not run at this scale.
    """
    verdict = NOT_RUN if holds is None else (PARTLY if holds and partly else REPRODUCED if holds else DIFFERS)
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
    import os

    return Path(os.environ.get("EXPLAINOPT_RESULTS", "book/chapters/results"))


def save_chapter_results(chapter: str, claims: list[Claim], provenance: dict, tables: dict | None = None) -> Path:
    """Write the chapter's claims, provenance and optional tables (DataFrames) as one JSON file."""
    payload = {
        "chapter": chapter,
        "provenance": provenance,
        "claims": [asdict(c) for c in claims],
        "tables": {name: json.loads(df.to_json(orient="split")) for name, df in (tables or {}).items()},
    }
    path = results_dir() / f"{chapter}.json"
    atomic_write_bytes(path, json.dumps(payload, indent=1, default=str).encode())
    return path


def status_table(folder: Path | None = None) -> pd.DataFrame:
    """One row per executed chapter: scale, solver, wall time, claims reproduced / checked."""
    rows = []
    for path in sorted((folder or results_dir()).glob("[0-9]*.json")):  # chapters, not appendices
        data = json.loads(path.read_text())
        prov, verdicts = data["provenance"], [c["verdict"] for c in data["claims"]]
        checked = [v for v in verdicts if v != NOT_RUN]
        rows.append({
            "chapter": data["chapter"],
            "scale": prov.get("scale"),
            "solvers": prov.get("solvers"),
            "wall time (s)": round(prov.get("wall_time_s", float("nan")), 1),
            "claims reproduced": f"{sum(v == REPRODUCED for v in checked)} of {len(checked)}",
            "partly": sum(v == PARTLY for v in checked),
            "differ": sum(v == DIFFERS for v in checked),
            "not run at this scale": len(verdicts) - len(checked),
        })
    return pd.DataFrame(rows)
