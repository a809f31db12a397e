import pytest

from explainopt import reporting
from explainopt.reporting import claim, claims_table, save_chapter_results, status_table


def test_verdicts_follow_the_computed_check():
    assert claim("a", paper=0.8, ours=0.85, holds=True).verdict == "reproduced"
    assert claim("a", paper=0.8, ours=0.5, holds=False).verdict == "differs"
    assert claim("a", paper=0.8, ours="n/a", holds=None).verdict == "not run"
    assert claim("a", paper=0.8, ours=0.7, holds=True, partly=True).verdict == "partly"
    assert claim("a", paper=0.81234, ours=0.5, holds=False).paper == "0.812"


def test_invalid_verdict_is_refused():
    with pytest.raises(ValueError, match="verdict"):
        reporting.Claim("a", "1", "2", "maybe")


def test_status_table_counts_claims_per_chapter(tmp_path, monkeypatch):
    monkeypatch.setenv("EXPLAINOPT_RESULTS", str(tmp_path))
    claims = [claim("a", paper=1, ours=1, holds=True), claim("b", paper=1, ours=2, holds=False),
              claim("c", paper=1, ours="-", holds=None)]
    save_chapter_results("01", claims, {"scale": "smoke", "solvers": "clarabel", "wall_time_s": 12.3},
                         tables={"claims": claims_table(claims)})
    table = status_table(tmp_path)
    row = table.iloc[0]
    assert row["chapter"] == "01" and row["scale"] == "smoke" and row["solvers"] == "clarabel"
    assert row["reproduced"] == "1 of 2" and row["differ"] == 1 and row["not run"] == 1
    assert list(claims_table(claims).columns) == ["Claim", "Paper", "Ours", "Verdict", "Why"]


def test_status_and_claims_side_by_side_per_scale(tmp_path):
    book_dir, paper_dir = tmp_path / "book", tmp_path / "paper"
    save_chapter_results("02", [claim("a", paper=1, ours=1, holds=True)], {"scale": "book"}, folder=book_dir)
    save_chapter_results("02", [claim("a", paper=1, ours=1, holds=False)],
                         {"scale": "paper", "cells": {"computed": 1840, "total": 4320}}, folder=paper_dir)
    table = reporting.status_table({"this build": book_dir, "paper (store)": paper_dir})
    row = table.iloc[0]
    assert row["this build: reproduced"] == "1 of 1" and row["paper (store): differ"] == 1
    assert row["paper (store): cells"] == "1840 of 4320"
    claims = reporting.claims_by_scale({"this build": book_dir, "paper (store)": paper_dir})
    assert claims.iloc[0].to_dict() == {"chapter": "02", "claim": "a", "this build": "reproduced",
                                        "paper (store)": "differs"}


def test_missing_data_reads_not_run():
    import numpy as np
    import pandas as pd

    assert claim("a", paper=1, ours="", holds=float("nan")).verdict == "not run"
    assert reporting.every(pd.Series([], dtype=float), lambda v: v <= 2) is None
    assert claim("a", paper=1, ours="", holds=reporting.every([], bool)).verdict == "not run"
    assert reporting.every([1.0, np.nan]) is None and reporting.missing(None) and not reporting.missing(0.0, [1])
    assert reporting.every([1, 2], lambda v: v < 3) is True and reporting.every([1, 5], lambda v: v < 3) is False
    few = claim("a", paper=1, ours=1, holds=True, evidence=5, minimum=20)
    assert few.verdict == "not run" and "5 of the 20" in few.why


def test_scale_changes_lists_only_verdicts_that_moved(tmp_path):
    book = [claim("same", paper=1, ours=1, holds=True),
            claim("moved", paper=1, ours="40% (n=5)", holds=False, why="wide interval"),
            claim("unchecked", paper=1, ours="", holds=None)]
    path = save_chapter_results("05", book, {"scale": "book"}, folder=tmp_path)
    paper = [claim("same", paper=1, ours=1, holds=True),
             claim("moved", paper=1, ours="62% (n=200)", holds=True, why="more simulations"),
             claim("unchecked", paper=1, ours=3, holds=True), claim("new", paper=1, ours=1, holds=False)]
    changes = reporting.scale_changes(paper, path)
    assert changes.to_dict("records") == [{"claim": "moved", "book: ours": "40% (n=5)", "book: verdict": "differs",
                                           "book: why": "wide interval", "paper: ours": "62% (n=200)",
                                           "paper: verdict": "reproduced", "paper: why": "more simulations"}]
    assert reporting.scale_changes(paper, tmp_path / "absent.json").empty
