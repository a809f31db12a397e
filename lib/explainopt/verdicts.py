"""The claim contract every chapter keeps: each claim declared once, with a stable id, the paper's wording,
an evidence rule and, for a verdict other than *reproduced*, a computed explanation.

A chapter declares its claims in ``chapters/data/<chapter>_claims.csv`` and reads them with a
:class:`ClaimBook`; its checks build each claim with :meth:`ClaimBook.claim`, deciding with the shared predicates :func:`all_of_at_least`,
:func:`share_of_matched_pairs`, :func:`interval_above`, :func:`interval_below` and :func:`sign_test`. A claim
(:class:`DeclaredClaim`) is a :class:`~explainopt.reporting.Claim` that also carries its id, its rule, the
cells it counted and needed, and its explanation: :func:`~explainopt.reporting.save_chapter_results` stores
them in ``results/<scale>/NN.json``, :func:`verdict_table` shows them, :func:`claims_by_scale` lists them on
the status page.

Kept apart from :mod:`explainopt.reporting` on purpose: chapter 6's cell function reaches that module
through its imports, so editing it moves the code fingerprint of chapter 6's stored cells.
"""

from __future__ import annotations

import html
import re
from decimal import Decimal, localcontext
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import binomtest

from . import reporting
from .reporting import NOT_RUN, PARTLY, REPRODUCED, UNDECIDED, Rendered, missing


@dataclass
class DeclaredClaim(reporting.Claim):
    """A claim with its declared id (``04-vr-100``), evidence rule (how many cells at least, how they are
    paired, what decides), the cells the check counted (`evidence`) and needs (`minimum`), and, for a
    verdict that is not *reproduced*, the computed sentence that says why (:func:`explanation`)."""

    id: str = ""
    rule: str = ""
    evidence: int | None = None
    minimum: int = 1
    unit: str = "cells"
    explanation: str = ""


# --------------------------------------------------------------------------- shared predicates of the checks

def _present(values) -> list:
    """The values that are not missing (None or NaN)."""
    array = values.to_numpy() if hasattr(values, "to_numpy") else list(values if values is not None else [])
    return [v for v in array if v is not None and not (np.ndim(v) == 0 and pd.isna(v))]


def all_of_at_least(values, n: int, predicate=bool) -> bool | None:
    """Whether `predicate` holds for every one of `values` (missing values, None or NaN, left out), judged
    only on at least `n` of them: None (*not run*) below `n`."""
    present = _present(values)
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


def count_decides(count: int, unknown: int, enough) -> bool | None:
    """Whether `count` items (data sets, types) are `enough`, a predicate of a count, while `unknown` more
    lack their number: decided as soon as no outcome of the unknown ones could change it, None (*not run*)
    otherwise. A claim on every item fails on one failed item, whatever the others lack."""
    outcomes = {bool(enough(count + k)) for k in range(int(unknown) + 1)}
    return outcomes.pop() if len(outcomes) == 1 else None


#: The sign tests' level: "ours > base" holds when ours is higher on significantly more items (factuals,
#: simulations) than lower, and fails when it is lower on significantly more than higher.
SIGN_TEST_LEVEL = 0.05


def sign_test(wins: int, losses: int) -> float:
    """One-sided sign test: the chance of at least `wins` wins in ``wins + losses`` fair coin flips (ties left
    out); 1 without a decisive pair."""
    n = wins + losses
    return float(binomtest(wins, n, 0.5, alternative="greater").pvalue) if n else 1.0


def _sign(x) -> int:
    return (x > 0) - (x < 0)


def beside(value: float, fmt: str, *bounds: float) -> str:
    """`value` in the format `fmt` (``".1%"``, ``"+.0%"``, ``".2f"``, ``".2g"``), with as many more digits as
    it takes for the printed number, read as the decimal it shows, to lie on the same side of every one of
    `bounds` as the value itself: a cut of 99.001% beside the rule "> 99%" prints "99.001%", not "99.00%"
    (which reads as a failure). A missing bound (None, NaN) has no side and is left out. When fixed-point
    digits cannot show the side (a value within 1e-40 of a bound), the number is printed in scientific
    notation with as many significant digits as it takes. A missing value (None, NaN) prints "n/a"."""
    if missing(value):
        return "n/a"
    m = re.fullmatch(r"([+ -]?)\.(\d+)([fge%])", fmt)
    if m is None or not np.isfinite(value):
        return f"{value:{fmt}}"
    sign, digits, kind = m.groups()
    scale = Decimal(100 if kind == "%" else 1)
    sides = [(Decimal(repr(float(b))) * scale, _sign(float(value) - float(b))) for b in bounds if not missing(b)]
    with localcontext() as exact:
        exact.prec = 1100           # every double's decimal expansion, times 100, without rounding
        shown = Decimal(float(value)) * scale
    # Python's own "%" multiplies by 100 in binary first: 0.09999999999999999 would print as 10.000...%
    number, fixed = (shown, "f") if kind == "%" else (float(value), kind)
    texts = [f"{number:{sign}.{int(digits) + extra}{fixed}}" for extra in range(40)]
    texts += [f"{number:{sign}.{precision}e}" for precision in range(25)]
    for text in texts:
        if all(_sign(Decimal(text) - b) == side for b, side in sides):
            break
    return text + ("%" if kind == "%" else "")


