"""Audit 7 (helper audit7, /work/notes/audit7.md): a sweep of every claim of every chapter for three classes of
defect: a number printed on the wrong side of its rule's bound, or NaN printed as "nan" (P); a claim over several
items that reads *not run* although a present item already fails (A); a missing number read as a failure or a
pass (N). Each test names the defect (E1-E9) it pins; every one of them failed on /work/main at ea42172."""

from decimal import Decimal

import numpy as np
import pandas as pd
import test_audit5 as A5
import test_chapter_clemo as T3

from explainopt import reporting, verdicts
from explainopt.chapters import clemo as C3
from explainopt.chapters import optimizing_explanations as C1
from explainopt.chapters import proplace as C4
from explainopt.chapters import robust_ensembles as C5
from explainopt.chapters import robust_regions as C2
from explainopt.reporting import DIFFERS, NOT_RUN, PARTLY, REPRODUCED

KINDS = C3.KNAPSACK_TYPES


def _side(text: str, bound: float) -> int:
    """The side of `bound` on which a printed number ("10.0%", "−0.50", "2.0x") reads."""
    text = text.strip().replace("−", "-").rstrip("x%")
    shown = Decimal(text)
    return (shown > Decimal(repr(bound))) - (shown < Decimal(repr(bound)))


# --------------------------------------------------------------------------- E1: beside prints NaN as "nan"

def test_e1_beside_prints_a_missing_number_as_n_a_not_nan():
    assert verdicts.beside(float("nan"), ".2f", 1.0) == "n/a"
    assert verdicts.beside(float("nan"), ".0%", 0.1) == "n/a"
    assert "nan" not in C2.claim_iterations_complexity({"iterations_ratio": float("nan")}).ours
    wce = A5._paper_like({("WCE", "heloc", "vr"): np.nan})
    assert "nan" not in C4.claim_wce_least_robust(wce).ours


# --------------------------------------------------------------------------- E2: one present failure decides "every"

def test_e2_every_is_decided_by_a_present_failure_whatever_another_value_lacks():
    assert reporting.every([5.0, np.nan], lambda v: v < 3) is False
    assert reporting.every([1.0, np.nan], lambda v: v < 3) is None


def _strict(D, functions, values):
    return pd.DataFrame({"D": D, "pointwise": False, "function": functions, "u": 0.5, "all three": values})


def test_e2_one_cell_at_or_above_0_5_decides_the_low_agreement_claim_beside_a_missing_cell():
    strict = _strict([4, 4], ["x^3", "sin x^3"], [0.7, np.nan])
    assert C1.claim_low_agreement_in_4d(strict).verdict == DIFFERS


def test_e2_one_plausibility_benchmark_faster_than_naive_decides_beside_a_missing_ratio():
    assert C5.claim_benchmark_time(pd.DataFrame({"ratio": pd.Series({"COMPAS": 0.5, "Adult": np.nan}, dtype=float), "capped": ""})).verdict == DIFFERS


# --------------------------------------------------------------------------- E3: chapter 1 printing

def test_e3_a_mean_agreement_below_0_8_does_not_print_as_0_800():
    c = C1.claim_high_agreement_in_2d(_strict([2, 2], ["x^3", "sin x^3"], [0.79992, 0.8]))
    assert c.verdict == DIFFERS
    assert _side(c.ours.split(",")[0].removeprefix("mean "), 0.8) == -1


def test_e3_an_agreement_below_0_5_does_not_print_as_0_500():
    c = C1.claim_low_agreement_in_4d(_strict([4, 4], ["x^3", "sin x^3"], [0.4999, 0.3]))
    assert c.verdict == REPRODUCED and "0.500" not in c.ours


def test_e3_a_strictly_lower_mean_does_not_print_equal_to_the_previous_ones():
    strict = _strict([2, 3, 4], ["x^3"] * 3, [0.8004, 0.8001, 0.5])
    c = C1.claim_agreement_decreases(strict)
    shown = [part.split(": ")[1] for part in c.ours.split(", ")]
    assert c.verdict == REPRODUCED and shown[0] != shown[1]


def test_e3_a_rank_correlation_above_minus_0_5_does_not_print_as_minus_0_50(monkeypatch):
    monkeypatch.setattr(C1, "rank_correlation", lambda *args, **kwargs: -0.496)
    table = pd.DataFrame({"agreement": [0.2, 0.4, 0.6, 0.8]}, index=["a", "b", "c", "d"])
    c = C1.claim_rough_functions_disagree(table)
    assert c.verdict == PARTLY
    assert _side(c.ours.split(" over")[0].removeprefix("ρ = "), C1.ROUGH_RHO) == 1


# --------------------------------------------------------------------------- E4: chapter 2

def test_e4_a_model_size_ratio_above_the_features_ratio_does_not_print_equal_to_it():
    c = C2.claim_complexity({"complexity_ratio": 2.04, "features_ratio": 1.96})
    assert c.verdict == REPRODUCED and "2.0 (model size) vs 2.0 (features)" not in c.ours
    assert "nan" not in C2.claim_complexity({"complexity_ratio": np.nan, "features_ratio": 1.0}).ours


