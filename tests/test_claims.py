"""The claim contract of every chapter: each claim has a declared id, check and evidence rule
(``chapters/data/<chapter>_claims.csv``); every check reads *not run* without data and explains it
(test_claim_fixtures.py shows each claim holds on a declared fixture, fails on its perturbation, is not run on no data)."""

import inspect
from decimal import Decimal

import math

import numpy as np
import pandas as pd
import pytest
from test_chapter_proplace import GOOD, paper_like_with, table_of

from explainopt import reporting, verdicts
from explainopt.chapters import clemo as C3
from explainopt.chapters import module
from explainopt.chapters import optimizing_explanations as C1
from explainopt.chapters import proplace as C4
from explainopt.chapters import robust_regions as C2
from explainopt.chapters import robustness_benchmark as C6
from explainopt.reporting import DIFFERS, NOT_RUN, REPRODUCED, UNDECIDED

CHAPTERS = ("01", "02", "03", "04", "05", "06")


def _book(chapter: str) -> verdicts.ClaimBook:
    """The chapter's declared claims."""
    return module(chapter).CLAIMS


def _no_data_claims(chapter: str) -> list[reporting.Claim]:
    """Every claim of `chapter` computed on a run without data."""
    empty = pd.DataFrame()
    if chapter == "01":
        return C1.claims(empty, empty, empty, empty, empty)
    if chapter == "02":
        return C2.claims(empty, C2.summary_table(empty), empty, [], time_limit=4)
    if chapter == "03":
        return C3.claims(vrp_samples=40, vrp_solution_limit=20, vrp_chunks=2)
    if chapter == "04":
        table = pd.DataFrame(columns=["dataset", "method", "n", "found", "vΔ", "vr", "l1", "lof", "paper l1"])
        return C4.claims(table, empty, n_retrained=0)
    if chapter == "05":
        from test_chapter_robust_ensembles import EMPTY
        return module("05").claims(**EMPTY, datasets=[])
    return C6.claims(empty)


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_claim_is_declared_once_with_its_check_and_rule(chapter):
    book = _book(chapter)
    assert len(book.ids) == len(set(book.ids)) and all(i.startswith(f"{chapter}-") for i in book.ids)
    for check in book.table["check"]:
        assert inspect.isfunction(getattr(module(chapter), check)), check
    assert (book.table["claim"] != "").all() and (book.table["decides"] != "").all()


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_without_data_every_claim_is_not_run_in_declared_order_and_says_why(chapter):
    claims = _no_data_claims(chapter)
    assert [c.id for c in claims] == _book(chapter).ids
    for c in claims:
        assert c.verdict == NOT_RUN, c.id
        assert c.explanation.startswith("Too little evidence"), c.id
        assert c.rule and "decides: " in c.rule, c.id


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_each_claim_names_its_check(chapter):
    """The id leads from a row to the code: the declared check is a function of the chapter whose source
    names the id (directly, or through the name its id is built from)."""
    book = _book(chapter)
    for id, check in zip(book.ids, book.table["check"]):
        source = inspect.getsource(getattr(module(chapter), check))
        stem = id.split("-", 1)[1].removesuffix("-slsqp").removesuffix("-convex")
        assert id in source or f'"{stem}"' in source, (id, check)


# --------------------------------------------------------------------------- the shared predicates

def test_all_of_at_least_needs_n_present_values_and_can_fail():
    assert verdicts.all_of_at_least([1, 2, 3], 3, lambda v: v > 0) is True
    assert verdicts.all_of_at_least([1, -2, 3], 3, lambda v: v > 0) is False
    assert verdicts.all_of_at_least([1, np.nan, 3], 3, lambda v: v > 0) is None
    assert verdicts.all_of_at_least([], 1) is None and verdicts.all_of_at_least(None, 1) is None


def test_share_of_matched_pairs_counts_only_pairs_with_both_sides_and_flips():
    a = pd.Series({"x": 1.0, "y": 1.0, "z": 1.0, "w": np.nan})
    b = pd.Series({"x": 2.0, "y": 2.0, "z": 2.0, "v": 0.0})
    assert verdicts.share_of_matched_pairs(a, b, 3) == (1.0, 3)
    assert verdicts.share_of_matched_pairs(b, a, 3) == (0.0, 3)   # the compared series flipped
    share, n = verdicts.share_of_matched_pairs(a, b, 4)
    assert np.isnan(share) and n == 3
    with pytest.raises(ValueError, match="pair up"):
        verdicts.share_of_matched_pairs([1.0, 2.0], [1.0], 1)


