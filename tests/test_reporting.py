import html

import numpy as np
import pandas as pd
import pytest

from explainopt import reporting, verdicts
from explainopt.reporting import claim, claims_table, save_chapter_results, status_table


def test_verdicts_follow_the_computed_check():
    assert claim("a", paper=0.8, ours=0.85, holds=True).verdict == "reproduced"
    assert claim("a", paper=0.8, ours=0.5, holds=False).verdict == "differs"
    assert claim("a", paper=0.8, ours="n/a", holds=None).verdict == "not run"
    assert claim("a", paper=0.8, ours=0.7, holds=True, partly=True).verdict == "partly"
    assert claim("a", paper=0.81234, ours=0.5, holds=False).paper == "0.812"


@pytest.mark.parametrize("neither_way", [False, True])
@pytest.mark.parametrize("holds", [True, False, None, float("nan")])
@pytest.mark.parametrize("evidence", [None, 0, 4, 5, 6])
def test_a_check_reading_neither_way_is_undecided_on_its_minimum_evidence_and_not_run_below_it(holds, evidence,
                                                                                              neither_way):
    """Audit 40b G4: a check that read all the evidence its rule asks for and decided neither way read *not run*;
    audit 41 H2: only a check that says its None is such a reading (`neither_way`) reads *undecided*, a number
    missing stays *not run*. Minimum 5, every combination."""
    made = claim("a", paper=1, ours="-", holds=holds, evidence=evidence, minimum=5, neither_way=neither_way)
    below = evidence is not None and evidence < 5
    open_ = holds is None or holds != holds
    expected = ("not run" if below or (open_ and not (neither_way and evidence is not None)) else "undecided" if open_
                else "reproduced" if holds else "differs")
    assert made.verdict == expected
    assert ("of the 5 cells this check needs were counted" in made.why) == below


def test_the_counts_name_the_undecided_apart_with_their_denominator():
    many = ["reproduced"] * 4 + ["partly", "differs", "differs", "undecided", "not run", "not run"]
    assert reporting.verdicts_text(many) == ("4 of 7 decided reproduced, 1 partly, 2 differ; 1 of 10 undecided; "
                                             "2 of 10 not run")
    assert reporting.verdicts_text(["differs", "undecided"]) == ("0 of 1 decided reproduced, 0 partly, 1 differs; "
                                                                 "1 of 2 undecided; all 2 run")
    assert reporting.verdicts_text(["undecided", "not run"]) == "none decided; 1 of 2 undecided; 1 of 2 not run"


def test_invalid_verdict_is_refused():
    with pytest.raises(ValueError, match="verdict"):
        reporting.Claim("a", "1", "2", "maybe")


def test_status_table_counts_claims_per_chapter_naming_the_denominators(tmp_path, monkeypatch):
    monkeypatch.setenv("EXPLAINOPT_RESULTS", str(tmp_path))
    claims = [claim("a", paper=1, ours=1, holds=True), claim("b", paper=1, ours=2, holds=False),
              claim("c", paper=1, ours="-", holds=None)]
    save_chapter_results("01", claims, {"scale": "smoke", "solvers": "clarabel", "wall_time_s": 12.3},
                         tables={"claims": claims_table(claims)})
    row = status_table(tmp_path).iloc[0]
    assert row["chapter"] == "01" and row["solvers"] == "clarabel"
    assert row["verdicts"] == "1 of 2 decided reproduced, 0 partly, 1 differs; 1 of 3 not run"
    assert row["compute time"] == "not recorded"  # the render's wall time is not a compute time
    assert list(claims_table(claims).columns) == ["Claim", "Paper", "Ours", "Verdict", "Why"]
    assert list(claims_table([]).columns) == ["Claim", "Paper", "Ours", "Verdict", "Why"]