def _leaf(exact, heuristic):
    return pd.DataFrame({"farther": [True], "closer": [False], "exact_time": [exact], "heuristic_time": [heuristic]})


def test_e4_a_faster_heuristic_does_not_print_as_fast_as_algorithm_1():
    c = C2.claim_single_leaf(_leaf(0.0124, 0.0123))
    assert c.verdict == REPRODUCED and "0.012 s vs 0.012 s" not in c.ours


def test_e4_a_missing_time_leaves_the_single_leaf_claim_undecided_not_failed():
    assert C2.claim_single_leaf(_leaf(np.nan, 0.01)).verdict == NOT_RUN


# --------------------------------------------------------------------------- E5: chapter 3 printing

def test_e5_spp_and_cvrp_numbers_print_on_their_side_of_the_rules_bounds():
    objective = C3.spp_claim(T3.rows((30, 900, 200, 90), (30, 930, 100.004, 58)))   # > half of LR's 200
    assert objective.verdict == DIFFERS and "→ 100.00," not in objective.ours
    accuracy = C3.spp_claim(T3.rows((30, 900, 200, 90), (30, 993.3, 6, 58)))          # 1023.3 > 1.1 × 930
    assert accuracy.verdict == DIFFERS and not accuracy.ours.endswith("→ 1023")
    feasibility = C3.spp_claim(T3.rows((30, 900, 200, 90), (30, 930, 6, 89.996)))     # below LR's 90
    assert feasibility.verdict == REPRODUCED and "90.00 → 90.00" not in feasibility.ours
    cvrp = C3.cvrp_claim(T3.rows((1.5, 365, 3.7, 235), (1.5, 340, 3.2, 235.496)), n_samples=1000, solution_limit=1000)
    assert cvrp.verdict == REPRODUCED and "238.70 → 238.70" not in cvrp.ours


def test_e5_stability_values_outside_the_bound_print_outside_it():
    fsi = T3.judge(C3.knapsack_stability_claim, *T3.frames(fsi=(3.0, 3.504)))
    assert fsi.verdict == DIFFERS and "FSI gap 0.50," not in fsi.why + "," and "3.50 vs 3.00" not in fsi.ours
    std = T3.judge(C3.knapsack_std_claim, *T3.frames(nstd=(1.0, 1.5004)))
    assert std.verdict == DIFFERS and not std.ours.split(" over")[0].endswith("to 1.50") and "ratio 1.500," not in std.why + ","


def test_e5_a_sigma_ratio_above_2_does_not_print_as_2_00():
    table = T3._sigma_table([C3.DTR, C3.LR, C3.CONVEX], 10)
    c = C3.knapsack_sigma_claim(table.assign(accuracy_std=table["accuracy_std"] * 2.004))
    assert c.verdict == DIFFERS and c.ours != "ratio to the paper's 2.00"


def test_e5_an_slsqp_loss_above_1_percent_does_not_print_as_1_percent():
    slsqp = T3.knapsack_runs(method=C3.SLSQP, loss=(None, 4.0402))
    convex = T3.knapsack_runs(method=C3.CONVEX, loss=(None, 4.0))
    c = C3.slsqp_optimum_claim(pd.concat([slsqp, convex[convex["method"] == C3.CONVEX]]))
    assert c.verdict == DIFFERS and not c.ours.startswith("1% ")


def _table3(sizes, **columns):
    frame = pd.DataFrame({"SLSQP (s)": 10.0, "LR (s)": 0.01, "DTR (s)": 0.1, "SLSQP status": "converged",
                          "convex (s)": 1.0, "convex loss": 1.0, "SLSQP loss": 1.0}, index=pd.Index(sizes, name="#items"))
    for column, values in columns.items():
        frame[column] = values
    return frame


def test_e5_runtime_numbers_print_on_their_side_of_the_bounds():
    ratio = C3.runtime_ratio_claim(_table3([5, 10, 20, 40], **{"SLSQP (s)": [1.004, 10, 10, 10]}))
    assert ratio.verdict == REPRODUCED and not ratio.ours.startswith("100x")
    times = C3.benchmark_times_claim(_table3([5, 10, 20, 40], **{"DTR (s)": [0.996, 0.1, 0.1, 0.1]}))
    assert times.verdict == REPRODUCED and "to 1 s" not in times.ours
    absolute = C3.runtime_absolute_claim(_table3([5, 10], **{"SLSQP (s)": [3.004 * 8.54, 50.0]}))
    assert absolute.verdict == DIFFERS and "to 3 times" not in absolute.why
    fast = C3.convex_claim(_table3([40], **{"convex (s)": [2.004]}))
    assert fast.verdict == DIFFERS and not fast.ours.startswith("2.00 s")
    loss = C3.convex_claim(_table3([40], **{"convex loss": [1.00004]}))
    assert loss.verdict == DIFFERS and "loss 1.0000 vs SLSQP 1.0000" not in loss.ours


