"""Audit 5 (helper audit5, /work/notes/audit5.md): inputs on which a claim's verdict or its printed number
was wrong before this branch's fixes. Each test names the defect (C1-C10) it pins; every one of them failed on
/work/main at 1295238."""

from decimal import Decimal

import numpy as np
import pandas as pd
import pytest
import test_chapter_clemo as T3
import test_chapter_proplace as T4
import test_chapter_robust_regions as T2

from explainopt import verdicts
from explainopt.chapters import clemo as C3
from explainopt.chapters import proplace as C4
from explainopt.chapters import robust_ensembles as C5
from explainopt.chapters import robust_regions as C2
from explainopt.chapters import robustness_benchmark as C6
from explainopt.reporting import DIFFERS, NOT_RUN, PARTLY, REPRODUCED


def _reads(text: str) -> float:
    """The number a reader takes from a printed value ("99.0%", "+0.4%", "1.0x", "0.05")."""
    return float(text.strip().rstrip("%x")) / (100 if text.strip().endswith("%") else 1)


# --------------------------------------------------------------------------- C1: meets_targets (B1's fix)

def _curves(rows):
    return pd.DataFrame(rows, columns=["dataset", "label", "target", "high", "n"])


@pytest.mark.parametrize("high, n", [(np.nan, 100), (0.5, np.nan), (0.95, np.nan)])
def test_c1_a_rate_without_its_interval_or_its_count_is_not_a_met_target(high, n):
    # B1's fix returned True here (the old `every` over the gaps gave None on a NaN interval, and False on a
    # miss whose n is NaN): a rate nobody can judge reads "meets every target"
    assert C5.meets_targets(_curves([("A", "Direct-SAA", 0.9, high, n)]), dataset="A") is None


def test_c1_datasets_without_intervals_do_not_reproduce_the_direct_saa_claim():
    curves = _curves([("COMPAS", "Direct-SAA", 0.9, np.nan, 100), ("Adult", "Direct-SAA", 0.9, np.nan, 100),
                      ("Spambase", "Direct-SAA", 0.9, 0.5, 100)])
    assert C5.claim_direct_saa_targets(curves, datasets=["COMPAS", "Adult", "Spambase"]).verdict == NOT_RUN


def test_c1_a_judged_miss_still_decides_beside_an_unjudged_rate():
    curves = _curves([("A", "Direct-SAA", 0.9, 0.5, 100), ("A", "Direct-SAA", 0.95, np.nan, 100)])
    assert C5.meets_targets(curves, dataset="A") is False


# --------------------------------------------------------------------------- C2: verdicts.beside (B2's fix)

@pytest.mark.parametrize("value, fmt, bound", [
    (0.99 + 1e-13, ".1%", 0.99),        # gave up after 10 more decimals: "99.0000000000%"
    (2.2e-16, "+.1%", 0.0),             # a round-off cost "above 0": "+0.0000000000%"
    (0.1230001, ".1%", 0.123),          # compared in binary: float("12.3") / 100 > 0.123, so "12.3%"
    (0.5 - 6e-15, ".0%", 0.5),
])
def test_c2_beside_prints_a_number_on_the_side_of_its_bound_it_lies_on(value, fmt, bound):
    text = verdicts.beside(value, fmt, bound)
    shown = Decimal(text.rstrip("%")) - Decimal(repr(bound)) * (100 if fmt.endswith("%") else 1)
    assert (shown > 0) - (shown < 0) == int(np.sign(value - bound)), text


def test_c2_beside_also_takes_significant_digit_formats():
    assert verdicts.beside(0.05032183876011786, ".2g", 0.05) == "0.0503"
    assert verdicts.beside(3.8e-06, ".2g", 0.05) == "3.8e-06"


# --------------------------------------------------------------------------- C3: chapter 2's Table 3 rates

@pytest.mark.parametrize("k, n", [(9, 46), (8, 41)])
def test_c3_a_baseline_rate_below_20_percent_does_not_print_as_20(k, n):
    c = C2.claim_baseline_not_robust(T2._baselines([False] * k + [True] * (n - k), [True] * n, [True] * n))
    assert c.verdict == DIFFERS and not c.ours.startswith("20%")


def test_c3_one_invalid_counterfactual_in_250_does_not_print_as_0_percent():
    c = C2.claim_baseline_invalid(T2._baselines([True] * 250, [False] + [True] * 249, [True] * 250))
    assert c.verdict == REPRODUCED and not c.ours.startswith("0%")


def test_c3_ours_robust_below_80_percent_does_not_print_as_80():
    c = C2.claim_ours_robust(T2._baselines([True] * 250, [True] * 250, [True] * 199 + [False] * 51))
    assert c.verdict == DIFFERS and not c.ours.startswith("80%")


# --------------------------------------------------------------------------- C4: chapter 5's benchmark time

@pytest.mark.parametrize("ratio, verdict", [(1.04, REPRODUCED), (0.96, DIFFERS)])
def test_c4_a_time_ratio_is_printed_on_its_side_of_1(ratio, verdict):
    c = C5.claim_benchmark_time(pd.DataFrame({"ratio": pd.Series({"COMPAS": ratio}, dtype=float), "capped": ""}))
    assert c.verdict == verdict and c.ours != "COMPAS 1.0x"


