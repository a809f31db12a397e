""""Paper vs. this book" tables and the chapter results that the reproduction-status page reads.

A chapter states each of the paper's claims with :func:`claim` (through its declared
:class:`~explainopt.verdicts.ClaimBook`), shows them in full with :func:`explainopt.verdicts.verdict_table`
(:func:`claims_table` is the same table as a DataFrame, for code) and saves them
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
from IPython.display import Markdown, display

from .experiments import ROOT, atomic_write_bytes

REPRODUCED, PARTLY, DIFFERS = "reproduced", "partly", "differs"
#: *undecided*: the check read at least the evidence its rule needs and reads it neither way (a shortfall within
#: noise, a sign test short of significance), which only such a check says (`neither_way`); *not run*: less
#: evidence than that, none counted, or a number the check needs missing.
UNDECIDED, NOT_RUN = "undecided", "not run"
VERDICTS = (REPRODUCED, PARTLY, DIFFERS, UNDECIDED, NOT_RUN)
#: The colour of each verdict's label: reproduced green, partly amber, differs red, undecided purple, not run grey.
VERDICT_COLOURS = {REPRODUCED: "#1a7f37", PARTLY: "#9a6700", DIFFERS: "#cf222e", UNDECIDED: "#8250df",
                   NOT_RUN: "#6e7781"}


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
    """Whether `predicate` holds for every value: False as soon as a present value fails it, whatever the
    others lack (a claim on every item fails on one failed item); None (*not run*) when values are missing
    (None, NaN, none at all) and none of those present fails."""
    array = values.to_numpy() if hasattr(values, "to_numpy") else list(values if values is not None else [])
    if not all(predicate(v) for v in array if not missing(v)):
        return False
    return None if missing(values) else True


def claim(claim: str, *, paper, ours, holds, why: str = "", partly=False, evidence: int | None = None,
          minimum: int = 1, unit: str = "cells", neither_way: bool = False) -> Claim:
    """A claim whose verdict follows from a check computed from the run (`holds`).

    holds: True -> reproduced (or *partly* when `partly`, itself computed from the numbers), False ->
    differs; None or NaN -> *not run*, or *undecided* where `neither_way` says that the check's None is its
    reading of numbers it has (within noise, not significant), not a lack of them, on at least `minimum`.
    evidence / minimum: how many cells (instances, counterfactuals, ...) the check rests on and how many it
    needs; below the minimum the verdict is *not run*, whatever `holds` says, and the reason names both
    numbers in `unit` (what is counted: cells, matched runs, ...).
    """
    enough = evidence is not None and evidence >= minimum
    if evidence is not None and not enough:
        holds = None
        why = f"{why}; " if why else ""
        why += f"{evidence} of the {minimum} {unit} this check needs were counted"
    if holds is None or (not isinstance(holds, (bool, np.bool_)) and pd.isna(holds)):
        verdict = UNDECIDED if neither_way and enough else NOT_RUN
    else:
        verdict = (PARTLY if partly else REPRODUCED) if bool(holds) else DIFFERS
    return Claim(claim, _fmt(paper), _fmt(ours), verdict, why)


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value)


def claims_table(claims: list[Claim]) -> pd.DataFrame:
    """The "paper vs. this book" table as a DataFrame (for code; a chapter shows
    :func:`explainopt.verdicts.verdict_table`)."""
    columns = [f.name for f in dataclass_fields(Claim)]
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
    """The verdicts counted with their denominators: "4 of 7 decided reproduced, 1 partly, 2 differ; 1 of 10
    undecided; 2 of 10 not run" (or "; all 10 run"; "none decided" when none is)."""
    n = verdict_counts(verdicts)
    total, decided = sum(n.values()), n[REPRODUCED] + n[PARTLY] + n[DIFFERS]
    differ = "differs" if n[DIFFERS] == 1 else "differ"
    text = (f"{n[REPRODUCED]} of {decided} decided reproduced, {n[PARTLY]} partly, {n[DIFFERS]} {differ}"
            if decided else "none decided")
    text += f"; {n[UNDECIDED]} of {total} undecided" if n[UNDECIDED] else ""
    return text + (f"; {n[NOT_RUN]} of {total} not run" if n[NOT_RUN] else f"; all {total} run")


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


def to_compute_text(provenance: dict) -> str:
    """The estimated compute time of the cells a run's grids miss (``to_compute_s``, one core each), with the
    part priced from other configurations (``to_compute_borrowed_s``): "about 3.0 h, 1.0 h of it borrowed";
    "none" on a whole grid, "unknown" where some cannot be estimated, "" where the results do not say."""
    cells = provenance.get("cells")
    if not is_partial(cells):
        return "none" if cells and cells.get("total") else ""
    return estimate_text(provenance.get("to_compute_s", "absent"), provenance.get("to_compute_borrowed_s"))