def test_status_shows_the_cells_compute_time_and_flags_a_partial_grid(tmp_path):
    save_chapter_results("02", [claim("a", paper=1, ours=1, holds=True)],
                         {"scale": "paper", "cells": {"computed": 1840, "total": 4320}, "compute_time_s": 5400,
                          "wall_time_s": 3.4}, folder=tmp_path)
    row = status_table(tmp_path).iloc[0]
    assert row["grid"] == "1 840 of 4 320 cells (partial grid)" and row["compute time"] == "1.5 h"
    assert row["still to compute"] == ""  # saved before the estimate was recorded
    for to_compute, cells, shown in ((7200, {"computed": 1, "total": 2}, "about 2.0 h"),
                                     (None, {"computed": 1, "total": 2}, "unknown"),
                                     (0.0, {"computed": 2, "total": 2}, "none")):
        save_chapter_results("02", [claim("a", paper=1, ours=1, holds=True)],
                             {"scale": "paper", "cells": cells, "to_compute_s": to_compute}, folder=tmp_path)
        assert status_table(tmp_path).iloc[0]["still to compute"] == shown
    save_chapter_results("02", [claim("a", paper=1, ours=1, holds=True)],
                         {"scale": "paper", "cells": {"computed": 1, "total": 2}, "to_compute_s": 10800,
                          "to_compute_borrowed_s": 3600}, folder=tmp_path)
    assert status_table(tmp_path).iloc[0]["still to compute"] == "about 3.0 h, 1.0 h of it borrowed"
    assert row["verdicts"] == "1 of 1 decided reproduced, 0 partly, 0 differ; all 1 run"


LONG_CLAIM = ("Region-robust counterfactuals of a network survive larger model shifts than the nearest ones do, on "
              "every data set, for every radius rho <= 0.05 and both norms (|l2| and l-inf), with 40 factuals each.")


def test_the_verdict_table_shows_every_claim_in_full_with_a_coloured_verdict():
    assert len(LONG_CLAIM) == 200
    claims = [verdicts.declared(c, id=f"09-{k}", rule="", evidence=None, minimum=1) for k, c in enumerate(
        [claim(LONG_CLAIM, paper="<b>bold</b>", ours=0.5, holds=True, why="w" * 120),
         claim("b", paper=1, ours=2, holds=False), claim("c", paper=1, ours="", holds=None)])]
    table = verdicts.verdict_table(claims)
    page = table._repr_html_()
    assert html.escape(LONG_CLAIM) in page and "w" * 120 in page and "…" not in page
    assert "<b>bold</b>" not in page and "&lt;b&gt;bold&lt;/b&gt;" in page  # every text escaped
    for verdict in ("reproduced", "differs", "not run"):
        assert f'background:{reporting.VERDICT_COLOURS[verdict]};color:#fff;' in page
        assert f">{verdict}</span>" in page
    assert page.count("<tr") == 1 + len(claims) and f'id="{reporting.claim_anchor(LONG_CLAIM)}"' in page
    text = table._repr_markdown_()
    assert "\\|l2\\|" in text and len(text.split("\n\n")[0].splitlines()) == 2 + len(claims)


def test_markdown_tables_escape_what_markdown_would_read_as_syntax():
    import pandas as pd

    frame = pd.DataFrame({"claim": ["|ratio − 1| ≤ 1e-4, p*(N, α), L_faithful, $x$"], "verdict": ["reproduced"]})
    row = reporting.markdown_table(frame).splitlines()[2]
    assert row == "| \\|ratio − 1\\| ≤ 1e-4, p\\*(N, α), L\\_faithful, \\$x\\$ | reproduced |"


def test_the_summary_box_shows_both_scales_and_flags_a_partial_grid(tmp_path):
    folders = {"book scale": tmp_path / "book", "paper scale": tmp_path / "paper"}
    save_chapter_results("06", [claim("H1", paper=1, ours="mean 0.9", holds=True),
                                claim("H2 |θ| ≤ 1", paper=1, ours=2, holds=False)],
                         {"scale": "book", "cells": {"computed": 36, "total": 36}}, folder=folders["book scale"])
    save_chapter_results("06", [claim("H1", paper=1, ours="mean 0.8", holds=True),
                                claim("H2 |θ| ≤ 1", paper=1, ours="", holds=None)],
                         {"scale": "paper", "cells": {"computed": 10, "total": 240}}, folder=folders["paper scale"])
    box = reporting.verdict_summary("06", folders)
    page = box._repr_html_()
    assert "book scale" in page and "paper scale" in page and "mean 0.9" in page and "mean 0.8" in page
    assert "10 of 240 cells (partial grid)" in page and "36 of 36 cells;" not in page and "A partial grid" in page
    assert "1 of 2 decided reproduced, 0 partly, 1 differs; all 2 run" in page
    assert "1 of 1 decided reproduced, 0 partly, 0 differ; 1 of 2 not run" in page
    assert f'href="#{reporting.claim_anchor("H1")}"' in page and "H2 |θ| ≤ 1" in page
    assert "10 of 240 cells (partial grid)" in box._repr_markdown_()