def _vrp(c02):
    features = ["c0,2", "c0,8", "c1,2"]
    return {"features": features, "components": ["x(2,0)"], "time_capped": 0, "chunks": 1,
            "contributions": {"CLEMO (SLSQP)": [np.array([c02, 0.5, 0.4996])]}}


def test_e5_a_negative_figure9_contribution_does_not_print_as_zero():
    c = C3.figure9_claim(_vrp(-0.0004), n_chunks=1)
    assert c.verdict == REPRODUCED and "-0.000," not in c.ours and "+0.000," not in c.ours


# --------------------------------------------------------------------------- E6: chapter 3, a failed size decides

def test_e6_one_size_that_fails_decides_the_runtime_claims_whatever_the_others_lack():
    assert C3.runtime_ratio_claim(_table3([5], **{"SLSQP (s)": [0.5]})).verdict == DIFFERS
    assert C3.benchmark_times_claim(_table3([5], **{"DTR (s)": [2.0]})).verdict == DIFFERS
    assert C3.runtime_absolute_claim(_table3([5], **{"SLSQP (s)": [100.0]})).verdict == DIFFERS
    # a size that holds beside missing ones still decides nothing
    assert C3.runtime_ratio_claim(_table3([5])).verdict == NOT_RUN


def test_e6_one_fit_that_fails_on_ten_instances_decides_sigma_whatever_another_lacks():
    table = T3._sigma_table([C3.DTR, C3.LR, C3.CONVEX], 10)
    table.loc[(KINDS[0], C3.DTR), "instances"] = 2
    failing = table.copy()
    failing.loc[failing.index.get_level_values("method") == C3.LR, "accuracy_std"] = 0.0001
    assert C3.knapsack_sigma_claim(failing).verdict == DIFFERS
    assert C3.knapsack_sigma_claim(table).verdict == NOT_RUN
    few = table.copy()                                 # a failure on 2 instances decides nothing
    few.loc[(KINDS[0], C3.DTR), "accuracy_std"] = 0.0001
    assert C3.knapsack_sigma_claim(few).verdict == NOT_RUN


# --------------------------------------------------------------------------- E7: chapter 3, a missing contribution

def test_e7_a_missing_figure9_contribution_is_undecided_not_failed():
    assert C3.figure9_claim(_vrp(np.nan), n_chunks=1).verdict == NOT_RUN


# --------------------------------------------------------------------------- E8: chapter 5

def test_e8_a_dominated_share_below_90_percent_does_not_print_as_90(monkeypatch):
    monkeypatch.setattr(C5, "dominated_share", lambda points: 43 / 48)
    points = pd.DataFrame({"label": ["1-LOF"], "n": [100]})
    c = C5.claim_dominance(points)
    assert c.verdict == DIFFERS and not c.ours.startswith("90%")


def test_e8_chapter_5_numbers_print_on_their_side_of_the_bounds():
    solve = C5.claim_solve_time(pd.DataFrame({"ratio": [2.004], "solved": [50]}))
    assert solve.verdict == DIFFERS and "2.00-2.00x" not in solve.ours
    large = C5.claim_large_forests(pd.DataFrame({"dataset": ["Spambase"], "ours [%]": [24.6], "n": [50]}))
    assert large.verdict == REPRODUCED and large.ours != "Spambase 25%"
    importance = C5.claim_importance(pd.Series({"Adult": 0.5004}), counterfactuals=pd.Series({"Adult": 20}))
    assert importance.verdict == REPRODUCED and importance.ours != "Adult 0.50"


def _curves(adult, credit):
    return pd.DataFrame({"dataset": ["Adult", "Credit-Card-Default"], "label": "Direct-SAA",
                         "n_changed": [adult, credit], "n": [10, 10]})


def test_e8_a_sparser_adult_does_not_print_equal_to_credit_card_default():
    c = C5.claim_sparse_adult(_curves(1.96, 2.04))
    assert c.verdict == REPRODUCED and "Adult 2.0, Credit-Card-Default 2.0" not in c.ours


def test_e8_a_missing_number_of_changed_features_is_undecided_not_zero():
    assert C5.claim_sparse_adult(_curves(np.nan, 2.04)).verdict == NOT_RUN


# --------------------------------------------------------------------------- E9: chapter 4, a missing vr is not "not robust"

def test_e9_a_missing_baseline_number_leaves_its_robustness_undecided_not_failed():
    robust = {m: C4.robust_datasets(A5._paper_like(), m) for m in C4.ROBUST_BASELINES}
    table = A5._paper_like({("RobX", robust["RobX"][0], "vr"): np.nan})
    assert C4.claim_baselines_robust(A5._paper_like()).verdict != DIFFERS
    assert C4.claim_baselines_robust(table).verdict == NOT_RUN
    # a present number below the threshold still decides
    failing = A5._paper_like({("RobX", robust["RobX"][0], "vr"): 10.0, ("RobX", robust["RobX"][1], "vr"): np.nan})
    assert C4.claim_baselines_robust(failing).verdict == DIFFERS