def estimate_text(seconds, borrowed: float | None = None) -> str:
    """"about 3.0 h, 1.0 h of it borrowed" ("" for "absent", "unknown" for None)."""
    if seconds == "absent" or seconds is None:
        return "" if seconds == "absent" else "unknown"
    return "about " + duration_text(seconds) + (f", {duration_text(borrowed)} of it borrowed" if borrowed else "")


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
            "still to compute": to_compute_text(prov), "solvers": prov.get("solvers") or ""}


def status_table(folder: Path | None = None) -> pd.DataFrame:
    """One row per chapter saved in `folder` (default :func:`results_dir`): its verdicts with their
    denominators, the grid coverage (partial grids flagged), the grid cells' compute time, the estimated compute
    time of the cells still missing and the solvers."""
    rows = [_status_row(chapter, data) for chapter, data in _chapter_results(folder or results_dir()).items()]
    return pd.DataFrame(rows, columns=["chapter", "verdicts", "grid", "compute time", "still to compute", "solvers"])


def _all_chapters_text(results: dict[str, dict]) -> str:
    """Every chapter's verdicts in one folder counted together, naming the chapters on a partial grid."""
    if not results:
        return "no verdicts committed"
    partial = [chapter for chapter, data in results.items() if is_partial(data["provenance"].get("cells"))]
    provenances = [results[chapter]["provenance"] for chapter in partial]
    left = [p.get("to_compute_s", "absent") for p in provenances]
    total = "absent" if "absent" in left or not left else None if None in left else sum(left)
    borrowed = sum(p.get("to_compute_borrowed_s") or 0 for p in provenances)
    still = f" (still to compute: {estimate_text(total, borrowed)})" if total != "absent" else ""
    flag = f"; on a partial grid: chapters {', '.join(partial)}{still}" if partial else ""
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
    before = {c["claim"]: c for c in json.loads(Path(other).read_text())["claims"]} if Path(other).exists() else {}
    fields = ("ours", "verdict", "why")
    rows = [{"claim": c.claim, **{f"{labels[0]}: {f}": before[c.claim].get(f, "") for f in fields},
             **{f"{labels[1]}: {f}": getattr(c, f) for f in fields}}
            for c in claims if c.claim in before and NOT_RUN not in (c.verdict, before[c.claim]["verdict"])
            and c.verdict != before[c.claim]["verdict"]]
    return pd.DataFrame(rows, columns=["claim"] + [f"{label}: {f}" for label in labels for f in fields])


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


def claim_anchor(text: str) -> str:
    """The HTML id of a claim's row in its chapter's verdict table, from the claim's text (the same at every
    scale): the chapter's summary box links each claim to it."""
    return "claim-" + hashlib.sha1(str(text).encode()).hexdigest()[:10]


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


def _claims_by_text(found: dict[str, dict | None]) -> dict[str, dict[str, dict]]:
    """Claim text -> {label: the claim saved under that label}, in the order the claims first appear."""
    claims: dict[str, dict[str, dict]] = {}
    for label, data in found.items():
        for c in (data or {}).get("claims", []):
            claims.setdefault(c["claim"], {})[label] = c
    return claims


def _verdict_cell(saved: dict | None) -> str:
    """A claim's verdict at one scale as HTML: the coloured label, our number under it."""
    if saved is None:
        return verdict_label(None)
    return f'{verdict_label(saved["verdict"])}<br><small>{html.escape(saved["ours"])}</small>'


def _claims_at_each_scale(found: dict[str, dict | None]) -> Rendered:
    """Every claim of a chapter with its verdict and our number under each label, each claim linked to its
    row in the chapter's verdict table; nothing when no scale has claims."""
    claims = _claims_by_text(found)
    if not claims:
        return Rendered("", "")
    widths = {"Claim": 100 - 24 * len(found), **{label: 24 for label in found}}
    rows = [[f'<a href="#{claim_anchor(text)}">{html.escape(text)}</a>', *(_verdict_cell(s.get(l)) for l in found)]
            for text, s in claims.items()]
    table = pd.DataFrame([[text, *(f"{s[l]['verdict']}: {s[l]['ours']}" if l in s else "—" for l in found)]
                          for text, s in claims.items()], columns=list(widths))
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
    each linked to its row in the chapter's verdict table (:func:`explainopt.verdicts.verdict_table`)."""
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


# --------------------------------------------------------------------------- tables in the text

#: What a table in the text shows for a missing value; its note says so.
MISSING_MARK = "—"