def test_the_summary_box_says_when_a_scales_verdicts_are_missing(tmp_path):
    save_chapter_results("03", [claim("a", paper=1, ours=1, holds=True)], {"scale": "book"}, folder=tmp_path / "book")
    page = reporting.verdict_summary("03", {"book scale": tmp_path / "book", "paper scale": tmp_path / "paper"}).html
    assert "no verdicts committed" in page and "paper/03.json is missing" in page and "reproduced" in page
    empty = reporting.verdict_summary("03", {"paper scale": tmp_path / "paper"}).html
    assert "is missing" in empty and "<table" not in empty


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


def test_every_is_decided_by_a_present_failure_whatever_another_value_lacks():
    """Audit 7 E2: a claim over several items read "not run" although a present item already failed."""
    assert reporting.every([5.0, np.nan], lambda v: v < 3) is False
    assert reporting.every([1.0, np.nan], lambda v: v < 3) is None


# --------------------------------------------------------------------------- tables in the text

def test_one_number_format_for_every_table():
    from explainopt.reporting import MISSING_MARK, number_text

    assert [number_text(v) for v in (3, 2.0, 0.123456, 12.3456, 1234.56, 0.0001234, 123456.7)] == [
        "3", "2", "0.123", "12.3", "1235", "1.23e-04", "1.23e+05"]
    assert number_text(float("nan")) == number_text(None) == MISSING_MARK
    assert number_text("x^3") == "x^3" and number_text(True) == "True"


def test_a_table_view_is_short_and_formatted_and_its_full_table_is_a_csv_beside_it(tmp_path, monkeypatch):
    from explainopt.reporting import table_view

    monkeypatch.setenv("EXPLAINOPT_RESULTS", str(tmp_path / "results"))
    frame = pd.DataFrame({"rate": np.linspace(0, 1, 40), "gap": [np.nan] + [1e-6] * 39,
                          **{f"c{k}": range(40) for k in range(10)}}, index=pd.Index(range(40), name="run"))
    table, note = table_view(frame, "probe", rows=5, columns=4)
    saved = pd.read_csv(tmp_path / "tables" / "probe.csv", index_col="run")
    pd.testing.assert_frame_equal(saved, frame, check_dtype=False)  # the full table, not the view
    assert table.html.count("<tr>") == 1 + 5 and table.html.count("<td>") == 5 * 4
    assert "<td>—</td>" in table.html and "<td>1.00e-06</td>" in table.html and "<th>run</th>" in table.html
    two_levels, _ = table_view(frame.set_index("c0", append=True), "probe")
    assert "<th>run / c0</th>" in two_levels.html  # one header cell over the row labels, as in every row
    assert table.markdown.splitlines()[0].startswith("| run |")  # the text fallback names them alike
    assert two_levels.markdown.splitlines()[0].startswith("| run / c0 |")
    assert "the first 5 of 40 rows" in note.data and "4 of 12 columns" in note.data and "—: no value" in note.data
    assert "{download}`probe.csv <tables/probe.csv>`" in note.data
    with pytest.raises(ValueError, match="name="):
        table_view(frame, "a table")


def test_a_table_view_wraps_labels_and_values_after_underscores_and_keeps_them(tmp_path, monkeypatch):
    """A long name (a column "within_reach", a data set "give_me_some_credit") may wrap after its underscores,
    not only inside a word, and reads as written; numbers and the CSV are untouched."""
    from explainopt.reporting import table_view

    monkeypatch.setenv("EXPLAINOPT_RESULTS", str(tmp_path / "results"))
    frame = pd.DataFrame({"within_reach": [True], "max_gap": [0.125]},
                         index=pd.Index(["give_me_some_credit"], name="data_set"))
    table, _ = table_view(frame, "probe")
    assert "<th>data_<wbr>set</th>" in table.html and "<th>within_<wbr>reach</th>" in table.html
    assert "<th>give_<wbr>me_<wbr>some_<wbr>credit</th>" in table.html and "<td>0.125</td>" in table.html
    assert "within\\_reach" in table.markdown and "<wbr>" not in table.markdown
    assert list(pd.read_csv(tmp_path / "tables" / "probe.csv").columns) == ["data_set", "within_reach", "max_gap"]