def test_interval_above_and_below():
    assert verdicts.interval_above(0.6, 0.5) is True and verdicts.interval_above(0.4, 0.5) is False
    assert verdicts.interval_below(0.4, 0.5) is True and verdicts.interval_below(0.6, 0.5) is False
    assert verdicts.interval_above(np.nan, 0.5) is None and verdicts.interval_below(None, 0.5) is None


def test_matched_share_of_chapter_2_ignores_unmatched_configurations():
    """Defect 2 of issue 26 stays fixed: a configuration without its partner is no evidence either way."""
    wide = pd.DataFrame({0.01: [1.0] * 26 + [np.nan] * 27, 0.05: [2.0] * 26 + [3.0] * 27})
    assert C2.matched_share(wide, 0.01, 0.05) == (1.0, 26, 0, 0)
    assert C2.matched_share(wide, 0.05, 0.01) == (0.0, 26, 0, 0)


def test_matched_share_of_chapter_2_leaves_ties_out_and_decides_on_iterations():
    """Equal mean iterations are no evidence either way (the linear model's closed-form regions take 0 at both
    norms). Iterations decide, not wall times: audit 28 found every paper-scale l2 cell computed on another
    machine than its l-inf partner, and the same cell's time up to 9.2x apart between runs."""
    wide = pd.DataFrame({"linf": [0.0, 2.0, 2.0, 3.0, 5.0], "l2": [0.0, 2.0, 4.0, 7.0, 6.0]})
    assert C2.matched_share(wide, "linf", "l2") == (1.0, 3, 2, 0)
    assert C2.matched_share(wide, "l2", "linf") == (0.0, 3, 2, 0)
    summary = pd.DataFrame([dict(model="RF5", dataset=d, norm=n, rho=0.05, time_all=t, iterations_all=i, early_stops=0)
                            for d in ("banknote", "diabetes", "ionosphere")
                            for n, t, i in (("linf", 9.0, 2.0), ("l2", 1.0, 5.0))])   # l2: more iterations, less time
    checks = C2.trend_checks(summary)
    assert (checks["l2_slower"], checks["l2_pairs"], checks["l2_slower_time"]) == (1.0, 3, 0.0)
    claim = C2.claim_l2_slower(checks)
    # 3 of 3 is no significant majority (sign test p = 0.125, audit 49 ch2 F5)
    assert claim.verdict == "undecided" and "100% of 3 matched configurations with unequal iterations" in claim.ours
    assert "sign test p = 0.12" in claim.ours
    assert "l2 slower in 0% of 3" in claim.why
    ties = C2.trend_checks(summary.assign(iterations_all=2.0))
    assert ties["l2_ties"] == 3 and C2.claim_l2_slower(ties).verdict == "not run"
    assert C2.CLAIMS.rule("02-l2-slower", 3).startswith("at least 3 matched configurations with unequal iterations")
    # a plural unit reads as one for a minimum of one (session 43: "at least 1 datasets of at least 20 factuals")
    assert C2.CLAIMS.rule("02-l2-slower", 1).startswith("at least one of the matched configurations with unequal")


def test_a_pair_whose_side_with_fewer_iterations_stopped_early_is_undecided():
    """Audit 28b D1: a stopped instance's iterations are cut short by the time limit (a lower bound). l-inf
    stopped after 1 iteration at 8 s while l2 converged in 2 within 1 s read as "l2 needs more iterations";
    a stop on the side with more iterations still decides (the bound only grows)."""
    summary = pd.DataFrame([dict(model="RF5", dataset=d, norm=n, rho=0.05, time_all=t, iterations_all=i, early_stops=e)
                            for d in ("banknote", "diabetes", "ionosphere")
                            for n, t, i, e in (("linf", 8.0, 1.0, 1), ("l2", 1.0, 2.0, 0))])
    checks = C2.trend_checks(summary)
    assert (checks["l2_pairs"], checks["l2_undecided"]) == (0, 3) and math.isnan(checks["l2_slower"])
    claim = C2.claim_l2_slower(checks)
    assert claim.verdict == "not run" and "3 undecided by an early stop" in claim.ours and "; 3 undecided" in claim.why
    l2_stopped = C2.trend_checks(summary.assign(early_stops=lambda t: (t["norm"] == "l2").astype(int)))
    assert (l2_stopped["l2_slower"], l2_stopped["l2_pairs"], l2_stopped["l2_undecided"]) == (1.0, 3, 0)


# --------------------------------------------------------------------------- a number printed beside its bounds