# --------------------------------------------------------------------------- C5, C6: chapter 6's hypotheses

def _row(method, i, col, value, model="forest", param=None, dataset="toy"):
    return {**dict(dataset=dataset, factual=i, model=model, method=method, param=param, recommended=True, valid=True,
                   status="converged", excess_distance=np.nan, tol=1e-4), col: value}


def _pairs(ours, base, col="retrained"):
    return pd.DataFrame([_row(C6.NEAREST, i, col, b) for i, b in enumerate(base)]
                        + [_row(C6.REGION, i, col, o, param=C6.RHO) for i, o in enumerate(ours)])


def test_c5_a_sign_test_p_above_5_percent_does_not_print_as_0_05():
    c = C6.h6_region_retrained_forest(_pairs([0.9] * 44 + [0.1] * 29, [0.1] * 44 + [0.9] * 29))
    assert c.verdict == DIFFERS and "p = 0.05)" not in c.ours


def test_c5_a_higher_mean_does_not_print_as_an_equal_one():
    c = C6.h6_region_retrained_forest(_pairs([0.3334] * 6, [0.3331] * 6))
    assert c.verdict == REPRODUCED and "mean 0.333 vs 0.333" not in c.ours


def _excess(method, values, start=0):
    return [_row(method, start + i, "excess_distance", v, model="network") for i, v in enumerate(values)]


def test_c6_h1_does_not_count_the_nearest_counterfactual_against_itself():
    only_nearest = pd.DataFrame(_excess(C6.NEAREST, [0.0, 0.0, 0.0]))
    assert C6.h1_nearest_closest(only_nearest).verdict == NOT_RUN        # no other method was compared
    with_others = pd.DataFrame(_excess(C6.NEAREST, [0.0] * 3) + _excess(C6.PROPLACE, [0.1, 0.2, 0.3]))
    c = C6.h1_nearest_closest(with_others)
    assert c.verdict == REPRODUCED and c.evidence == 3 and "smallest excess distance 0.1 over 3" in c.ours


def test_c6_one_counterexample_decides_a_hypothesis_on_every_counterfactual():
    df = pd.DataFrame(_excess(C6.NEAREST, [0.0]) + _excess(C6.PROPLACE, [-0.5], start=1))
    assert C6.h1_nearest_closest(df).verdict == DIFFERS


# --------------------------------------------------------------------------- C7, C8: chapter 4

def _paper_like(changes=None):
    table = T4.paper_like()
    for (method, dataset, column), value in (changes or {}).items():
        table.loc[(table["method"] == method) & ((table["dataset"] == dataset) if dataset else True), column] = value
    return table


def test_c7_a_data_set_counts_once_when_a_baseline_and_its_stand_in_both_ran():
    table = _paper_like({("ROAR", "give_me_some_credit", "vΔ"): 0.0, ("ROAR", "heloc", "vΔ"): 0.0})
    style = table[table["method"] == "ROAR"].assign(method="ROAR-style")
    c = C4.claim_baselines_robust(pd.concat([table, style], ignore_index=True))
    assert c.verdict == DIFFERS and "ROAR 2" in c.ours


def test_c8_a_missing_proto_r_number_elsewhere_does_not_decide_the_adult_claim():
    c = C4.claim_proto_r_adult(_paper_like({("Proto-R", "heloc", "vΔ"): np.nan}))
    assert c.verdict in (REPRODUCED, PARTLY)


def test_c8_proto_r_numbers_print_on_the_side_of_the_claims_bounds():
    below_100 = C4.claim_proto_r_adult(_paper_like({("Proto-R", None, "vΔ"): 100.0, ("Proto-R", "adult", "vΔ"): 99.6}))
    assert below_100.verdict == REPRODUCED and "adult: 100" not in below_100.ours
    below_heloc = C4.claim_proto_r_adult(_paper_like({("Proto-R", "adult", "vΔ"): 55.3, ("Proto-R", "heloc", "vΔ"): 55.4}))
    assert below_heloc.verdict == REPRODUCED and "heloc: 55.4" in below_heloc.ours    # not "55" as adult's


# --------------------------------------------------------------------------- C9: chapter 3's SPP local accuracy

def _spp(f=None, theta=None):
    result = T3.spp_result()
    curves = dict(result["curves"])
    if f is not None:
        curves["CLEMO (SLSQP)"] = (f, curves["CLEMO (SLSQP)"][1])
    if theta is not None:
        curves["theta"] = theta
    return {**result, "curves": curves}


def test_c9_an_objective_error_above_10_percent_does_not_print_as_10_0():
    true_f = T3.spp_result()["curves"]["true_f"]
    c = C3.spp_local_claim(_spp(f=true_f * 1.1004))
    assert c.verdict == DIFFERS and "within 10.0%" not in c.ours


def test_c9_a_missing_prediction_leaves_local_accuracy_not_run():
    f = T3.spp_result()["curves"]["true_f"].astype(float).copy()
    f[4] = np.nan
    assert C3.spp_local_claim(_spp(f=f)).verdict == NOT_RUN


def test_c9_no_theta_within_the_radius_is_not_run_not_an_error():
    assert C3.spp_local_claim(_spp(theta=np.linspace(0.5, 1, 9))).verdict == NOT_RUN
