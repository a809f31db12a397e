""""Paper vs. this book" tables and the chapter results that the reproduction-status page reads.

A chapter states each of the paper's claims with :func:`claim`, shows them in full with
:func:`verdict_table` (:func:`claims_table` is the same table as a DataFrame, for code) and saves them
(with the run's provenance) by :func:`save_chapter_results`; ``book/status``, the landing page's totals
(:func:`totals_table`) and each chapter's summary box (:func:`verdict_summary`) are generated from those
files, never written by hand. Every text they print is escaped (:func:`escape_markdown`, ``html.escape``).
"""

from __future__ import annotations

import hashlib
import html
import json
import os
import re
from collections import Counter
from dataclasses import asdict, dataclass, fields as dataclass_fields
from pathlib import Path

import numpy as np
import pandas as pd

from .experiments import ROOT, atomic_write_bytes

REPRODUCED, PARTLY, DIFFERS, NOT_RUN = "reproduced", "partly", "differs", "not run"
VERDICTS = (REPRODUCED, PARTLY, DIFFERS, NOT_RUN)
#: The colour of each verdict's label: reproduced green, partly amber, differs red, not run grey.
VERDICT_COLOURS = {REPRODUCED: "#1a7f37", PARTLY: "#9a6700", DIFFERS: "#cf222e", NOT_RUN: "#6e7781"}


@dataclass
class Claim:
    """One claim of a paper, the paper's number, ours, and the verdict with its reason.

    id: the claim's stable id (``04-vr-100``), declared in its chapter's ``data/<chapter>_claims.csv`` with
    the check that computes it. rule: the evidence rule the verdict rests on (how many cells at least, how
    they are paired, what decides). evidence / minimum: the cells the check counted and the fewest it needs.
    explanation: for a verdict that is not *reproduced*, the computed sentence that says why (a genuine
    finding, too little evidence, or a deviation from the paper's protocol)."""

    claim: str
    paper: str
    ours: str
    verdict: str
    why: str = ""
    id: str = ""
    rule: str = ""
    evidence: int | None = None
    minimum: int = 1
    explanation: str = ""

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


def _values(values) -> np.ndarray:
    return np.asarray(values.to_numpy() if hasattr(values, "to_numpy") else list(values), dtype=object)


def every(values, predicate=bool) -> bool | None:
    """Whether `predicate` holds for every value; None (*not run*) when the values are missing."""
    if missing(values):
        return None
    return bool(all(predicate(v) for v in _values(values)))


# --------------------------------------------------------------------------- shared predicates of the checks


def all_of_at_least(values, n: int, predicate=bool) -> bool | None:
    """Whether `predicate` holds for every one of `values` (missing values, None or NaN, left out), judged
    only on at least `n` of them: None (*not run*) below `n`."""
    present = [v for v in _values(values if values is not None else [])
               if v is not None and not (np.ndim(v) == 0 and pd.isna(v))]
    if len(present) < max(int(n), 1):
        return None
    return bool(all(predicate(v) for v in present))


def matched_pairs(a, b) -> tuple[np.ndarray, np.ndarray]:
    """The pairs of `a` and `b` (Series on the same keys, or arrays of one length) where both are present;
    Series are aligned on their index first, so a key that only one of them has is no pair."""
    if isinstance(a, pd.Series) and isinstance(b, pd.Series):
        a, b = a.align(b, join="inner")
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"a and b must pair up: shapes {a.shape} and {b.shape}")
    both = ~(np.isnan(a) | np.isnan(b))
    return a[both], b[both]


def share_of_matched_pairs(a, b, n_min: int, better=np.less) -> tuple[float, int]:
    """The share of matched pairs (:func:`matched_pairs`) on which ``better(a, b)`` holds, and how many pairs
    there are; the share is NaN (*not run*) below `n_min` pairs. A missing partner is no pair, never a loss."""
    a, b = matched_pairs(a, b)
    n = len(a)
    return (float(np.mean(better(a, b))) if n >= max(int(n_min), 1) else float("nan")), n


