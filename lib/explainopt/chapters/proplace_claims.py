"""Chapter 4's claims as the claim contract declares them (``data/proplace_claims.csv``): id, wording,
evidence rule and explanation of each claim that :func:`explainopt.chapters.proplace.claims` checks.

The checks stay in :mod:`~explainopt.chapters.proplace`, unchanged: chapter 6's cell function imports that
module, so any edit to it moves the code fingerprint of chapter 6's stored cells. This module adds what
the contract asks on top: the declared ids and rules, and the deviation the numbers show when PROPLACE
misses vr (a gap most methods share on a data set is the retraining set-up's, not PROPLACE's).
"""

from __future__ import annotations

import pandas as pd

from ..verdicts import ClaimBook, DeclaredClaim
from . import paper_table
from . import proplace as CH

#: The chapter's claims, declared in one place: id, check, wording and evidence rule (data/proplace_claims.csv).
CLAIMS = ClaimBook(CH.CHAPTER, paper_table("proplace_claims"))


def retraining_gap(table: pd.DataFrame) -> str:
    """The deviation that explains a missed vr where the numbers show one: on a data set where PROPLACE's vr
    is below 100 %, most methods' vr below the paper's; empty otherwise."""
    if "method" not in table or table.empty:
        return ""
    rows = table[table["method"] == "PROPLACE"].dropna(subset=["vr"])
    gaps = []
    for dataset in rows.loc[rows["vr"] < 99.9, "dataset"]:
        below, of = CH.below_paper_vr(table, dataset)
        if of and 2 * below > of:
            gaps.append(f"on {dataset} {below} of {of} methods' vr are below the paper's")
    return ("our retrained networks (the retraining set-up) differ from the paper's: " + "; ".join(gaps)) if gaps else ""


def claims(table: pd.DataFrame, inner: pd.DataFrame, *, n_retrained: int) -> list[DeclaredClaim]:
    """:func:`~explainopt.chapters.proplace.claims` with the declared ids, evidence rules and explanations."""
    # the checks count factuals themselves and say so in their reasons; the rule states the fewest they need
    needed = {id: (None, CH.MIN_FACTUALS) for id in CLAIMS.ids if id != "04-exact-inner"}
    return CLAIMS.declare(CH.claims(table, inner, n_retrained=n_retrained), evidence=needed,
                          deviations={"04-vr-100": retraining_gap(table)})
