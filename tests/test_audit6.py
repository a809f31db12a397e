"""Audit 6 (helper audit6, /work/notes/audit6.md): inputs on which a claim's verdict or its printed number was
wrong after audit 5's fixes. Each test names the defect (D1-D9) it pins; every one of them failed on /work/main
at 97d3ed4."""

from decimal import Decimal

import numpy as np
import pandas as pd
import pytest
import test_audit5 as A5
import test_chapter_clemo as T3

from explainopt import verdicts
from explainopt.chapters import clemo as C3
from explainopt.chapters import optimizing_explanations as C1
from explainopt.chapters import proplace as C4
from explainopt.chapters import robust_ensembles as C5
from explainopt.chapters import robust_regions as C2
from explainopt.counterfactuals.ensembles import binomial_interval
from explainopt.reporting import DIFFERS, NOT_RUN, PARTLY, REPRODUCED


def _side(text: str, bound: float) -> int:
    """The side of `bound` on which a printed number ("10.0%", "1.0e-04", "99.9") reads."""
    shown = Decimal(text.strip().rstrip("%")) / (100 if text.strip().endswith("%") else 1)
    return (shown > Decimal(repr(bound))) - (shown < Decimal(repr(bound)))


def _paper_like(changes=None):
    table = A5._paper_like()
    table[["vr", "vΔ"]] = table[["vr", "vΔ"]].astype(float)
    for (method, dataset, column), value in (changes or {}).items():
        table.loc[(table["method"] == method) & ((table["dataset"] == dataset) if dataset else True), column] = value
    return table


# --------------------------------------------------------------------------- D1: verdicts.beside

@pytest.mark.parametrize("value, fmt, bound", [
    (0.09999999999999999, ".1%", 0.1),    # Python's "%" multiplies by 100 in binary: 10.0 exactly
    (0.9500000000000001, ".0%", 0.95),
    (0.049999999999999996, "+.1%", 0.05),
    (1e-50, ".1%", 0.0),                  # 40 more decimals cannot show it: "0.000...0%"
    (-1e-45, ".2f", 0.0),
])
def test_d1_beside_prints_a_number_on_the_side_of_its_bound_it_lies_on(value, fmt, bound):
    text = verdicts.beside(value, fmt, bound)
    assert _side(text, bound) == (value > bound) - (value < bound), text
    assert len(text) < 30, text


def test_d1_beside_leaves_a_missing_bound_out():
    assert verdicts.beside(0.5, ".1%", np.nan) == "50.0%"          # raised decimal.InvalidOperation
    assert verdicts.beside(0.3334, ".3g", 0.3, np.nan) == "0.333"


# --------------------------------------------------------------------------- D2: 04-proto-r-adult

def test_d2_a_missing_proto_r_number_on_adult_reads_not_run_not_an_error():
    assert C4.claim_proto_r_adult(_paper_like({("Proto-R", "adult", "vΔ"): np.nan})).verdict == NOT_RUN


# --------------------------------------------------------------------------- D3: 04-vdelta-100, 04-vr-100

def test_d3_one_data_set_below_100_decides_vdelta_whatever_another_lacks():
    table = _paper_like({("PROPLACE", "adult", "vΔ"): np.nan, ("PROPLACE", "heloc", "vΔ"): 60.0}).assign(found=100.0)
    assert C4.claim_delta_validity(table).verdict == DIFFERS
    table = _paper_like({("PROPLACE", "adult", "vr"): np.nan, ("PROPLACE", "heloc", "vr"): 60.0})
    assert C4.claim_retrained_validity(table, n_retrained=20).verdict == DIFFERS


def test_d3_a_rate_below_99_9_does_not_print_as_100():
    c = C4.claim_delta_validity(_paper_like({("PROPLACE", "adult", "vΔ"): 99.6}).assign(found=100.0))
    assert c.verdict == DIFFERS and "adult: 100" not in c.ours
    c = C4.claim_retrained_validity(_paper_like({("PROPLACE", "adult", "vr"): 99.86}), n_retrained=20)
    assert c.verdict == DIFFERS and "adult: 99.9," not in c.ours


# --------------------------------------------------------------------------- D4: 04-rbr-l1-not-robust, 04-wce-least-robust