def interval_above(low, target) -> bool | None:
    """Whether an interval lies entirely above `target` (its lower end is): None when it is missing."""
    return None if missing(low, target) else bool(low > target)


def interval_below(high, target) -> bool | None:
    """Whether an interval lies entirely below `target` (its upper end is): None when it is missing."""
    return None if missing(high, target) else bool(high < target)


def claim(claim: str, *, paper, ours, holds, why: str = "", partly=False, evidence: int | None = None,
          minimum: int = 1, id: str = "", rule: str = "", deviation: str = "") -> Claim:
    """A claim whose verdict follows from a check computed from the run (`holds`).

    holds: True -> reproduced (or *partly* when `partly`, itself computed from the numbers), False ->
    differs; None or NaN -> not run. evidence / minimum: how many cells (instances, counterfactuals, ...)
    the check rests on and how many it needs; below the minimum the verdict is *not run*, whatever
    `holds` says, and the reason names both numbers. id / rule: the claim's declared id and evidence rule
    (:class:`ClaimBook`); deviation: the deviation from the paper's protocol that explains a verdict other
    than *reproduced*, if one does (:func:`explanation`).
    """
    if evidence is not None and evidence < minimum:
        holds = None
        why = f"{why}; " if why else ""
        why += f"{evidence} of the {minimum} cells this check needs have been computed"
    if holds is None or (not isinstance(holds, (bool, np.bool_)) and pd.isna(holds)):
        verdict = NOT_RUN
    else:
        verdict = (PARTLY if partly else REPRODUCED) if bool(holds) else DIFFERS
    made = Claim(claim, _fmt(paper), _fmt(ours), verdict, why, id=id, rule=rule,
                 evidence=None if evidence is None else int(evidence), minimum=int(minimum))
    made.explanation = explanation(made, deviation=deviation)
    return made


def explanation(c: Claim, *, deviation: str = "") -> str:
    """Why a verdict is not *reproduced*, as one sentence computed from the claim: *too little evidence*
    (not run: the cells counted against those needed, or the check's reason), a *deviation from the
    paper's protocol* (the one named), or a *genuine finding* (our number against the paper's under the
    claim's rule). Empty for a reproduced claim."""
    if c.verdict == REPRODUCED:
        return ""
    if c.verdict == NOT_RUN:
        counted = (f"{c.evidence} of the {c.minimum} cells the rule needs were computed" if c.evidence is not None
                   and c.evidence < c.minimum else (c.why or "the check found no data"))
        return f"Too little evidence: {counted}."
    part = "only partly holds" if c.verdict == PARTLY else "does not hold"
    numbers = f"ours {c.ours} against the paper's {c.paper}"
    if deviation:
        return f"Deviation from the paper's protocol: {deviation}; the claim {part} ({numbers})."
    return f"Genuine finding: the claim {part} on our numbers ({numbers}){f' under the rule: {c.rule}' if c.rule else ''}."


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value)


