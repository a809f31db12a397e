"""Every declared claim of every chapter on a declared fixture: it holds on one input (*reproduced*), its
perturbation changes the verdict (*differs*, or *partly* where the rule reads so), and it is *not run* on no
data. A claim missing here is a check nobody has shown can fail: the coverage test names it.

The fixtures reuse each chapter test module's builders of that chapter's tables."""

import math

import pandas as pd
import pytest
import test_chapter_clemo as T3
import test_chapter_optimizing_explanations as T1
import test_chapter_proplace as T4
import test_chapter_robust_ensembles as T5
import test_chapter_robust_regions as T2
from test_claims import CHAPTERS, _book

from explainopt.chapters import clemo as C3
from explainopt.chapters import optimizing_explanations as C1
from explainopt.chapters import proplace as C4
from explainopt.chapters import robust_ensembles as C5
from explainopt.chapters import robust_regions as C2
from explainopt.chapters import robustness_benchmark as C6
from explainopt.reporting import DIFFERS, NOT_RUN, PARTLY, REPRODUCED

EMPTY = pd.DataFrame()


def cases(check, holds, fails, none):
    """A claim's three cases: `check` applied to the argument tuples (a single argument needs no tuple)."""
    def as_args(x):
        return x if isinstance(x, tuple) else (x,)
    return {"holds": lambda: check(*as_args(holds)), "fails": lambda: check(*as_args(fails)),
            "none": lambda: check(*as_args(none))}


# --------------------------------------------------------------------------- chapter 1

LOW_4D = {(4, "x^3", 5): 0.4, (4, "sin x^3", 5): 0.45, (4, "x^2", 5): 0.9}
FALLS = {(2, "x^2", 2): 0.8, (3, "x^2", 3): 0.6, (4, "x^2", 5): 0.4}
TIES = pd.DataFrame({"D": [2, 4], "function": ["x^2", "x^2"], "∇f tied share": [0.2, 0.9],
                     "chance agreement": [0.9, 0.4], "tie-aware agreement": [0.96, 0.9]})


def _rough(values):
    return C1.roughness_vs_agreement(T1.by_function(values)) if values else EMPTY


CH1 = {
    "01-on-constraint": cases(C1.claim_on_constraint, T1.solved_table([1.0, 1 + 1e-6]), T1.solved_table([1.0, 1.01]),
                              EMPTY),
    "01-agreement-d2": cases(C1.claim_high_agreement_in_2d, T1.agreement({(2, "x^2", 2): 0.9, (2, "x^2", 3): 0.8}),
                             T1.agreement({(2, "x^2", 2): 0.7}), EMPTY),
    "01-agreement-d4": cases(C1.claim_low_agreement_in_4d, T1.agreement(LOW_4D),
                             T1.agreement({**LOW_4D, (4, "x^3", 10): 0.6}), EMPTY),
    "01-decreasing": cases(C1.claim_agreement_decreases, T1.agreement(FALLS),
                           T1.agreement({**FALLS, (4, "x^2", 5): 0.7}), EMPTY),
    "01-rough-functions": cases(C1.claim_rough_functions_disagree, _rough(T1.ROUGHEST_LEAST),
                                _rough({f: 1 - a for f, a in T1.ROUGHEST_LEAST.items()}), EMPTY),
    "01-figure2": cases(C1.claim_figure2, T1.profile_row(0.4, 0.5), T1.profile_row(0.05, 0.65), EMPTY),
    "01-tie-aware-decreasing": cases(C1.claim_tie_aware_decreases,
                                     (T1.agreement({(2, "x^2", 2): 0.99, (3, "x^2", 3): 0.95, (4, "x^2", 5): 0.9}), TIES),
                                     (T1.agreement({(2, "x^2", 2): 0.96, (3, "x^2", 3): 0.95, (4, "x^2", 5): 0.99}), TIES),
                                     (EMPTY, EMPTY)),
}

# --------------------------------------------------------------------------- chapter 2

N2 = C2.MIN_TABLE3
_CONVERGED = T2._frame(T2._row(), T2._row(index=1))