def number_text(value, *, digits: int = 3) -> str:
    """The book's one number format: integers as they are, other numbers to `digits` significant digits
    without an exponent between 0.001 and 100 000 (``0.123``, ``12.3``, ``1234``), with one outside
    (``1.23e-05``); :data:`MISSING_MARK` for a missing value; anything else as its text."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        return MISSING_MARK if missing(value) else str(value)
    if pd.isna(value):
        return MISSING_MARK
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    magnitude = abs(float(value))
    if 1e-3 <= magnitude < 1e5:
        decimals = max(digits - 1 - int(np.floor(np.log10(magnitude))), 0)
        return f"{value:.{decimals}f}"
    return f"{value:.{digits - 1}e}"


def tables_dir() -> Path:
    """Where a chapter's full tables go as CSV: ``tables/`` beside the executed notebook (the folder of
    :func:`results_dir`), which the book build copies with the page's download links."""
    return results_dir().parent / "tables"


def _short_view(frame: pd.DataFrame, *, rows: int, columns: int, digits: int) -> tuple[pd.DataFrame, list[str]]:
    """The first `rows` rows and `columns` columns of `frame`, every cell as text (:func:`number_text`),
    and the sentences saying what was left out or is missing."""
    notes = []
    view = frame.iloc[:rows, :columns]
    if len(frame) > rows:
        notes.append(f"the first {rows} of {len(frame)} rows")
    if frame.shape[1] > columns:
        notes.append(f"{columns} of {frame.shape[1]} columns")
    if frame.isna().to_numpy().any():
        notes.append(f"{MISSING_MARK}: no value (not computed at this scale, or not defined)")
    text = view.apply(lambda column: column.map(lambda v: number_text(v, digits=digits)))
    text.index = [number_text(i, digits=digits) if not isinstance(i, tuple)
                  else ", ".join(number_text(j, digits=digits) for j in i) for i in view.index]
    return text, notes


def table_view(frame: pd.DataFrame, name: str, *, rows: int = 15, columns: int = 8, digits: int = 3,
               index: bool = True, folder: Path | None = None) -> tuple[Rendered, Markdown]:
    """A table as the book shows it: a short formatted view (the first `rows` rows and `columns` columns,
    one number format, :data:`MISSING_MARK` for a missing value) as HTML that fits the text column, and a
    note under it that says what the view leaves out and links the full table, written as
    ``<folder>/<name>.csv`` (default :func:`tables_dir`) for download (the MyST ``{download}`` role, so
    that the book build copies the file). `index`: whether the row labels are shown and saved."""
    if not name or any(c in name for c in '/\\ "`<>'):
        raise ValueError(f"name={name!r}: a file name without spaces, slashes or quotes, e.g. 'table1'")
    folder = Path(folder or tables_dir())
    folder.mkdir(parents=True, exist_ok=True)
    frame.to_csv(folder / f"{name}.csv", index=index)
    text, notes = _short_view(frame if index else frame.reset_index(drop=True), rows=rows, columns=columns,
                              digits=digits)
    labels = " / ".join(str(n) for n in frame.index.names if n is not None)
    header = ([labels] if index else []) + [str(c) if not isinstance(c, tuple) else " / ".join(map(str, c))
                                            for c in text.columns]
    head = "".join(f"<th>{_breakable(h)}</th>" for h in header)
    body = "".join("<tr>" + (f"<th>{_breakable(str(i))}</th>" if index else "")
                   + "".join(f"<td>{_breakable(v)}</td>" for v in values) + "</tr>"
                   for i, values in zip(text.index, text.itertuples(index=False)))
    table = (f'<table class="book-table" style="max-width:100%;font-size:0.85em;font-variant-numeric:tabular-nums">'
             f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
    shown = "Shown: " + "; ".join(notes) + ". " if notes else ""
    link = f"{{download}}`{name}.csv <tables/{name}.csv>`" if folder == tables_dir() else f"`{folder / name}.csv`"
    note = Markdown(f"*{shown}The full table: {link}.*")
    return Rendered(table, markdown_table(text.reset_index(names=labels, allow_duplicates=True) if index else text)), note


def _breakable(text: str) -> str:
    """`text` as HTML that the browser may wrap after each underscore as well as at its spaces and hyphens
    ("within_ reach", "give_ me_ some_ credit"): a table of many columns then fits the text column without
    breaking a word in its middle (_static/explainopt.css) and keeps the names the text refers to."""
    return html.escape(text).replace("_", "_<wbr>")


def show_table(frame: pd.DataFrame, name: str, **options) -> None:
    """Display :func:`table_view` of `frame` in a notebook: the short view, then its note and download link."""
    display(*table_view(frame, name, **options))