class ClaimBook:
    """A chapter's claims declared in one place, its ``data/<chapter>_claims.csv``: one row per claim with its
    ``id`` (``04-vr-100``; the verdict table, the results file and the status page show it), the ``check``
    (the chapter's function that computes it), the paper's wording of the ``claim`` and of its number
    (``paper``; both may hold ``{named}`` fields the check fills with computed values), the evidence rule
    (``unit`` counted, ``pairing``, what ``decides``) and the ``deviation`` from the paper's protocol that
    explains a verdict other than *reproduced*, where one does (empty: a genuine finding)."""

    COLUMNS = ("id", "check", "claim", "paper", "unit", "pairing", "decides", "deviation")

    def __init__(self, chapter: str, table: pd.DataFrame):
        absent = [c for c in self.COLUMNS if c not in table.columns]
        if absent:
            raise ValueError(f"the claims table of chapter {chapter} lacks the columns {absent}")
        table = table.fillna("")
        wrong = [i for i in table["id"] if not re.fullmatch(rf"{chapter}-[a-z0-9]+(-[a-z0-9]+)*", str(i))]
        if wrong or table["id"].duplicated().any():
            raise ValueError(f"chapter {chapter}'s claim ids must be unique and read '{chapter}-words': {wrong}")
        self.chapter, self.table = chapter, table.set_index("id", drop=False)

    @property
    def ids(self) -> list[str]:
        return list(self.table.index)

    def row(self, id: str) -> pd.Series:
        if id not in self.table.index:
            raise KeyError(f"claim {id!r} is not declared in chapter {self.chapter}'s claims table; declared: {self.ids}")
        return self.table.loc[id]

    def text(self, id: str, **fields) -> str:
        """The paper's wording of claim `id`, its named fields filled in."""
        return str(self.row(id)["claim"]).format(**fields)

    def paper(self, id: str, **fields) -> str:
        """The paper's number (as text) of claim `id`, its named fields filled in."""
        return str(self.row(id)["paper"]).format(**fields)

    def rule(self, id: str, minimum: int = 1) -> str:
        """Claim `id`'s evidence rule as one sentence: the fewest cells, how they are paired, what decides."""
        row = self.row(id)
        return (f"at least {minimum} {row['unit']}; {row['pairing']}; decides: {row['decides']}"
                if row["unit"] else f"{row['pairing']}; decides: {row['decides']}")

    def claim(self, id: str, *, ours, holds, paper=None, fields: dict | None = None, deviation: str | None = None,
              **kwargs) -> Claim:
        """Claim `id` (:func:`claim`) in the declared wording and with the declared evidence rule; `fields`
        fill the wording's named fields, `paper` overrides the declared number text (when it is computed
        from a transcribed table), `deviation` the declared deviation (when it is computed)."""
        fields = fields or {}
        row = self.row(id)
        return claim(self.text(id, **fields), paper=self.paper(id, **fields) if paper is None else paper, ours=ours,
                     holds=holds, id=id, rule=self.rule(id, kwargs.get("minimum", 1)),
                     deviation=row["deviation"] if deviation is None else deviation, **kwargs)


def claims_table(claims: list[Claim]) -> pd.DataFrame:
    """The "paper vs. this book" table as a DataFrame (for code; a chapter shows :func:`verdict_table`)."""
    columns = ["id", *(f.name for f in dataclass_fields(Claim) if f.name != "id")]
    return pd.DataFrame([asdict(c) for c in claims], columns=columns).rename(columns=str.capitalize)


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


def read_chapter_results(folder: Path, chapter: str) -> dict | None:
    """A chapter's results saved in `folder` (:func:`save_chapter_results`); None when the file is missing."""
    path = Path(folder) / f"{chapter}.json"
    return json.loads(path.read_text()) if path.exists() else None


def _chapter_results(folder: Path) -> dict[str, dict]:
    """Chapter -> saved results in `folder` (chapters only, not appendices)."""
    return {p.stem: read_chapter_results(folder, p.stem) for p in sorted(Path(folder).glob("[0-9]*.json"))}


def _verdicts(data: dict) -> list[str]:
    return [c["verdict"] for c in data["claims"]]


def verdict_counts(verdicts) -> dict[str, int]:
    """How many of `verdicts` are of each kind, in the order of :data:`VERDICTS`."""
    counts = Counter(verdicts)
    return {verdict: counts[verdict] for verdict in VERDICTS}


def verdicts_text(verdicts) -> str:
    """The verdicts counted with their denominators: "4 of 7 checked reproduced, 1 partly, 2 differ; 2 of 9
    not run" (or "; all 9 checked")."""
    n = verdict_counts(verdicts)
    total, checked = sum(n.values()), sum(n.values()) - n[NOT_RUN]
    differ = "differs" if n[DIFFERS] == 1 else "differ"
    text = f"{n[REPRODUCED]} of {checked} checked reproduced, {n[PARTLY]} partly, {n[DIFFERS]} {differ}"
    return text + (f"; {n[NOT_RUN]} of {total} not run" if n[NOT_RUN] else f"; all {total} checked")


def cells_text(computed: int, total: int) -> str:
    """"1 840 of 4 320 cells"."""
    return f"{computed:,} of {total:,} cells".replace(",", " ")


def is_partial(cells: dict | None) -> bool:
    """Whether a run's grids (provenance ``cells``: ``computed``, ``total``) miss cells."""
    return bool(cells) and cells.get("computed", 0) < cells.get("total", 0)