def printed_side(text: str, bound: float) -> int:
    """The side of `bound` a printed number ("10.0%", "−0.50", "2.0x") reads on: 1 above, -1 below, 0 on it."""
    text = text.strip().replace("−", "-")
    shown = Decimal(text.rstrip("x%")) / (100 if text.endswith("%") else 1)
    return (shown > Decimal(repr(bound))) - (shown < Decimal(repr(bound)))


@pytest.mark.parametrize("value, fmt, bound", [
    (0.99 + 1e-13, ".1%", 0.99),        # gave up after 10 more decimals: "99.0000000000%"
    (2.2e-16, "+.1%", 0.0),             # a round-off cost "above 0": "+0.0000000000%"
    (0.1230001, ".1%", 0.123),          # compared in binary: float("12.3") / 100 > 0.123, so "12.3%"
    (0.5 - 6e-15, ".0%", 0.5),
])
def test_beside_shows_the_decimals_that_put_a_number_on_its_side_of_the_bound(value, fmt, bound):
    """Audit 5 C2: B2's beside gave up after 10 more decimals and compared the printed number in binary."""
    text = verdicts.beside(value, fmt, bound)
    shown = Decimal(text.rstrip("%")) - Decimal(repr(bound)) * (100 if fmt.endswith("%") else 1)
    assert (shown > 0) - (shown < 0) == int(np.sign(value - bound)), text


def test_beside_also_takes_significant_digit_formats():
    """Audit 5 C2."""
    assert verdicts.beside(0.05032183876011786, ".2g", 0.05) == "0.0503"
    assert verdicts.beside(3.8e-06, ".2g", 0.05) == "3.8e-06"


@pytest.mark.parametrize("value, fmt, bound", [
    (0.09999999999999999, ".1%", 0.1),    # Python's "%" multiplies by 100 in binary: 10.0 exactly
    (0.9500000000000001, ".0%", 0.95),
    (0.049999999999999996, "+.1%", 0.05),
    (1e-50, ".1%", 0.0),                  # 40 more decimals cannot show it: "0.000...0%"
    (-1e-45, ".2f", 0.0),
])
def test_beside_puts_a_number_on_its_side_of_the_bound_in_a_short_text_whatever_binary_percent_gives(value, fmt, bound):
    """Audit 6 D1: beside after audit 5's fix, on percentages rounded in binary and on tiny values."""
    text = verdicts.beside(value, fmt, bound)
    assert printed_side(text, bound) == (value > bound) - (value < bound), text
    assert len(text) < 30, text


def test_beside_leaves_a_missing_bound_out():
    """Audit 6 D1."""
    assert verdicts.beside(0.5, ".1%", np.nan) == "50.0%"          # raised decimal.InvalidOperation
    assert verdicts.beside(0.3334, ".3g", 0.3, np.nan) == "0.333"


def test_beside_prints_a_missing_number_as_n_a_not_nan():
    """Audit 7 E1: beside printed NaN as "nan", in chapter 2's and chapter 4's claims too."""
    assert verdicts.beside(float("nan"), ".2f", 1.0) == "n/a"
    assert verdicts.beside(float("nan"), ".0%", 0.1) == "n/a"
    assert "nan" not in C2.claim_iterations_complexity({"iterations_ratio": float("nan")}).ours
    wce = paper_like_with({("WCE", "heloc", "vr"): np.nan})
    assert "nan" not in C4.claim_wce_least_robust(wce).ours


# --------------------------------------------------------------------------- chapters' own rules