def interval_above(low, target) -> bool | None:
    """Whether an interval lies entirely above `target` (its lower end is): None when it is missing."""
    return None if missing(low, target) else bool(low > target)


def interval_below(high, target) -> bool | None:
    """Whether an interval lies entirely below `target` (its upper end is): None when it is missing."""
    return None if missing(high, target) else bool(high < target)


# --------------------------------------------------------------------------- declared claims

def explanation(c: DeclaredClaim, *, deviation: str = "", undecided_by: str = "") -> str:
    """Why a verdict is not *reproduced*, as one sentence computed from the claim: *too little evidence*
    (not run: the cells counted against those needed, or the check's reason), *undecided* (the evidence
    counted against the rule's minimum, and the check's reason for reading neither way), a *deviation from
    the paper's protocol* (the one named; for a claim not run or undecided, `undecided_by`, the deviation of
    ours that leaves its cells undecided), or a *genuine finding* (our number and the paper's under the
    claim's rule). Empty for a reproduced claim."""
    if c.verdict == REPRODUCED:
        return ""
    if c.verdict in (NOT_RUN, UNDECIDED):
        counted = (f"{c.evidence} of the {c.minimum} {c.unit} the rule needs were counted" if c.evidence is not None
                   and c.evidence < c.minimum else "")
        if undecided_by:  # the count too, said nowhere else (audit 28 D6)
            return (f"Deviation from the paper's protocol: {undecided_by}, so the check cannot decide"
                    + (f" ({counted})." if counted else "."))
        if c.verdict == UNDECIDED:
            return (f"Undecided: the check reads its evidence neither way ({c.evidence} counted, the rule's minimum "
                    f"{c.minimum}; counted: {c.unit}){f': {c.why}' if c.why else ''}.")
        return f"Too little evidence: {counted or c.why or 'the check found no data'}."
    part = "only partly holds" if c.verdict == PARTLY else "does not hold"
    numbers = f"ours: {c.ours}; the paper: {c.paper}"  # the paper's text may be "new (no paper measures it)"
    if deviation:
        return f"Deviation from the paper's protocol: {deviation}; the claim {part} ({numbers})."
    return f"Genuine finding: the claim {part} on our numbers ({numbers}){f' under the rule: {c.rule}' if c.rule else ''}."


def declared(c: reporting.Claim, *, id: str, rule: str, evidence: int | None, minimum: int,
             deviation: str = "", unit: str = "cells", undecided_by: str = "") -> DeclaredClaim:
    """`c` with its id, rule, evidence (counted in `unit`) and explanation."""
    made = DeclaredClaim(**asdict(c), id=id, rule=rule, evidence=None if evidence is None else int(evidence),
                         minimum=int(minimum), unit=unit or "cells")
    made.explanation = explanation(made, deviation=deviation, undecided_by=undecided_by)
    return made


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
        fewest = "one of the" if minimum == 1 else minimum    # the unit is plural: "at least one of the datasets"
        return (f"at least {fewest} {row['unit']}; {row['pairing']}; decides: {row['decides']}"
                if row["unit"] else f"{row['pairing']}; decides: {row['decides']}")

    def claim(self, id: str, *, ours, holds, paper=None, fields: dict | None = None, deviation: str | None = None,
              evidence: int | None = None, minimum: int = 1, failure_decides: bool = False, pass_decides: bool = False,
              undecided_by: str = "", neither_way: bool = False, **kwargs) -> DeclaredClaim:
        """Claim `id` (:func:`~explainopt.reporting.claim`) in the declared wording and with the declared
        evidence rule; `fields` fill the wording's named fields, `paper` overrides the declared number text
        (when it is computed from a transcribed table), `deviation` the declared deviation (when it is
        computed). `failure_decides`: a claim on every item that failed on an item with enough evidence is
        decided (*differs*) even while other items have less than `minimum` (the rule says so); `pass_decides`:
        likewise for a claim on some item ("sometimes invalid") that holds on an item already counted;
        `undecided_by`: the deviation of ours that leaves a claim *not run* (or *undecided*) on the cells it has;
        `neither_way`: the check's None is its reading of the numbers it has, neither way (a shortfall within
        noise, a sign test short of significance), not a lack of numbers: *undecided* on at least `minimum`."""
        fields, unit = fields or {}, self.row(id)["unit"] or "cells"
        gate = None if (failure_decides and holds is False) or (pass_decides and holds is True) else evidence
        too_few = gate is not None and gate < minimum  # not run; the explanation counts the evidence, once
        made = reporting.claim(self.text(id, **fields), paper=self.paper(id, **fields) if paper is None else paper,
                               ours=ours, holds=None if too_few else holds, minimum=minimum,
                               evidence=evidence if evidence is not None and evidence >= minimum else None,
                               neither_way=neither_way, **kwargs)
        return declared(made, id=id, rule=self.rule(id, minimum), evidence=evidence, minimum=minimum, unit=unit,
                        deviation=self.row(id)["deviation"] if deviation is None else deviation,
                        undecided_by=undecided_by)