def grid_text(cells: dict | None) -> str:
    """A run's grid coverage, "10 of 240 cells (partial grid)" when cells are missing; "" when it ran no grid."""
    if not cells or not cells.get("total"):
        return ""
    return cells_text(cells["computed"], cells["total"]) + (" (partial grid)" if is_partial(cells) else "")


def duration_text(seconds: float) -> str:
    """"38 s", "12 min", "3.4 h"."""
    if seconds < 60:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min" if seconds < 3600 else f"{seconds / 3600:.1f} h"


def compute_time_text(provenance: dict) -> str:
    """The summed compute time of the grid cells a run read, each taken from the cell's own provenance when it
    was computed (``compute_time_s``); "not recorded" where the results do not give it. The run's wall time
    is not a compute time: at the paper scale it is the time to render from the results store."""
    seconds = provenance.get("compute_time_s")
    return "not recorded" if seconds is None else duration_text(seconds)


def scale_text(data: dict | None) -> str:
    """A chapter's verdicts at one scale with the grid they rest on (partial grids flagged)."""
    if data is None:
        return "no verdicts committed"
    grid = grid_text(data["provenance"].get("cells"))
    return verdicts_text(_verdicts(data)) + (f"; on {grid}" if grid else "")


def _status_row(chapter: str, data: dict) -> dict:
    prov = data["provenance"]
    return {"chapter": chapter, "verdicts": verdicts_text(_verdicts(data)),
            "grid": grid_text(prov.get("cells")) or "no grid", "compute time": compute_time_text(prov),
            "solvers": prov.get("solvers") or ""}


def status_table(folder: Path | None = None) -> pd.DataFrame:
    """One row per chapter saved in `folder` (default :func:`results_dir`): its verdicts with their
    denominators, the grid coverage (partial grids flagged), the grid cells' compute time and the solvers."""
    rows = [_status_row(chapter, data) for chapter, data in _chapter_results(folder or results_dir()).items()]
    return pd.DataFrame(rows, columns=["chapter", "verdicts", "grid", "compute time", "solvers"])


def _all_chapters_text(results: dict[str, dict]) -> str:
    """Every chapter's verdicts in one folder counted together, naming the chapters on a partial grid."""
    if not results:
        return "no verdicts committed"
    partial = [chapter for chapter, data in results.items() if is_partial(data["provenance"].get("cells"))]
    flag = f"; on a partial grid: chapters {', '.join(partial)}" if partial else ""
    return verdicts_text(v for data in results.values() for v in _verdicts(data)) + flag


def totals_table(folders: dict[str, Path]) -> pd.DataFrame:
    """The landing page's verdicts: a column per results folder (e.g. ``{"book scale": results/book, ...}``),
    a first row ``all`` with every chapter's claims counted together, then one row per chapter with its
    counts and the grid they rest on (:func:`scale_text`)."""
    found = {label: _chapter_results(folder) for label, folder in folders.items()}
    rows = [{"chapter": "all", **{label: _all_chapters_text(results) for label, results in found.items()}}]
    rows += [{"chapter": chapter, **{label: scale_text(results.get(chapter)) for label, results in found.items()}}
             for chapter in sorted(set().union(*found.values()))]
    return pd.DataFrame(rows, columns=["chapter", *folders])


def scale_changes(claims: list[Claim], other: Path, *, labels=("book", "paper")) -> pd.DataFrame:
    """The claims whose verdict at this scale differs from the verdict saved in `other` (a chapter's
    results file of another scale, :func:`save_chapter_results`), both checked: the claim, and our number,
    verdict and reason at each scale (`labels`: other's, this run's), so that the two reasons side by
    side say what the larger sample changed. Empty when `other` does not exist."""
    saved = json.loads(Path(other).read_text())["claims"] if Path(other).exists() else []
    before = {claim_key(c): c for c in saved}
    fields = ("ours", "verdict", "why")
    rows = [{"claim": c.claim, **{f"{labels[0]}: {f}": before[claim_key(c)].get(f, "") for f in fields},
             **{f"{labels[1]}: {f}": getattr(c, f) for f in fields}}
            for c in claims if claim_key(c) in before and NOT_RUN not in (c.verdict, before[claim_key(c)]["verdict"])
            and c.verdict != before[claim_key(c)]["verdict"]]
    return pd.DataFrame(rows, columns=["claim"] + [f"{label}: {f}" for label in labels for f in fields])