def test_one_win_among_ties_does_not_make_a_hypothesis_hold():
    """Audit D8: a sign test over the decisive pairs decides, not the direction alone; below the 5 decisive
    pairs a test at 5% needs, the hypothesis is not run. (Audit 20b: the pairs carry ``both_valid``, as every
    `_paired` frame has since 788417f; without it this test raised KeyError.)"""
    ties = pd.DataFrame({"ours": [1.0] + [0.5] * 9, "base": [0.0] + [0.5] * 9, "both_valid": True})
    one = C6._better(ties, "06-h10-region-vs-stretched", minimum=3)
    assert one.verdict == NOT_RUN and "sign tests p = 0.5 for higher" in one.ours and "9 of the 10 factuals are ties" in one.why
    assert one.explanation == "Too little evidence: 1 of the 5 decisive factuals (ties left out) the rule needs were counted."
    three = pd.DataFrame({"ours": [1.0] * 3 + [0.5] * 2, "base": [0.0] * 3 + [0.5] * 2, "both_valid": True})
    assert C6._better(three, "06-h9-saa-radius", minimum=3).verdict == NOT_RUN      # p = 0.125 at best
    five = pd.DataFrame({"ours": [1.0] * 5, "base": [0.0] * 5, "both_valid": True})
    assert C6._better(five, "06-h9-saa-radius", minimum=3).verdict == REPRODUCED    # p = 0.031
    mixed = pd.DataFrame({"ours": [1.0] * 4 + [0.0] * 2, "base": [0.0] * 4 + [1.0] * 2, "both_valid": True})
    assert C6._better(mixed, "06-h9-saa-radius").verdict == UNDECIDED   # 4 of 6: p = 0.34, no loss either (audit 40 F1)
    # audit 41b J3: 4 wins and 1 loss with 6 measures missing, all won, would hold (p = 0.006): no reading
    unmeasured = pd.DataFrame({"ours": [1.0] * 4 + [0.0] + [np.nan] * 6, "base": [0.0] * 4 + [1.0] + [0.5] * 6,
                               "both_valid": True})
    assert C6._better(unmeasured, "06-h9-saa-radius").verdict == NOT_RUN
    assert C6._better(unmeasured.iloc[:6], "06-h9-saa-radius").verdict == UNDECIDED   # one missing cannot decide it
    # audit 41c K1: a region Algorithm 1 stopped before certifying its rho is no region-robust counterfactual
    stopped = five.assign(certified=[True] * 4 + [False])
    claim = C6._better(stopped, "06-h10-region-vs-stretched")
    assert claim.verdict == NOT_RUN and "1 of the 5 factuals left out: Algorithm 1 stopped" in claim.why
    lost = pd.DataFrame({"ours": [0.0] * 5, "base": [1.0] * 5, "both_valid": True})
    assert C6._better(lost, "06-h9-saa-radius").verdict == DIFFERS                  # p = 0.031 the other way
    assert C6.sign_test(5, 0) == pytest.approx(1 / 32) and C6.sign_test(0, 0) == 1.0


def test_chapter_4_claims_explain_a_vr_gap_most_methods_share_as_the_retraining_set_up_or_settings():
    rows = {ds: dict(methods) for ds, methods in GOOD.items()}
    table = table_of(rows)
    table.loc[table["method"] == "PROPLACE", "vr"] = 90.0
    table.loc[table["method"] == "MILP-R", "vr"] = 95.0    # the other methods below the paper's too (PROPLACE's
    table["paper vr"] = 100.0                              # own miss is no evidence: audit 49 ch4 F1)
    vr = next(c for c in C4.claims(table, pd.DataFrame(), n_retrained=20) if c.id == "04-vr-100")
    assert vr.verdict != REPRODUCED and "retraining set-up, or the methods' settings" in vr.explanation
    table["paper vr"] = 0.0  # no method below the paper's: nothing shared, a genuine finding
    vr = next(c for c in C4.claims(table, pd.DataFrame(), n_retrained=20) if c.id == "04-vr-100")
    assert vr.explanation.startswith("Genuine finding")


def test_a_declared_claim_carries_its_id_rule_and_explanation_into_the_results_and_the_table(tmp_path):
    book = verdicts.ClaimBook("09", pd.DataFrame([
        {"id": "09-ratio", "check": "f", "claim": "ratio above {x:g}", "paper": "≥ 2", "unit": "runs",
         "pairing": "per run", "decides": "every ratio > 2", "deviation": ""},
        {"id": "09-time", "check": "g", "claim": "fast", "paper": "1 s", "unit": "", "pairing": "none",
         "decides": "≤ 1 s", "deviation": "another machine"}]))
    few = book.claim("09-ratio", fields={"x": 2}, ours="3", holds=True, evidence=2, minimum=5)
    assert (few.id, few.claim, few.paper, few.verdict) == ("09-ratio", "ratio above 2", "≥ 2", NOT_RUN)
    assert few.rule == "at least 5 runs; per run; decides: every ratio > 2"
    assert few.explanation == "Too little evidence: 2 of the 5 runs the rule needs were counted."
    slow = book.claim("09-time", ours="3 s", holds=False)
    assert slow.explanation.startswith("Deviation from the paper's protocol: another machine")
    assert book.claim("09-time", ours="3 s", holds=False, deviation="").explanation.startswith("Genuine finding")
    reporting.save_chapter_results("09", [few, slow], {"scale": "book"}, folder=tmp_path)
    saved = reporting.read_chapter_results(tmp_path, "09")["claims"]
    assert [c["id"] for c in saved] == ["09-ratio", "09-time"] and saved[0]["rule"] == few.rule
    assert saved[0]["evidence"] == 2 and saved[0]["minimum"] == 5 and saved[1]["explanation"] == slow.explanation
    table = verdicts.verdict_table([few, slow])
    page, text = table._repr_html_(), table._repr_markdown_()
    assert ">09-ratio<" in page and "Rule: at least 5 runs" in page and f'id="{reporting.claim_anchor(few.claim)}"' in page
    assert "Why 2 of the 2 verdicts are not reproduced" in page and "another machine" in text.split("Why 2 of")[1]
    listed = verdicts.claims_by_scale({"book": tmp_path})
    assert list(listed["id"]) == ["09-ratio", "09-time"] and list(listed["book"]) == [NOT_RUN, DIFFERS]
    with pytest.raises(KeyError, match="not declared"):
        book.claim("09-nothing", ours="", holds=None)
    with pytest.raises(ValueError, match="ids must be unique"):
        verdicts.ClaimBook("09", pd.concat([book.table, book.table], ignore_index=True))