_SHARE_KEYS = {"claim_l2_slower": lambda v: {"l2_slower": v, "l2_pairs": 10},
               "claim_small_rho_faster": lambda v: {"small_rho_faster": v, "rho_pairs": 10}}


def _share_claim(name):
    return cases(lambda v: getattr(C2, name)(_SHARE_KEYS[name](v)), 0.9, 0.1, math.nan)


CH2 = {
    "02-regions-certified": cases(C2.claim_regions_certified,
                                  T2._frame(T2._row(), T2._row(index=1, status="time_limit", rho_bar=0.02)),
                                  T2._frame(T2._row(), T2._row(index=1, certified=False)), EMPTY),
    "02-complexity": cases(C2.claim_complexity, {"complexity_ratio": 3.0, "features_ratio": 0.8},
                           {"complexity_ratio": 1.1, "features_ratio": 2.0},
                           {"complexity_ratio": 3.0, "features_ratio": math.nan}),
    "02-iterations-complexity": cases(C2.claim_iterations_complexity, {"iterations_ratio": 2.5},
                                      {"iterations_ratio": 0.8}, {"iterations_ratio": math.nan}),
    "02-l2-slower": _share_claim("claim_l2_slower"),
    "02-small-rho-faster": _share_claim("claim_small_rho_faster"),
    "02-single-leaf": cases(C2.claim_single_leaf, T2._comparison(T2._pair(0.2, 0.3), T2._pair(0.2, 0.2, index=1)),
                            T2._comparison(T2._pair(0.2, 0.1)), T2._comparison()),
    "02-figure7": cases(C2.claim_figure7, [T2._history_run([0.1, 0.2, 0.3], [0.0, 0.04, 0.01])],
                        [T2._history_run([0.1, 0.05], [0.0, 0.01])], [T2._history_run([0.1], [0.05])]),
    "02-baseline-not-robust": cases(C2.claim_baseline_not_robust, T2._baselines([True, False] * (N2 // 2), [True] * N2, [True] * N2),
                                    T2._baselines([True] * N2, [True] * N2, [True] * N2), EMPTY),
    "02-baseline-invalid": cases(C2.claim_baseline_invalid, T2._baselines([True] * N2, [True] * (N2 - 1) + [False], [True] * N2),
                                 T2._baselines([True] * N2, [True] * N2, [True] * N2), EMPTY),
    "02-ours-robust": cases(C2.claim_ours_robust, T2._baselines([True] * N2, [True] * N2, [True] * N2),
                            T2._baselines([True] * N2, [True] * N2, [True, False] * (N2 // 2)), EMPTY),
    "02-ours-valid": cases(C2.claim_ours_valid, T2._baselines([True] * N2, [True] * N2, [True] * N2),
                           T2._baselines([True], [True], [True]).assign(ours_valid=False), EMPTY),
    "02-times": cases(lambda tables, frame: C2.claim_times(tables, frame, time_limit=8),
                      ([pd.DataFrame({"ratio": [0.5, 2.0]})], _CONVERGED),
                      ([pd.DataFrame({"ratio": [5.0, 6.0]})], _CONVERGED), ([], EMPTY)),
}

# --------------------------------------------------------------------------- chapter 3

KNAPSACK = {"objective": (C3.knapsack_objective_claim, dict(objective=(1.0, 0.3)), dict(objective=(1.0, 0.6))),
            "feasibility": (C3.knapsack_feasibility_claim, dict(feasibility=(1.0, 0.005)), dict(feasibility=(1.0, 0.02))),
            "accuracy": (C3.knapsack_accuracy_claim, dict(accuracy=(1.0, 1.2)), dict(accuracy=(1.0, 1.3))),
            "stability": (C3.knapsack_stability_claim, dict(fsi=(3.0, 3.3)), dict(fsi=(3.0, 2.0))),
            "std": (C3.knapsack_std_claim, dict(std=(0.2, 0.25)), dict(nstd=(1.0, 2.0)))}


def _knapsack(name, method):
    claim, good, bad = KNAPSACK[name]
    enough = T3.enough(claim)
    return {"holds": lambda: T3.judge(claim, *T3.frames(method=method, **enough, **good), method=method),
            "fails": lambda: T3.judge(claim, *T3.frames(method=method, **enough, **bad), method=method),
            "none": lambda: T3.judge(claim, None, None, method=method)}


def _sigma(id, methods):
    table = T3._sigma_table(methods, 10)
    return cases(lambda t: C3.knapsack_sigma_claim(t, id=id), table, table.assign(accuracy_std=0.01), None)


def _slsqp_optimum(loss):
    return pd.concat([T3.per_run(method=C3.SLSQP, loss=(None, loss)), T3.per_run(loss=(None, 5.0))])


FAST_RUNS = [T3.run_history(T3.FAST, n_items=n) for n in (5, 10, 20, 40)]
GOOD_SPP = T3.rows((30, 900, 200, 90), (30, 930, 6, 58))
GOOD_CVRP = T3.rows((1.5, 365, 3.7, 235), (1.5, 340, 3.2, 207))
_NEAR_VRP = T3.vrp_result()
_NEAR_VRP["depot_distance"] = _NEAR_VRP["depot_distance"][::-1]

CH3 = {
    "03-spp-coherent": cases(C3.spp_claim, GOOD_SPP, T3.rows((30, 900, 200, 90), (30, 930, 150, 58)), None),
    "03-spp-route": cases(C3.spp_route_claim, T3.spp_result(), T3.spp_result(flip=True), None),
    "03-spp-local": cases(C3.spp_local_claim, T3.spp_result(), T3.spp_result(flip=True), None),
    **{f"03-knapsack-{name}-{C3.FIT_ID[m]}": _knapsack(name, m) for name in KNAPSACK for m in (C3.SLSQP, C3.CONVEX)},
    "03-knapsack-sigma": _sigma("03-knapsack-sigma", [C3.DTR, C3.LR, C3.CONVEX]),
    "03-knapsack-sigma-slsqp": _sigma("03-knapsack-sigma-slsqp", [C3.SLSQP]),
    **{f"03-scatter-{C3.FIT_ID[m]}": cases(lambda runs, m=m: C3.scatter_claim(runs, m), T3.per_run(method=m),
                                           T3.per_run(method=m, clemo=(1.1, 20.0)), None) for m in (C3.SLSQP, C3.CONVEX)},
    "03-slsqp-optimum": cases(C3.slsqp_optimum_claim, _slsqp_optimum(5.02), _slsqp_optimum(5.5), None),
    "03-runtime-ratio": cases(C3.runtime_ratio_claim, T3.table3(), T3.table3(lr_s=0.01), None),
    "03-runtime-absolute": cases(C3.runtime_absolute_claim, T3.table3(slsqp_s=(8.0, 60.0, 1, 1)), T3.table3(), None),
    "03-benchmark-times": cases(C3.benchmark_times_claim, T3.table3(), T3.table3(dtr_s=1.5), None),
    "03-convergence": cases(C3.convergence_claim, FAST_RUNS,
                            [T3.run_history([10.0] * 300 + [1.0] * 5, n_items=5)] + FAST_RUNS[1:], [None]),
    "03-convex-fast": cases(C3.convex_claim, T3.table3(), T3.table3(convex_s=3.0), None),
    "03-cvrp-coherent": cases(lambda t: C3.cvrp_claim(t, n_samples=1000, solution_limit=1000), GOOD_CVRP,
                              T3.rows((1.5, 365, 3.7, 235), (1.5, 340, 3.2, 300)), None),
    "03-figure3": cases(lambda v: C3.figure3_claim(v, n_chunks=4), T3.vrp_result(), _NEAR_VRP, None),
    "03-figure9": cases(lambda v: C3.figure9_claim(v, n_chunks=4), T3.vrp_result(), T3.vrp_result(c02=0.2), None),
}

# --------------------------------------------------------------------------- chapter 4

FULL = dict(n=50, n_retrained=20)


def _table1_claim(check, **kwargs):
    return lambda rows: check(T4.table_of(rows, n=FULL["n"]), **kwargs)


def _paper_like(changes=None):
    """The paper's own Table 1 with `changes` ((method, column) -> value) applied."""
    table = T4.paper_like()
    for (method, column), value in (changes or {}).items():
        table.loc[table["method"] == method, column] = value
    return table


CH4 = {
    "04-vdelta-100": cases(_table1_claim(C4.claim_delta_validity), T4.GOOD, T4.BAD, T4.NO_DATA),
    "04-vr-100": cases(_table1_claim(C4.claim_retrained_validity, n_retrained=20), T4.GOOD, T4.BAD, T4.NO_DATA),
    # with every method of the paper run (its own table, PROPLACE's lof and l1 made best) these hold in full
    "04-best-lof": cases(C4.claim_best_lof, _paper_like({("PROPLACE", "lof"): 0.5}),
                         _paper_like({("PROPLACE", "lof"): 9.0}), T4.table_of(T4.NO_DATA, n=50)),
    "04-l1-below": cases(C4.claim_l1, _paper_like({("PROPLACE", "l1"): 0.0001, ("RBR", "l1"): 0.00001}),
                         _paper_like({("PROPLACE", "l1"): 9.0}), T4.table_of(T4.NO_DATA, n=50)),
    "04-wce-least-robust": cases(C4.claim_wce_least_robust, _paper_like(), _paper_like({("WCE", "vr"): 100}),
                                 T4.paper_like(n=2)),
    "04-rbr-l1-not-robust": cases(C4.claim_rbr, _paper_like({("RBR", "l1"): 0.0001}), _paper_like(),
                                  T4.paper_like(n=2)),
    "04-baselines-robust": cases(C4.claim_baselines_robust, _paper_like(), _paper_like({("RobX", "vΔ"): 10}),
                                 T4.paper_like(n=2)),
    "04-proto-r-adult": cases(C4.claim_proto_r_adult, _paper_like(), _paper_like({("Proto-R", "vΔ"): 100}),
                              T4.paper_like(n=2)),
    "04-exact-inner": cases(C4.claim_exact_inner, T4.inner_rows([True, True]), T4.inner_rows([True, False]), EMPTY),
}

# --------------------------------------------------------------------------- chapter 5

ROBUST = "Robust-SAA (beta=0.05)"
_SMALL = set(C5.EVOLVING_ROBUST)
_EVOLVING = [(d, "Direct-SAA", 0.9, 0.5 if d in _SMALL else 0.95) for d in C5.ENSEMBLE_DATASETS]
_DIRECT = [("COMPAS", "Direct-SAA", 0.9, 1.0), ("Adult", "Direct-SAA", 0.9, 0.95), ("Spambase", "Direct-SAA", 0.9, 0.5)]
_SPARSE = pd.DataFrame({"dataset": ["Adult", "Adult", "Credit-Card-Default"], "label": "Direct-SAA",
                        "n_changed": [1.0, 4.0, 2.0], "n": [3, 1, 4]})
_CHECKS = pd.DataFrame({"hard": [3, 2], "verified by T0": [3, 2], "relaxed": [1, 0]})
_TIMES = pd.DataFrame({"ratio": [1.2, 1.9], "solved": C5.MIN_SOLVES})
_ENOUGH = pd.Series({"COMPAS": 30, "Spambase": 30})

CH5 = {
    "05-verified": cases(C5.claim_verified, _CHECKS, _CHECKS.assign(**{"verified by T0": [3, 1]}),
                         _CHECKS.assign(hard=0, **{"verified by T0": 0})),
    "05-naive-below-half": cases(C5.claim_naive_below_half, T5._table1({"A": 10, "B": 40, "C": 90}),
                                 T5._table1({"A": 10, "B": 60, "C": 90}), T5._table1({"A": 10, "B": 40, "C": 90}, n=5)),
    "05-spambase-naive": cases(C5.claim_spambase_naive, T5._table1({"Spambase": 0}), T5._table1({"Spambase": 40}, n=100),
                               T5._table1({"Spambase": 0}, n=2)),
    "05-direct-saa-targets": cases(lambda c: C5.claim_direct_saa_targets(c, datasets=["COMPAS", "Adult", "Spambase"]),
                                   T5._curves(_DIRECT), T5._curves(_DIRECT[:2] + [("Spambase", "Direct-SAA", 0.9, 0.95)]),
                                   T5._curves(_DIRECT[:1])),
    "05-robust-saa-spambase": cases(C5.claim_robust_saa_spambase, T5._curves([("Spambase", ROBUST, 0.9, 0.99)]),
                                    T5._curves([("Spambase", ROBUST, 0.9, 0.6)]),
                                    T5._curves([("Spambase", ROBUST, 0.9, 0.99)], n=8)),
    "05-sparse-adult": cases(C5.claim_sparse_adult, _SPARSE, _SPARSE.assign(n=[1, 3, 4]), _SPARSE.iloc[:2]),
    "05-dominance": cases(C5.claim_dominance, T5._points(0.2, 0.8), T5._points(0.2, 0.95), T5._points(0.2, 0.8, n=5)),
    "05-solve-time": cases(C5.claim_solve_time, _TIMES, _TIMES.assign(ratio=[1.2, 2.5]), _TIMES.assign(solved=5)),
    "05-benchmark-time": cases(C5.claim_benchmark_time,
                               T5._ratios({"COMPAS": 3.0}, factuals=20), T5._ratios({"COMPAS": 0.3}, factuals=20),
                               T5._ratios({"COMPAS": 3.0}, factuals=5)),
    "05-importance": cases(lambda c: C5.claim_importance(c, counterfactuals=_ENOUGH),
                           pd.Series({"COMPAS": 0.7, "Spambase": 0.6}), pd.Series({"COMPAS": 0.7, "Spambase": 0.4}),
                           pd.Series(dtype=float)),
    "05-large-forests": cases(C5.claim_large_forests, T5._table1({"Spambase": 20}), T5._table1({"Spambase": 70}),
                              T5._table1({"COMPAS": 20})),
    "05-evolving-direct": cases(C5.claim_evolving_direct, T5._curves(_EVOLVING),
                                T5._curves([(d, "Direct-SAA", 0.9, 0.95) for d in C5.ENSEMBLE_DATASETS]),
                                T5._curves(_EVOLVING[:-1])),
    "05-evolving-robust": cases(C5.claim_evolving_robust, T5._curves([(d, ROBUST, 0.9, 0.99) for d in sorted(_SMALL)]),
                                T5._curves([(d, ROBUST, 0.9, 0.99 if d != "Spambase" else 0.5) for d in sorted(_SMALL)]),
                                T5._curves([(d, ROBUST, 0.9, 0.99) for d in sorted(_SMALL)][:-1])),
}

# --------------------------------------------------------------------------- chapter 6

def _rows(method, model, values, *, col="retrained", param=None, **extra):
    return [{**dict(dataset="toy", factual=i, model=model, method=method, param=param, recommended=True, valid=True,
                    status="converged", excess_distance=0.0, tol=1e-4), col: v, **extra} for i, v in enumerate(values)]


def _better(method, model, col, against=C6.NEAREST, param=None):
    """A hypothesis "`method` above `against` on `col`": holds on higher values, fails when the two compared
    series are flipped."""
    high, low = [0.9, 0.8, 1.0, 0.7, 0.9, 0.8], [0.1, 0.2, 0.0, 0.1, 0.3, 0.2]

    # H7's and H9's comparators stretch the nearest counterfactual to each of the method's counterfactuals
    matched = dict(param=param, against=method) if against == C6.STRETCHED_TO else {}

    def frame(ours, base):
        return pd.DataFrame(_rows(against, model, base, col=col, **matched)
                            + _rows(method, model, ours, col=col, param=param))
    return frame(high, low), frame(low, high)


def _smallest(method, col, good, bad, **extra):
    return (pd.DataFrame(_rows(method, "network", good, col=col, **extra)),
            pd.DataFrame(_rows(method, "network", bad, col=col, **extra)))


CH6_INPUTS = {
    "06-h1-nearest-closest": (C6.h1_nearest_closest, *_smallest(C6.PROPLACE, "excess_distance", [0, 0.1, 0.2], [0, -0.1, 0.2])),
    "06-h2-region-certified": (C6.h2_region_certified, pd.DataFrame(_rows(C6.REGION, "network", [0.06, 0.05, 0.1], col="radius_linf", param=0.05)),
                               pd.DataFrame(_rows(C6.REGION, "network", [0.06, 0.01, 0.1], col="radius_linf", param=0.05))),
    "06-h3-proplace-delta": (C6.h3_proplace_delta, pd.DataFrame(_rows(C6.PROPLACE, "network", [0.1, 0.2, 0.3], col="delta_interval", param=0.1)),
                             pd.DataFrame(_rows(C6.PROPLACE, "network", [0.1, 0.05, 0.3], col="delta_interval", param=0.1))),
    "06-h4-saa-margin": (C6.h4_saa_margin, *_smallest(C6.DIRECT_SAA, "margin", [0.0, 0.1, 0.2], [0.0, -0.1, 0.2], tau=0.6, found=True)),
    "06-h5-region-retrained-network": (C6.h5_region_retrained_network, *_better(C6.REGION, "network", "retrained", param=C6.RHO)),
    "06-h6-region-retrained-forest": (C6.h6_region_retrained_forest, *_better(C6.REGION, "forest", "retrained", param=C6.RHO)),
    "06-h7-proplace-radius": (C6.h7_proplace_radius, *_better(C6.PROPLACE, "network", "radius_linf", against=C6.STRETCHED_TO, param=0.03)),
    "06-h8-region-model-shift": (C6.h8_region_model_shift, *_better(C6.REGION, "network", "delta_exact", against=C6.STRETCHED)),
    "06-h9-saa-radius": (C6.h9_saa_radius, *_better(C6.DIRECT_SAA, "forest", "radius_linf", against=C6.STRETCHED_TO, param=C6.ALPHA)),
    "06-h10-region-vs-stretched": (C6.h10_region_vs_stretched, *_better(C6.REGION, "network", "retrained", against=C6.STRETCHED)),
    "06-h11-proplace-retrained": (C6.h11_proplace_retrained, *_better(C6.PROPLACE, "network", "retrained")),
}

CH6 = {id: cases(check, holds, fails, EMPTY) for id, (check, holds, fails) in CH6_INPUTS.items()}

CASES = {**CH1, **CH2, **CH3, **CH4, **CH5, **CH6}


def test_every_declared_claim_of_every_chapter_has_a_fixture():
    """A claim without one is a check nobody has shown can fail."""
    declared = [i for chapter in CHAPTERS for i in _book(chapter).ids]
    assert sorted(set(declared) - set(CASES)) == [] and sorted(set(CASES) - set(declared)) == []


@pytest.mark.parametrize("id", sorted(CASES))
def test_claim_holds_on_its_fixture(id):
    claim = CASES[id]["holds"]()
    assert (claim.id, claim.verdict) == (id, REPRODUCED), claim
    assert not claim.explanation


@pytest.mark.parametrize("id", sorted(CASES))
def test_claim_can_fail_its_perturbation_changes_the_verdict(id):
    claim = CASES[id]["fails"]()
    assert claim.id == id and claim.verdict in (DIFFERS, PARTLY), claim
    assert claim.explanation.startswith(("Genuine finding", "Deviation from the paper's protocol")), claim.explanation


@pytest.mark.parametrize("id", sorted(CASES))
def test_claim_is_not_run_without_data(id):
    claim = CASES[id]["none"]()
    assert (claim.id, claim.verdict) == (id, NOT_RUN), claim
    assert claim.explanation.startswith("Too little evidence")



# --------------------------------------------------------------------------- re-audit (issue 26, second audit)

def _rbr_without_vdelta(rbr_l1):
    """The paper's own Table 1 with RBR's vΔ undefined on three data sets (no counterfactual found there) and
    RBR's l1 set to `rbr_l1`."""
    table = _paper_like({("RBR", "l1"): rbr_l1})
    table.loc[(table["method"] == "RBR") & (table["dataset"] != "heloc"), "vΔ"] = math.nan
    return table


def test_rbr_claim_is_decided_by_its_l1_part_when_vdelta_is_undefined():
    """Re-audit R1: a conjunction one part of which already fails is decided (*differs*), not *not run*
    because the other part lacks data (as issue 26's defect 5); and the reason says why vΔ is missing."""
    failed = C4.claim_rbr(_rbr_without_vdelta(9.0))      # RBR's l1 lowest nowhere: the l1 part fails
    assert failed.verdict == DIFFERS and failed.explanation.startswith(("Genuine finding", "Deviation"))
    assert "vΔ undefined on adult, compas and give_me_some_credit" in failed.why
    open_ = C4.claim_rbr(_rbr_without_vdelta(0.0001))    # l1 part holds, vΔ part cannot be judged
    assert open_.verdict == NOT_RUN and "RBR found no counterfactual there" in open_.explanation
    robust = _paper_like({("RBR", "l1"): 0.0001, ("RBR", "vΔ"): 90.0})
    assert C4.claim_rbr(robust).verdict == DIFFERS       # Δ-robust somewhere: the vΔ part fails


def test_rbr_claim_says_its_counterfactuals_outside_the_box_were_tested():
    """Paper scale: every RBR counterfactual of adult, compas and give_me_some_credit lies outside [0, 1] (its
    reference code has no box); vΔ tests them there (chapter 4's ``interval_lower_anywhere``), where it once
    left them out and the claim could not be judged."""
    table = _paper_like({("RBR", "l1"): 0.0001, ("RBR", "vΔ"): 40.0}).assign(outside=0.0)
    outside = (table["method"] == "RBR") & (table["dataset"] != "heloc")
    table.loc[outside, ["outside", "vΔ clipped"]] = [100.0, 0.0]
    claim = C4.claim_rbr(table)
    assert claim.verdict == REPRODUCED
    assert ("of its counterfactuals found, 100 %, 100 %, 100 % lie outside [0, 1] on adult, compas and "
            "give_me_some_credit") in claim.why
    assert "clipped onto [0, 1] it would read adult: 0, compas: 0, give_me_some_credit: 0" in claim.why
    assert "on fewer than" not in claim.why and "data sets: lowest on all but one" not in claim.why  # all four ran
    rbr = table["method"] == "RBR"
    table.loc[rbr, "found"] = [100.0, 100.0, 100.0, 100.0 / 50]                         # 1 of heloc's 50 found
    table.loc[rbr & (table["dataset"] == "heloc"), "vΔ"] = 100.0
    thin = C4.claim_rbr(table)           # audit 42 L4: vΔ on one CE is no evidence, neither way
    assert thin.verdict == NOT_RUN and "vΔ undefined on heloc: RBR found fewer than 5 counterfactuals there (1)" in thin.why
    table.loc[rbr & (table["dataset"] == "compas"), "vΔ"] = 90.0
    assert C4.claim_rbr(table).verdict == DIFFERS      # 42b M1: a data set of 50 CEs still decides against it
    table.loc[rbr, "l1"] = 9.0
    table.loc[rbr & (table["dataset"] == "compas"), "vΔ"] = 40.0
    assert C4.claim_rbr(table).verdict == DIFFERS      # 42b M1: so does the l1 part, which counts factuals


def test_rbr_claim_on_one_data_set_still_asks_for_the_lowest_l1_there():
    """Audit 3's J-c: with one data set, "all but one" asks for none; RBR must still be lowest on one."""
    one = _paper_like({("RBR", "vΔ"): 10.0})
    one = one[one["dataset"] == "heloc"].copy()
    one.loc[one["method"] == "RBR", "l1"] = 9.0                   # not the lowest on the one data set
    assert C4.claim_rbr(one).verdict == DIFFERS
    one.loc[one["method"] == "RBR", "l1"] = 0.0001
    assert C4.claim_rbr(one).verdict in (PARTLY, REPRODUCED)


def test_best_lof_is_not_run_where_no_other_method_has_a_lof():
    """Audit 5's J2: PROPLACE alone with a lof is best by default; that tells nothing."""
    table = T4.table_of(T4.GOOD)
    assert C4.claim_best_lof(table).verdict in (PARTLY, REPRODUCED)
    table.loc[table["method"] != "PROPLACE", "lof"] = math.nan
    claim = C4.claim_best_lof(table)
    assert claim.verdict == NOT_RUN and "no other method has a lof on" in claim.why