def claim_key(c: Claim | dict) -> str:
    """What identifies a claim across scales and runs: its id, or its text where it has none (results saved
    before claims had ids)."""
    c = asdict(c) if isinstance(c, Claim) else c
    return c.get("id") or c["claim"]


def claims_by_scale(folders: dict[str, Path]) -> pd.DataFrame:
    """Every claim of every chapter with its verdict in each results folder, side by side."""
    found = {label: _chapter_results(folder) for label, folder in folders.items()}
    rows = {}
    for label, results in found.items():
        for chapter, data in results.items():
            for c in data["claims"]:
                rows.setdefault((chapter, claim_key(c)), {"chapter": chapter, "id": c.get("id", ""),
                                                          "claim": c["claim"]})[label] = c["verdict"]
    return pd.DataFrame(list(rows.values())).fillna("") if rows else pd.DataFrame()


# --------------------------------------------------------------------------- showing verdicts in full

MARKDOWN_SPECIALS = re.compile(r"([\\`*_{}\[\]<>|$~#])")


def escape_markdown(text) -> str:
    """`text` on one line, every character that Markdown (MyST) reads as syntax backslash-escaped: a ``|``
    does not end a table cell, a ``*`` starts no emphasis, a ``$`` no formula."""
    return MARKDOWN_SPECIALS.sub(r"\\\1", " ".join(str(text).split()))


def markdown_table(frame: pd.DataFrame, *, raw: tuple = ()) -> str:
    """`frame` as a Markdown table, its header and cells escaped (:func:`escape_markdown`) but for the
    columns named in `raw`, which hold Markdown already."""
    cells = [[str(v) if c in raw else escape_markdown(v) for c, v in zip(frame.columns, values)]
             for values in frame.itertuples(index=False)]
    lines = [[escape_markdown(c) for c in frame.columns], ["---"] * len(frame.columns), *cells]
    return "\n".join("| " + " | ".join(line) + " |" for line in lines)


class Rendered:
    """Output shown as HTML in the book and in Jupyter, as Markdown where HTML is not shown (and as that
    Markdown text in a terminal)."""

    def __init__(self, html_text: str, markdown: str):
        self.html, self.markdown = html_text, markdown

    def _repr_html_(self) -> str:
        return self.html

    def _repr_markdown_(self) -> str:
        return self.markdown

    def __repr__(self) -> str:
        return self.markdown


def verdict_label(verdict: str | None) -> str:
    """The verdict as a coloured label (HTML; :data:`VERDICT_COLOURS`), a dash when there is none."""
    if not verdict:
        return "—"
    colour = VERDICT_COLOURS.get(verdict, VERDICT_COLOURS[NOT_RUN])
    return (f'<span class="verdict" style="background:{colour};color:#fff;border-radius:0.25em;'
            f'padding:0.05em 0.4em;white-space:nowrap">{html.escape(verdict)}</span>')


CELL_STYLE = ("vertical-align:top;text-align:left;white-space:normal;overflow-wrap:anywhere;"
              "padding:0.3em 0.5em;border-top:1px solid #d0d7de")


def html_table(columns: dict[str, int], rows: list[list[str]], *, row_ids: list[str] | None = None,
               table_id: str | None = None) -> str:
    """An HTML table that fits the text column and wraps its text: `columns` maps each header to its width
    in percent, `rows` hold HTML (text escaped already); `row_ids` and `table_id` are link targets. MathJax
    leaves it alone."""
    widths = "".join(f'<col style="width:{width}%">' for width in columns.values())
    head = "".join(f'<th style="{CELL_STYLE}">{html.escape(name)}</th>' for name in columns)
    ids = row_ids or [None] * len(rows)
    body = "".join((f'<tr id="{row_id}">' if row_id else "<tr>") + "".join(f'<td style="{CELL_STYLE}">{cell}</td>'
                                                                         for cell in row) + "</tr>"
                   for row, row_id in zip(rows, ids))
    anchor = f' id="{table_id}"' if table_id else ""
    return (f'<table{anchor} class="verdicts tex2jax_ignore mathjax_ignore" '
            f'style="table-layout:fixed;width:100%;border-collapse:collapse">'
            f"<colgroup>{widths}</colgroup><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")