OTHERS = ["WCE", "RobX", "ROAR", "Proto-R", "MILP-R", "PROPLACE"]


def test_d4_rbr_is_not_lowest_where_no_other_method_has_an_l1():
    c = C4.claim_rbr(_paper_like({(m, None, "l1"): np.nan for m in OTHERS}))
    assert c.verdict == NOT_RUN and "lowest l1 on 0 of 4" in c.ours          # was "4 of 4", reproduced
    assert C4.lowest_datasets(C4.ours(_paper_like()), "RBR", "l1") == ["give_me_some_credit", "heloc"]


def test_d4_wce_is_not_least_robust_where_no_other_method_has_a_vr():
    c = C4.claim_wce_least_robust(_paper_like({(m, None, "vr"): np.nan for m in OTHERS if m != "WCE"} | {("RBR", None, "vr"): np.nan}))
    assert c.verdict == NOT_RUN


def test_d4_rbr_vdelta_below_80_does_not_print_as_80():
    c = C4.claim_rbr(_paper_like({("RBR", "compas", "vΔ"): 79.6}))
    assert "compas: 80" not in c.ours


# --------------------------------------------------------------------------- D5: 05-spambase-naive

def _spambase(k, n):
    return pd.DataFrame([{"dataset": "Spambase", "n": n, "ours [%]": 100 * k / n}])


def test_d5_a_naive_rate_below_20_percent_does_not_print_as_20():
    c = C5.claim_spambase_naive(_spambase(10, 51))                        # 19.6%
    assert c.verdict == REPRODUCED and not c.ours.startswith("20%")


def test_d5_an_interval_reaching_below_20_percent_does_not_print_from_20():
    assert 19.5 <= 100 * binomial_interval(7, 16).low < 20
    c = C5.claim_spambase_naive(_spambase(7, 16))
    assert c.verdict == PARTLY and "interval 20-" not in c.ours


# --------------------------------------------------------------------------- D6, D7: 02-times, 02-iterations-complexity

def _frame(early, n):
    return pd.DataFrame({"early_stop": [True] * early + [False] * (n - early), "solver": ["highs"] * n})


@pytest.mark.parametrize("ratios, early, n, hidden", [([0.5], 11, 108, " 10% of"), ([3.004], 0, 10, "ratio ours/paper 3.00 ")])
def test_d6_times_print_on_their_side_of_the_bounds(ratios, early, n, hidden):
    c = C2.claim_times([pd.DataFrame({"ratio": ratios})], _frame(early, n), time_limit=1000)  # audit 8's F4
    assert c.verdict == DIFFERS and hidden not in c.ours


def test_d7_an_iterations_ratio_above_1_does_not_print_as_1_00():
    c = C2.claim_iterations_complexity({"iterations_ratio": 1.004})
    assert c.verdict == REPRODUCED and "1.00 " not in c.ours


# --------------------------------------------------------------------------- D8: 01-on-constraint

def _solved(ratios):
    return pd.DataFrame({"pointwise": False, "status": "optimal", "L_faithful / eta": ratios})


def test_d8_a_deviation_above_the_tolerance_does_not_print_as_it():
    c = C1.claim_on_constraint(_solved([1.0, 1 + 1.04e-4]))
    assert c.verdict == DIFFERS and "1.0e-04" not in c.ours


def test_d8_one_problem_off_the_constraint_decides_whatever_another_lacks():
    c = C1.claim_on_constraint(_solved([np.nan, 1.5]))
    assert c.verdict == DIFFERS and "missing for 1" in c.why


# --------------------------------------------------------------------------- D9: 03-convergence

def test_d9_a_missing_optimum_leaves_a_size_undecided_not_failed():
    run = T3.run_history(T3.FAST, n_items=5)
    run["convex_loss"] = np.nan
    assert C3.early_convergence(run) is None
    runs = [run] + [T3.run_history(T3.FAST, n_items=n) for n in (10, 20, 40)]
    c = C3.convergence_claim(runs)
    assert c.verdict == NOT_RUN and "no global optimum" in c.why and "time cap" not in c.why


def test_d9_a_missing_loss_does_not_hide_a_later_one_within_1_percent():
    assert C3.early_convergence(T3.run_history([np.nan] + T3.FAST[1:])) is True
