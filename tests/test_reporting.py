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
    assert row["claims reproduced"] == "1 of 2" and row["differ"] == 1 and row["not run at this scale"] == 1
    assert list(claims_table(claims).columns) == ["Claim", "Paper", "Ours", "Verdict", "Why"]