def claim_anchor(key: str) -> str:
    """The HTML id of a claim's row in its chapter's verdict table, from the claim's id (:func:`claim_key`,
    the same at every scale): the chapter's summary box links each claim to it."""
    key = str(key)
    return ("claim-" + key) if re.fullmatch(r"[0-9]{2}-[a-z0-9-]+", key) else \
        "claim-" + hashlib.sha1(key.encode()).hexdigest()[:10]


VERDICT_TABLE_COLUMNS = {"Id": 9, "Claim": 24, "Paper": 14, "Ours": 17, "Verdict": 9, "Why": 27}


def _why_cell(c: Claim) -> str:
    """The Why cell of a claim's row (HTML): the explanation of a verdict that is not reproduced, the check's
    reason, and the evidence rule with the cells it counted."""
    parts = [f"<strong>{html.escape(c.explanation)}</strong>"] if c.explanation else []
    parts += [html.escape(c.why)] if c.why else []
    if c.rule:
        counted = f" ({c.evidence} counted)" if c.evidence is not None else ""
        parts.append(f"<small>Rule: {html.escape(c.rule)}{html.escape(counted)}</small>")
    return "<br>".join(parts)


def explanations_text(claims: list[Claim]) -> str:
    """One line per verdict that is not *reproduced*: its id, verdict and explanation (Markdown)."""
    return "\n".join(f"- **{escape_markdown(c.id or c.claim)}** ({c.verdict}): {escape_markdown(c.explanation)}"
                     for c in claims if c.explanation)


def verdict_table(claims: list[Claim]) -> Rendered:
    """The "Paper vs. this book" table in full: each claim with its id, the paper's number, ours, a coloured
    verdict and its reason (the explanation of a verdict that is not reproduced, the check's reason and the
    evidence rule), nothing cut; under it every verdict that is not reproduced with its explanation. Each
    row is the target of its claim's link in the summary box (:func:`claim_anchor`), the table that of
    ``#verdicts``."""
    rows = [[html.escape(c.id or str(k)), html.escape(c.claim), html.escape(c.paper), html.escape(c.ours),
             verdict_label(c.verdict), _why_cell(c)] for k, c in enumerate(claims, 1)]
    body = html_table(VERDICT_TABLE_COLUMNS, rows, row_ids=[claim_anchor(claim_key(c)) for c in claims],
                      table_id="verdicts")
    table = pd.DataFrame([[c.id or str(k), c.claim, c.paper, c.ours, c.verdict,
                           "; ".join(p for p in (c.explanation, c.why, c.rule and f"Rule: {c.rule}") if p)]
                          for k, c in enumerate(claims, 1)], columns=list(VERDICT_TABLE_COLUMNS))
    notes = [c for c in claims if c.explanation]
    if notes:
        title = f"Why {len(notes)} of the {len(claims)} verdicts are not reproduced"
        body += (f'<p><strong>{html.escape(title)}</strong></p><ul>'
                 + "".join(f"<li><strong>{html.escape(c.id or c.claim)}</strong> ({html.escape(c.verdict)}): "
                           f"{html.escape(c.explanation)}</li>" for c in notes) + "</ul>")
        return Rendered(body, markdown_table(table) + f"\n\n**{title}**\n\n" + explanations_text(claims))
    return Rendered(body, markdown_table(table))