def test_a_number_is_printed_on_the_side_of_its_bounds_that_it_lies_on():
    from explainopt.verdicts import beside
    assert beside(0.99001, ".1%", 0.99) == "99.001%"       # a pass of "> 99%" does not read as 99.0%
    assert beside(0.98999, ".1%", 0.99) == "98.999%"
    assert beside(0.99, ".1%", 0.99) == "99.0%"             # on the bound itself
    assert beside(0.996, ".1%", 0.99) == "99.6%"            # far from it: the format as asked
    assert beside(0.2500001, "+.1%", 0.0, 0.25) == "+25.00001%"
    assert beside(0.4996, ".2f", 0.5) == "0.4996"


def test_a_claim_our_protocol_leaves_undecided_still_counts_its_evidence_once():
    """Audit 28 D6: once the count left the reason (32d3d9d), a claim not run through `undecided_by` (book
    03-convergence) said it nowhere; the deviation sentence now carries it."""
    book = C2.CLAIMS
    c = book.claim("02-l2-slower", ours="x", holds=True, evidence=2, minimum=3, undecided_by="our time cap")
    assert c.verdict == NOT_RUN and c.why == ""
    assert c.explanation == ("Deviation from the paper's protocol: our time cap, so the check cannot decide (2 of the 3 "
                             "matched configurations with unequal iterations the rule needs were counted).")
    enough = book.claim("02-l2-slower", ours="x", holds=None, evidence=3, minimum=3, undecided_by="our time cap")
    assert enough.explanation == "Deviation from the paper's protocol: our time cap, so the check cannot decide."


def test_a_declared_claim_reads_undecided_only_on_its_minimum_and_only_when_its_check_says_so():
    """Audit 41 H9: the ClaimBook path at the boundary (minimum 3), with the gates that decide below it."""
    book = C2.CLAIMS

    def made(**kw):
        return book.claim("02-l2-slower", ours="x", why="neither side is significant", minimum=3, **kw)

    assert made(holds=None, evidence=2, neither_way=True).verdict == NOT_RUN
    open_ = made(holds=None, evidence=3, neither_way=True)
    assert open_.verdict == UNDECIDED and open_.explanation == (
        "Undecided: the check reads its evidence neither way (3 counted, the rule's minimum 3; counted: matched "
        "configurations with unequal iterations): neither side is significant.")
    assert made(holds=None, evidence=3).verdict == NOT_RUN                     # a number missing, not a reading
    assert made(holds=False, evidence=2, failure_decides=True, neither_way=True).verdict == DIFFERS
    assert made(holds=True, evidence=2, pass_decides=True).verdict == REPRODUCED
    assert made(holds=True, evidence=2, failure_decides=True).verdict == NOT_RUN
    table = verdicts.verdict_table([open_])
    assert table.html.count("neither side is significant") == 2   # the row's explanation and the list under it


def test_the_verdict_table_does_not_repeat_a_reason_the_explanation_quotes():
    """Read on the built page (stop 38): a claim not run on its check's own reason (05-dominance, enough
    points but the pooled share still open) showed that reason twice, in bold and again below."""
    c = C2.CLAIMS.claim("02-l2-slower", ours="x", holds=None, evidence=5, minimum=3, why="the share is still open")
    assert c.explanation == "Too little evidence: the share is still open."
    table = verdicts.verdict_table([c])
    assert table.html.count("the share is still open") == 2   # the row's explanation and the list under the table
    assert "the share is still open; Rule" not in table.markdown