# --------------------------------------------------------------------------- showing them

def claim_key(c: reporting.Claim | dict) -> str:
    """What identifies a claim across scales and runs: its id, or its text where it has none (results saved
    before claims had ids)."""
    c = asdict(c) if isinstance(c, reporting.Claim) else c
    return c.get("id") or c["claim"]


VERDICT_TABLE_COLUMNS = {"Id": 12, "Claim": 19, "Paper": 13, "Ours": 17, "Verdict": 13, "Why": 26}


def _why_beside(c: DeclaredClaim) -> str:
    """The check's reason where the explanation does not already say it (a claim not run on the check's own
    reason quotes it whole)."""
    return "" if not c.why or c.why in (c.explanation or "") else c.why


def _why_cell(c: DeclaredClaim) -> str:
    """The Why cell of a claim's row (HTML): the explanation of a verdict that is not reproduced, the check's
    reason, and the evidence rule with the cells it counted."""
    parts = [f"<strong>{html.escape(c.explanation)}</strong>"] if c.explanation else []
    parts += [html.escape(c.why)] if _why_beside(c) else []
    if c.rule:
        counted = f" ({c.evidence} counted)" if c.evidence is not None else ""
        parts.append(f"<small>Rule: {html.escape(c.rule)}{html.escape(counted)}</small>")
    return "<br>".join(parts)


def explanations_text(claims: list[DeclaredClaim]) -> str:
    """One line per verdict that is not *reproduced*: its id, verdict and explanation (Markdown)."""
    esc = reporting.escape_markdown
    return "\n".join(f"- **{esc(c.id or c.claim)}** ({c.verdict}): {esc(c.explanation)}" for c in claims if c.explanation)


def verdict_table(claims: list[DeclaredClaim]) -> Rendered:
    """The "Paper vs. this book" table in full: each claim with its id, the paper's number, ours, a coloured
    verdict and its reason (the explanation of a verdict that is not reproduced, the check's reason and the
    evidence rule), nothing cut; under it every verdict that is not reproduced with its explanation. Each
    row is the target of its claim's link in the summary box (:func:`~explainopt.reporting.claim_anchor`),
    the table that of ``#verdicts``."""
    rows = [[html.escape(c.id or str(k)), html.escape(c.claim), html.escape(c.paper), html.escape(c.ours),
             reporting.verdict_label(c.verdict), _why_cell(c)] for k, c in enumerate(claims, 1)]
    body = reporting.html_table(VERDICT_TABLE_COLUMNS, rows, row_ids=[reporting.claim_anchor(c.claim) for c in claims],
                                table_id="verdicts")
    table = pd.DataFrame([[c.id or str(k), c.claim, c.paper, c.ours, c.verdict,
                           "; ".join(p for p in (c.explanation, _why_beside(c), c.rule and f"Rule: {c.rule}") if p)]
                          for k, c in enumerate(claims, 1)], columns=list(VERDICT_TABLE_COLUMNS))
    markdown = reporting.markdown_table(table)
    notes = [c for c in claims if c.explanation]
    if notes:
        title = f"Why {len(notes)} of the {len(claims)} verdicts are not reproduced"
        body += (f'<p><strong>{html.escape(title)}</strong></p><ul>'
                 + "".join(f"<li><strong>{html.escape(c.id or c.claim)}</strong> ({html.escape(c.verdict)}): "
                           f"{html.escape(c.explanation)}</li>" for c in notes) + "</ul>")
        markdown += f"\n\n**{title}**\n\n" + explanations_text(claims)
    return Rendered(body, markdown)


def claims_by_scale(folders: dict[str, Path]) -> pd.DataFrame:
    """Every claim of every chapter, with its id, and its verdict in each results folder, side by side."""
    rows = {}
    for label, folder in folders.items():
        for path in sorted(Path(folder).glob("[0-9]*.json")):
            for c in reporting.read_chapter_results(folder, path.stem)["claims"]:
                rows.setdefault((path.stem, claim_key(c)), {"chapter": path.stem, "id": c.get("id", ""),
                                                            "claim": c["claim"]})[label] = c["verdict"]
    return pd.DataFrame(list(rows.values())).fillna("") if rows else pd.DataFrame()