def _shown_path(path: Path) -> str:
    """`path` relative to the repository when it lies inside it."""
    path = Path(path)
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def _scale_line(label: str, path: Path, data: dict | None) -> tuple[str, str]:
    """One scale's line of the summary box, as HTML and as Markdown: :func:`scale_text` and where the
    verdicts come from, or that their file is missing."""
    if data:
        text = f"{scale_text(data)} ({_shown_path(path)}, {data['provenance'].get('date', 'undated')[:10]})"
    else:
        text = f"no verdicts committed ({_shown_path(path)} is missing)"
    return (f"<li><strong>{html.escape(label)}</strong>: {html.escape(text)}</li>",
            f"- **{escape_markdown(label)}**: {escape_markdown(text)}")


def _claims_by_key(found: dict[str, dict | None]) -> dict[str, dict[str, dict]]:
    """Claim id (:func:`claim_key`) -> {label: the claim saved under that label}, in the order the claims
    first appear."""
    claims: dict[str, dict[str, dict]] = {}
    for label, data in found.items():
        for c in (data or {}).get("claims", []):
            claims.setdefault(claim_key(c), {})[label] = c
    return claims


def _verdict_cell(saved: dict | None) -> str:
    """A claim's verdict at one scale as HTML: the coloured label, our number under it."""
    if saved is None:
        return verdict_label(None)
    return f'{verdict_label(saved["verdict"])}<br><small>{html.escape(saved["ours"])}</small>'


def _claims_at_each_scale(found: dict[str, dict | None]) -> Rendered:
    """Every claim of a chapter with its verdict and our number under each label, each claim linked to its
    row in the chapter's verdict table; nothing when no scale has claims."""
    claims = _claims_by_key(found)
    if not claims:
        return Rendered("", "")
    widths = {"Claim": 100 - 24 * len(found), **{label: 24 for label in found}}

    def named(key: str, s: dict) -> str:
        text = next(iter(s.values()))["claim"]
        return text if key == text else f"{key}: {text}"

    rows = [[f'<a href="#{claim_anchor(key)}">{html.escape(named(key, s))}</a>', *(_verdict_cell(s.get(l)) for l in found)]
            for key, s in claims.items()]
    table = pd.DataFrame([[named(key, s), *(f"{s[l]['verdict']}: {s[l]['ours']}" if l in s else "—" for l in found)]
                          for key, s in claims.items()], columns=list(widths))
    return Rendered(html_table(widths, rows), markdown_table(table))


SUMMARY_NOTE = ("Each claim links to its row in the table of verdicts below, which gives the paper's number and "
                "the reason for the verdict at the scale this page was rendered at; under each verdict here is our "
                "number at that scale.")
PARTIAL_NOTE = "A partial grid: that scale's verdicts rest on the grid cells computed so far, not on the whole grid. "


def _summary_note(found: dict[str, dict | None]) -> str:
    partial = any(is_partial((data or {}).get("provenance", {}).get("cells")) for data in found.values())
    return (PARTIAL_NOTE if partial else "") + SUMMARY_NOTE


def verdict_summary(chapter: str, folders: dict[str, Path]) -> Rendered:
    """A chapter's summary box: for each results folder (a scale, e.g. ``{"book scale": results/book}``)
    the counts of the chapter's verdicts with their denominators and the grid they rest on (partial grids
    flagged), or that its file is missing; then every claim with its verdict and our number at each scale,
    each linked to its row in the chapter's verdict table (:func:`verdict_table`)."""
    found = {label: read_chapter_results(folder, chapter) for label, folder in folders.items()}
    lines = [_scale_line(label, Path(folders[label]) / f"{chapter}.json", data) for label, data in found.items()]
    claims, note = _claims_at_each_scale(found), _summary_note(found)
    title = f"Chapter {chapter.lstrip('0')}: the verdicts at every scale"
    html_box = (f'<div class="admonition note verdict-summary tex2jax_ignore mathjax_ignore">'
                f'<p class="admonition-title">{html.escape(title)}</p><ul>{"".join(h for h, _ in lines)}</ul>'
                f'{claims.html}<p><small>{html.escape(note)}</small></p></div>')
    markdown = "\n\n".join([f"**{escape_markdown(title)}**", "\n".join(m for _, m in lines), claims.markdown,
                            f"*{escape_markdown(note)}*"])
    return Rendered(html_box, markdown)
