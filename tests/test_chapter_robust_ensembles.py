"""Chapter 5's protocol (Forel et al., Section 5): simulations, grids, tables and the checks behind its claims."""

import numpy as np
import pandas as pd
import pytest

from explainopt.chapters import robust_ensembles as CH
from explainopt.chapters import robust_ensembles_figures as FIG
from explainopt.chapters import settings
from explainopt.counterfactuals.ensembles import ensemble_counterfactual, feature_weights, fit_isolation_forest
from explainopt.datasets import load_dataset
from explainopt.reporting import DIFFERS, NOT_RUN, PARTLY, REPRODUCED

# --------------------------------------------------------------------------- simulations


def test_simulation_follows_the_protocol():
    data = load_dataset("ensembles/COMPAS").scaled()
    s = CH.make_simulation(data, sim=3, n_factuals=5, n_estimators=20, max_depth=3)
    assert s.X_factual.shape[0] == 5 and s.X_train.shape[0] == 5278 - 5
    assert s.forest.random_state == 3 and s.retrained.random_state == 43
    assert s.forest.max_depth == 3 and s.forest.max_features == "sqrt" and s.forest.n_estimators == 20


def test_simulation_rows_report_retrained_validity_with_intervals():
    rows = CH.simulate(dataset="COMPAS", sim=1, n_estimators=10, max_depth=3, n_factuals=2, alphas=[0.5, 0.1])
    frame = pd.DataFrame(rows)
    assert len(frame) == 2 * 3 and set(frame.method) == {"naive", "direct-saa"}
    assert {"x", "x0", "valid_retrained", "time", "solver", "fallback_from", "repaired"} <= set(frame.columns)
    hard = frame[~frame["relaxed"]]
    assert len(hard) and hard["valid"].all() and hard["meets_threshold"].all()
    table = CH.validity_table(frame, ["method"])
    assert ((table.low <= table.rate) & (table.rate <= table.high)).all()
    check = CH.check_counts(frame)
    assert int(check["verified by T0"].iloc[0]) == int(check["hard"].iloc[0]) == len(hard)
    assert int(check["relaxed"].iloc[0]) == len(frame) - len(hard)


def test_isolation_forest_rows_come_from_one_chain_with_the_optima_of_each_level():
    """One row per contamination level, in the grid's order; each point re-checked with the forest and the
    isolation forest of its own level (refit here), each objective that of a separate solve of the level."""
    contaminations = [0.3, 0.05, 0.1]
    # no time limit: a limit makes the outcome depend on the machine's speed and load
    rows = CH.simulate(dataset="COMPAS", sim=2, n_estimators=10, max_depth=3, n_factuals=2, alphas=[], naive=False,
                       contaminations=contaminations, time_limit=None)
    frame = pd.DataFrame(rows)
    assert len(frame) == 2 * 3 and set(frame.method) == {"isolation-forest"}
    assert list(frame.contamination) == contaminations * 2 and frame.reused.dtype == bool
    s = CH.make_simulation(load_dataset("ensembles/COMPAS").scaled(), sim=2, n_factuals=2, n_estimators=10, max_depth=3)
    for row in rows:
        iso = fit_isolation_forest(s.X_train[s.y_train == row["target"]], contamination=row["contamination"],
                                   random_state=2)
        alone = ensemble_counterfactual(s.forest, row["x0"], spec=s.spec, tau=0.5, target=row["target"],
                                        weights=feature_weights(s.spec), isolation_forest=iso, time_limit=None)
        assert row["status"] == alone.detail == "optimal" and not row["relaxed"] and not alone.relaxed
        assert int(s.forest.predict(row["x"].reshape(1, -1))[0]) == row["target"] and row["valid"]
        assert row["inlier"] and iso.predict(row["x"].reshape(1, -1))[0] == 1
        assert row["distance"] == pytest.approx(alone.distance, rel=2e-4, abs=1e-6)
        assert not row["reused"] or row["solve_time"] == 0.0


def test_method_grid_gives_each_method_its_threshold():
    grid = CH.method_grid(alphas=[0.5, 0.1], betas=[0.05], robust_alphas=[0.1], contaminations=[0.3],
                          lof_weights=[1.0], n_estimators=100)
    methods = [m for m, _, _ in grid]
    assert methods == ["naive", "direct-saa", "direct-saa", "robust-saa", "isolation-forest", "lof"]
    taus = {(m, tuple(p.items())): tau for m, p, tau in grid}
    assert taus[("naive", ())] == taus[("lof", (("lof_weight", 1.0),))] == 0.5
    assert taus[("robust-saa", (("alpha", 0.1), ("beta", 0.05)))] > taus[("direct-saa", (("alpha", 0.1),))] > 0.5
    assert set(methods) <= set(CH.METHODS)


# --------------------------------------------------------------------------- grids


def test_simulation_configs_run_benchmarks_on_the_first_size_and_sims_per_size():
    configs = CH.simulation_configs(datasets=["COMPAS", "Spambase"], sims={100: range(3), 400: range(2)},
                                    n_estimators=[100, 400], alphas=[0.5], betas=[0.1], robust_on=["Spambase"],
                                    contaminations=[0.1], lof_weights=[1.0], benchmarks_on=["COMPAS"])
    count = {(c["dataset"], c["n_estimators"]): 0 for c in configs}
    for c in configs:
        count[c["dataset"], c["n_estimators"]] += 1
    assert count == {("COMPAS", 100): 3, ("Spambase", 100): 3, ("COMPAS", 400): 2, ("Spambase", 400): 2}
    first = [c for c in configs if c["n_estimators"] == 100]
    assert all(c["contaminations"] == ([0.1] if c["dataset"] == "COMPAS" else []) for c in first)
    assert all(c["betas"] == ([0.1] if c["dataset"] == "Spambase" else []) for c in first)
    assert all(not c["betas"] and not c["contaminations"] and not c["lof_weights"]
               for c in configs if c["n_estimators"] == 400)
    assert len(CH.simulation_configs(datasets=["COMPAS"], sims=range(4), n_estimators=[100, 400])) == 8
    counted = CH.simulation_configs(datasets=["COMPAS"], sims={100: 3, 400: 1}, first_sim=5, n_estimators=[100, 400])
    assert [(c["n_estimators"], c["sim"]) for c in counted] == [(100, 5), (100, 6), (100, 7), (400, 5)]


def test_book_grid_gives_spambase_its_own_settings_and_runs_it_first():
    S = settings(CH.SCALES, "book")
    configs = CH.grid_configs(S, betas=[0.05, 0.1], first_sim=2, solver="highs")
    assert [c["dataset"] for c in configs][0] == "Spambase" and len(configs) == len(S["datasets"])
    spambase, adult = configs[0], next(c for c in configs if c["dataset"] == "Adult")
    assert (spambase["n_factuals"], spambase["alphas"], spambase["time_limit"]) == (2, [0.5, 0.1], 45)
    assert spambase["betas"] == [0.05, 0.1] and spambase["robust_alphas"] == [0.1]
    assert (adult["n_factuals"], adult["time_limit"], adult["betas"]) == (5, 20, [])
    assert all(c["sim"] == 2 and c["solver"] == "highs" for c in configs)
    again = CH.comparison_configs(configs, solver="gurobi", first_sim=2)
    assert len(again) == len(configs) and all(c["solver"] == "gurobi" and not c["betas"] and not c["lof_weights"]
                                              for c in again)
    assert CH.comparison_configs(configs, solver="gurobi", first_sim=0) == []
    assert "Spambase with factuals 2" in CH.describe_grid(S, betas=[0.05, 0.1])


def test_grids_declare_the_notebooks_cells_and_fill_n100_before_n400_round_by_round():
    book = settings(CH.SCALES, "book")
    grids = CH.grids(book, betas=[0.05, 0.1], seed=0, solver="auto")
    grid = grids["simulations"]
    assert grid.func is CH.simulate
    assert grid.configs == CH.grid_configs(book, betas=[0.05, 0.1], first_sim=0, solver="auto")  # the book's cells
    assert not any("naive" in c or "new_share" in c for c in grid.configs)     # keys (and cache) as before
    assert sorted(grid.order) == list(range(len(grid.configs)))
    paper = CH.grids(settings(CH.SCALES, "paper"))["simulations"]
    assert len(paper) == 7 * (40 + 20) + 7 * 40                               # SAA cells, then benchmark cells
    ordered = [paper.configs[i] for i in paper.order]
    assert [c["n_estimators"] for c in ordered] == [100] * 280 + [400] * 140 + [100] * 280
    assert [c["sim"] for c in ordered[:14]] == [0] * 7 + [1] * 7      # one simulation of every dataset per round
    assert [c["dataset"] for c in ordered[:7]] == list(CH.COST_ORDER)   # cheapest first, Spambase last
    assert ordered[0]["betas"] == [] and ordered[6]["betas"] == [0.05, 0.1] and ordered[280]["betas"] == []
    saa, bench = ordered[0], ordered[420]
    assert not saa["contaminations"] and saa["alphas"] and saa.get("naive", True)
    assert bench["contaminations"] and bench["lof_weights"] and not bench["alphas"] and bench["naive"] is False
    assert CH.simulation_frame([None, None]).columns.tolist() == CH.SIMULATION_COLUMNS


def test_evolving_grid_retrains_on_more_rows_with_robust_saa_on_the_small_datasets():
    evolving = CH.grids(settings(CH.SCALES, "book"))["evolving"].configs
    assert {c["dataset"] for c in evolving} == set(CH.ENSEMBLE_DATASETS)
    assert all(c["new_share"] == CH.NEW_SHARE and not c["contaminations"] and c["n_estimators"] == 100
               for c in evolving)
    assert {c["dataset"] for c in evolving if c["betas"]} == set(CH.EVOLVING_ROBUST)
    smoke = CH.grids(settings(CH.SCALES, "smoke", datasets=["German-Credit"]))["evolving"]
    assert len(smoke) == 0                                                    # evolving data on COMPAS only
    data = load_dataset("ensembles/COMPAS").scaled()
    fixed = CH.make_simulation(data, sim=1, n_factuals=5, n_estimators=10, max_depth=3)
    new = CH.make_simulation(data, sim=1, n_factuals=5, n_estimators=10, max_depth=3, new_share=0.2)
    assert np.array_equal(fixed.X_factual, new.X_factual)                     # the same factuals
    assert len(new.X_train) == round(0.8 * len(fixed.X_train)) and new.retrained.n_features_in_ == 5
    probe = fixed.X_train[:200]                                               # T1 sees all rows: the same forest
    assert np.array_equal(new.retrained.predict_proba(probe), fixed.retrained.predict_proba(probe))
    assert not np.array_equal(new.forest.predict_proba(probe), fixed.forest.predict_proba(probe))
    rows = CH.simulate(dataset="COMPAS", sim=1, n_estimators=10, max_depth=3, n_factuals=1, alphas=[0.5],
                       lof_weights=[1.0], naive=False, new_share=0.2)
    assert [r["method"] for r in rows] == ["direct-saa", "lof"]


def test_settings_keep_the_scales_factuals_unless_the_reader_gives_a_number():
    assert settings(CH.SCALES, "smoke", factuals=None)["factuals"] == 2
    assert settings(CH.SCALES, "smoke", factuals=3)["factuals"] == 3
    assert settings(CH.SCALES, "book", datasets='["COMPAS"]')["datasets"] == ["COMPAS"]


def test_no_comparison_solver_when_it_already_solved_the_cells():
    assert CH.comparison_solver(pd.DataFrame({"solver": ["gurobi"]})) is None
    assert CH.comparison_solver(pd.DataFrame({"solver": ["highs"]}), candidate="highs") is None


# --------------------------------------------------------------------------- tables


def test_paper_tables_hold_table_1_and_table_3():
    table1, table3 = CH.naive_validity_paper(100), CH.naive_validity_paper(400)
    assert len(table1) == len(table3) == 8
    assert (table1["Spambase"], table3["Spambase"], table1["COMPAS"]) == (17, 24, 92)
    frame = pd.DataFrame({"dataset": ["Spambase"] * 4, "method": "naive", "valid_retrained": [True] + [False] * 3,
                          "distance": 1.0, "n_changed": 2})
    table = CH.naive_validity_table(frame)
    assert table.loc[0, "paper [%]"] == 17 and table.loc[0, "ours [%]"] == 25 and table.loc[0, "n"] == 4
    assert CH.naive_validity_table(frame.iloc[:0]).empty


def test_thresholds_table_has_p_star_and_rho_star_per_target():
    table = CH.thresholds_table(alphas=[0.5, 0.1])
    assert list(table.columns) == ["1-alpha=0.50", "1-alpha=0.90"]
    assert table.loc["p*(N=101)", "1-alpha=0.50"] == pytest.approx(0.5)
    assert (table.loc["rho*(N=100, beta=0.05)"] > table.loc["p*(N=100)"]).all()


def _times_frame():
    rows = []
    for solver, refused, naive, direct in [("highs", None, 1.0, 1.5), ("gurobi", None, 0.2, 0.3),
                                           ("highs", "gurobi", 1.1, 1.4)]:
        rows += [{"dataset": "COMPAS", "method": m, "solver": solver, "fallback_from": refused, "status": "optimal",
                  "solve_time": t} for m, t in (("naive", naive), ("direct-saa", direct))]
    rows.append({"dataset": "COMPAS", "method": "naive", "solver": "highs", "fallback_from": None,
                 "status": "no_solution", "solve_time": 99.0})
    return pd.DataFrame(rows)


def test_solve_time_table_keeps_licence_fallbacks_apart_and_ignores_failed_solves():
    frame = _times_frame()
    table = CH.solve_time_table(frame.iloc[:2], frame.iloc[2:])
    assert list(table["refused by"]) == ["", "", "gurobi"] and list(table["solver"]) == ["highs", "gurobi", "highs"]
    highs = table.iloc[0]
    assert (highs["problems"], highs["solved"], highs["ratio"]) == (3, 2, pytest.approx(1.5))
    assert CH.solve_time_table(frame.iloc[:0]).empty


def test_solve_time_table_leaves_reused_points_out_of_the_means():
    """Re-audit J5: a Direct-SAA point reused from a lower threshold's optimum needed no solve; its 0 s
    would halve the mean here and count as a solve."""
    frame = _times_frame().iloc[:2]
    reused = frame.iloc[[1]].assign(solve_time=0.0, reused=True)
    table = CH.solve_time_table(pd.concat([frame.assign(reused=False), reused], ignore_index=True))
    row = table.iloc[0]
    assert (row["problems"], row["solved"], row["reused"]) == (3, 2, 1)
    assert row["direct-saa"] == pytest.approx(1.5) and row["ratio"] == pytest.approx(1.5)


def test_solve_time_frame_keeps_every_solve_with_a_point_and_the_benchmark_ratio_uses_medians(book_style):
    rows = [{"dataset": "COMPAS", "method": m, "alpha": a, "beta": None, "solver": "highs", "fallback_from": None,
             "status": st, "solve_time": t}
            for m, a, st, t in [("naive", None, "optimal", 1.0), ("naive", None, "optimal", 3.0),
                                ("direct-saa", 0.5, "optimal", 2.0), ("direct-saa", 0.1, "time_limit", 20.0),
                                ("isolation-forest", None, "optimal", 8.0), ("lof", None, "optimal", 4.0),
                                ("lof", None, "no_solution", 99.0)]]
    rows[0]["fallback_from"] = "gurobi"
    times = CH.solve_time_frame(pd.DataFrame(rows))
    assert len(times) == 7 and times.stopped.tolist() == [False] * 3 + [True] + [False] * 2 + [True]
    assert times.loc[0, "solver"] == "highs (gurobi refused)" and set(times.label) == {"naive", "Direct-SAA",
                                                                                      "isolation forest", "1-LOF"}
    ratio = CH.benchmark_time_ratio(times)
    assert ratio.loc["COMPAS", "ratio"] == pytest.approx(8.0 / 2.0)      # median(8, 4, 99) / median(1, 3)
    assert ratio.loc["COMPAS", "capped"] == "numerator"               # 1-LOF's unsolved 99 s: a lower bound
    assert CH.claim_benchmark_time(ratio).verdict == REPRODUCED
    assert CH.claim_benchmark_time(ratio.assign(ratio=0.4)).verdict == NOT_RUN   # a lower bound below 1 decides nothing
    assert CH.claim_benchmark_time(ratio.assign(ratio=0.4, capped="")).verdict == DIFFERS
    assert CH.claim_benchmark_time(CH.benchmark_time_ratio(times[times.label != "1-LOF"].iloc[:0])).verdict == NOT_RUN
    ax = FIG.plot_solve_times(times)
    assert ax.get_yscale() == "log"
    book_style.check_layout(ax.figure)


def test_check_counts_count_verified_relaxed_and_repaired_points():
    frame = pd.DataFrame({"dataset": "COMPAS", "status": ["optimal", "optimal", "time_limit", "infeasible"],
                          "relaxed": [False, True, False, False], "valid": [True, True, True, False],
                          "meets_threshold": [True, False, False, False], "repaired": [0, 0, 2, 0]})
    row = CH.check_counts(frame).iloc[0]
    assert (row["problems"], row["found"], row["hard"], row["verified by T0"]) == (4, 3, 2, 1)
    assert (row["relaxed"], row["relaxed, class flipped"], row["time limit"], row["repaired"]) == (1, 1, 1, 1)


def test_counterfactual_path_shows_the_changed_features_per_target(book_style):
    frame = pd.DataFrame({"dataset": "COMPAS", "sim": 0, "factual": 0, "method": "direct-saa",
                          "alpha": [0.5, 0.1], "x0": [np.zeros(5)] * 2,
                          "x": [np.array([0, 0.2, 0, 0, 0.0]), np.array([0, 0.2, 0, 0, 0.0])]})
    path = CH.counterfactual_path(frame, dataset="COMPAS")
    assert list(path.columns) == ["factual", "0.50", "0.90"] and len(path) == 1
    assert "change 1 of the 5 features" in CH.describe_path(path, dataset="COMPAS")
    assert "moves 0 of 1 times" in CH.describe_path(path, dataset="COMPAS")
    fig, text = FIG.path_figure(frame, dataset="COMPAS", title="Figure 3")
    assert fig.axes[0].get_title() == "Figure 3" and text == CH.describe_path(path, dataset="COMPAS")
    book_style.check_layout(fig)
    assert FIG.path_figure(frame, dataset="Adult") is None and FIG.path_figure(frame, dataset="COMPAS", sim=1) is None


def test_alpha_slider_restyles_the_direct_saa_bars_and_the_threshold_marker():
    curves = pd.DataFrame({"dataset": ["A", "A", "B", "B", "A"], "label": ["Direct-SAA"] * 4 + ["Robust-SAA (beta=0.1)"],
                           "alpha": [0.5, 0.1, 0.5, 0.1, 0.1], "rate": [0.6, 0.95, 0.4, 0.7, 1.0],
                           "n": [5, 5, 5, 5, 5]})
    data = CH.alpha_slider_data(curves, _table1({"A": 50, "B": 20}), n_estimators=101, betas=[0.1])
    assert data["datasets"] == ["A", "B"] and data["naive"] == [0.5, 0.2]
    assert [s["alpha"] for s in data["steps"]] == [0.5, 0.1] and data["steps"][0]["p_star"] == pytest.approx(0.5)
    assert data["steps"][1]["validity"] == [0.95, 0.7] and data["steps"][1]["rho_star"][0.1] > data["steps"][1]["p_star"]
    fig = FIG.plot_alpha_slider(data)
    steps = fig.layout.sliders[0].steps
    assert len(steps) == 2 and all(s.method == "update" for s in steps)
    assert steps[0].args[0]["y"][1] != steps[1].args[0]["y"][1]          # the bars change with alpha
    assert "1 of 2 datasets" in steps[1].args[1]["title.text"]          # only A reaches 0.9
    with pytest.raises(ValueError):
        FIG.plot_alpha_slider(CH.alpha_slider_data(curves.iloc[:0], _table1({})))


# --------------------------------------------------------------------------- claims: holds, fails, no data


def _curves(rows, n=100):
    return pd.DataFrame(rows, columns=["dataset", "label", "target", "high"]).assign(n=n)


EMPTY = {"checks": CH.check_counts(pd.DataFrame(columns=["dataset"])), "table1": CH.naive_validity_table(
    pd.DataFrame(columns=["dataset", "method", "valid_retrained", "distance", "n_changed"])),
    "curves": _curves([]), "points": pd.DataFrame(columns=["dataset", "label", "distance", "rate", "n"]),
    "times": CH.solve_time_table(pd.DataFrame(columns=["dataset", "method", "solver", "status", "solve_time"])),
    "correlation": pd.Series(dtype=float), "table3": CH.naive_validity_table(
        pd.DataFrame(columns=["dataset", "method", "valid_retrained", "distance", "n_changed"]))}


def test_a_failed_dataset_decides_a_claim_on_every_dataset_before_all_are_counted():
    # as 03-convergence (one failed size decides): Adult misses a target while COMPAS has no rate yet
    direct = _curves([("Adult", "Direct-SAA", 0.9, 0.5), ("Spambase", "Direct-SAA", 0.9, 0.5)])
    assert CH.claim_direct_saa_targets(direct, datasets=["COMPAS", "Adult", "Spambase"]).verdict == DIFFERS
    met = _curves([("Adult", "Direct-SAA", 0.9, 0.95), ("Spambase", "Direct-SAA", 0.9, 0.5)])
    assert CH.claim_direct_saa_targets(met, datasets=["COMPAS", "Adult", "Spambase"]).verdict == NOT_RUN
    # evolving data: Adult (not one of the three the paper names) misses; one dataset has no rate
    evolving = [(d, "Direct-SAA", 0.9, 0.5 if d in CH.EVOLVING_ROBUST + ("Adult",) else 0.95)
                for d in CH.ENSEMBLE_DATASETS if d != "COMPAS"]
    assert CH.claim_evolving_direct(_curves(evolving)).verdict == DIFFERS
    robust = "Robust-SAA (beta=0.05)"
    assert CH.claim_evolving_robust(_curves([("Spambase", robust, 0.9, 0.5), ("German-Credit", robust, 0.9, 0.99)])
                                    ).verdict == DIFFERS
    assert CH.claim_evolving_robust(_curves([("Spambase", robust, 0.9, 0.99)])).verdict == NOT_RUN


def test_every_claim_is_not_run_without_data():
    claims = CH.claims(**EMPTY, datasets=[])
    assert len(claims) == 13 and {c.verdict for c in claims} == {NOT_RUN}


def test_verified_claim():
    checks = pd.DataFrame({"hard": [3, 2], "verified by T0": [3, 2], "relaxed": [1, 0]})
    assert CH.claim_verified(checks).verdict == REPRODUCED
    assert CH.claim_verified(checks.assign(**{"verified by T0": [3, 1]})).verdict == DIFFERS
    assert CH.claim_verified(checks.assign(hard=0, **{"verified by T0": 0})).verdict == NOT_RUN


def _table1(values, n=10):
    return pd.DataFrame({"dataset": list(values), "n": n, "ours [%]": list(values.values())})


def test_naive_below_half_claim():
    assert CH.claim_naive_below_half(_table1({"A": 10, "B": 40, "C": 90})).verdict == REPRODUCED
    assert CH.claim_naive_below_half(_table1({"A": 10, "B": 60, "C": 90})).verdict == DIFFERS
    two = CH.claim_naive_below_half(_table1({"A": 10, "B": 40}))
    assert two.verdict == NOT_RUN and "2 of the 3 datasets of at least 10 counterfactuals" in two.why


def test_naive_below_half_counts_only_datasets_with_ten_counterfactuals():
    """Audit D6: 2-5 counterfactuals per dataset (the book scale) decide nothing."""
    few = CH.claim_naive_below_half(_table1({"A": 10, "B": 60, "C": 90}, n=5))
    assert few.verdict == NOT_RUN and "0 of 3 datasets have at least 10" in few.why
    table = pd.concat([_table1({"A": 10, "B": 20, "C": 30}), _table1({"D": 90, "E": 90}, n=3)])
    assert CH.claim_naive_below_half(table).verdict == REPRODUCED and CH.claim_naive_below_half(table).ours == "3 of 3 below 50%"
    assert CH.claim_naive_below_half(_table1({"A": 10, "B": 40, "C": 90})).paper == "5 of 8 datasets below 50%"


def test_spambase_naive_claim():
    assert CH.claim_spambase_naive(_table1({"Spambase": 0}, n=10)).verdict == REPRODUCED
    assert CH.claim_spambase_naive(_table1({"Spambase": 0}, n=2)).verdict == NOT_RUN  # too few to tell
    assert CH.claim_spambase_naive(_table1({"Spambase": 40}, n=100)).verdict == DIFFERS
    few = CH.claim_spambase_naive(_table1({"Spambase": 30}, n=20))  # 6 of 20: the interval reaches below 20%
    assert few.verdict == PARTLY and "12-54%, n = 20" in few.ours  # Clopper-Pearson, by hand: 0.119-0.543
    assert CH.claim_spambase_naive(_table1({"COMPAS": 0})).verdict == NOT_RUN


def test_direct_saa_claim_needs_every_dataset_and_spambase():
    ok = [("COMPAS", "Direct-SAA", 0.9, 1.0), ("Adult", "Direct-SAA", 0.9, 0.95)]
    spambase_misses = [("Spambase", "Direct-SAA", 0.9, 0.5)]
    datasets = ["COMPAS", "Adult", "Spambase"]
    assert CH.claim_direct_saa_targets(_curves(ok + spambase_misses), datasets=datasets).verdict == REPRODUCED

    spambase_meets = [("Spambase", "Direct-SAA", 0.9, 0.95)]
    assert CH.claim_direct_saa_targets(_curves(ok + spambase_meets), datasets=datasets).verdict == DIFFERS
    adult_misses = [ok[0], ("Adult", "Direct-SAA", 0.9, 0.5)] + spambase_misses
    assert CH.claim_direct_saa_targets(_curves(adult_misses), datasets=datasets).verdict == DIFFERS
    assert CH.claim_direct_saa_targets(_curves(ok), datasets=["COMPAS", "Adult"]).verdict == NOT_RUN
    assert CH.claim_direct_saa_targets(_curves(ok[:1] + spambase_misses), datasets=datasets).verdict == NOT_RUN


def test_direct_saa_claim_names_the_dataset_and_target_that_miss():
    """Audit D4: a miss outside Spambase is named with its numbers."""
    curves = _curves([("COMPAS", "Direct-SAA", 0.9, 1.0), ("Students-Performance", "Direct-SAA", 0.95, 0.945),
                      ("Spambase", "Direct-SAA", 0.9, 0.5)], n=115).assign(rate=[0.97, 103 / 115, 0.4])
    claim = CH.claim_direct_saa_targets(curves, datasets=["COMPAS", "Students-Performance", "Spambase"])
    assert claim.verdict == DIFFERS
    assert "misses: Students-Performance at target 95%: 89.6% of 115, interval up to 94.5%" in claim.ours
    assert "Students-Performance" in claim.explanation


def test_robust_saa_claim():
    label = "Robust-SAA (beta=0.05)"
    assert CH.claim_robust_saa_spambase(_curves([("Spambase", label, 0.9, 0.99)])).verdict == REPRODUCED
    assert CH.claim_robust_saa_spambase(_curves([("Spambase", label, 0.9, 0.6)])).verdict == DIFFERS
    assert CH.claim_robust_saa_spambase(_curves([("Spambase", "Direct-SAA", 0.9, 0.99)])).verdict == NOT_RUN


def _points(bench_distance, bench_rate, n=100):
    return pd.DataFrame({"dataset": "COMPAS", "label": ["Direct-SAA", "isolation forest"],
                         "distance": [0.1, bench_distance], "rate": [0.9, bench_rate], "n": n})


def test_dominance_claim():
    assert CH.claim_dominance(_points(0.2, 0.8)).verdict == REPRODUCED
    assert CH.claim_dominance(_points(0.05, 0.8)).verdict == DIFFERS
    none = CH.claim_dominance(_points(0.2, 0.8).iloc[:1])
    assert none.verdict == NOT_RUN and none.explanation.startswith("Too little evidence: 0 of the 1 benchmark points")
    few = CH.claim_dominance(_points(0.2, 0.8, n=5))     # audit D9: counts, not the rule, under too little evidence
    assert few.explanation.startswith("Too little evidence: 0 of the 1 benchmark points")
    assert "0 of the 1 benchmark points (isolation forest, 1-LOF) computed rest on at least 30" in few.why


def test_dominance_is_strict_and_needs_enough_counterfactuals():
    assert CH.claim_dominance(_points(0.1, 0.9)).verdict == DIFFERS  # a tie dominates nothing
    assert CH.claim_dominance(_points(0.1, 0.8)).verdict == DIFFERS  # equal distance: not strictly closer
    assert CH.claim_dominance(_points(0.2, 0.8, n=5)).verdict == NOT_RUN


def test_a_target_judged_on_too_few_counterfactuals_is_not_run():
    label = "Robust-SAA (beta=0.05)"
    assert CH.claim_robust_saa_spambase(_curves([("Spambase", label, 0.9, 0.99)], n=8)).verdict == NOT_RUN
    assert CH.meets_targets(_curves([("Spambase", label, 0.9, 0.99)], n=8), dataset="Spambase", label=label) is None


def test_solve_time_claim_is_not_run_on_an_empty_table():
    times = pd.DataFrame({"ratio": [1.2, 1.9, float("nan")], "solved": CH.MIN_SOLVES})
    assert CH.claim_solve_time(times).verdict == REPRODUCED
    assert CH.claim_solve_time(times.assign(ratio=[1.2, 2.5, 1.0])).verdict == DIFFERS
    assert CH.claim_solve_time(times.iloc[:0]).verdict == NOT_RUN
    assert CH.claim_solve_time(pd.DataFrame({"ratio": [float("nan")], "solved": 50})).verdict == NOT_RUN
    few = CH.claim_solve_time(times.assign(ratio=[1.2, 2.99, 1.0], solved=5))   # audit D6: a handful of solves
    assert few.verdict == NOT_RUN and "0 of 3 rows rest on at least 20 solves" in few.why


def test_importance_claim():
    enough = pd.Series({"COMPAS": 30, "Spambase": 30})
    assert CH.claim_importance(pd.Series({"COMPAS": 0.7, "Spambase": 0.6}), counterfactuals=enough).verdict == REPRODUCED
    assert CH.claim_importance(pd.Series({"COMPAS": 0.7, "Spambase": 0.4}), counterfactuals=enough).verdict == DIFFERS
    assert CH.claim_importance(pd.Series(dtype=float)).verdict == NOT_RUN
    # audit D6: Spambase's 0.42 from two factuals does not decide
    few = CH.claim_importance(pd.Series({"COMPAS": 0.7, "Spambase": 0.42}),
                              counterfactuals=pd.Series({"COMPAS": 30, "Spambase": 2}))
    assert few.verdict == REPRODUCED and few.ours == "COMPAS 0.70" and "1 of 2 datasets" in few.why
    assert CH.claim_importance(pd.Series({"COMPAS": 0.7})).verdict == NOT_RUN          # counts unknown
    tables = {"COMPAS": pd.DataFrame({"importance": [0.5], "change": [0.5], "counterfactuals": [12]})}
    assert CH.change_counts(tables).to_dict() == {"COMPAS": 12}


def test_large_forests_claim():
    assert CH.claim_large_forests(_table1({"Spambase": 20})).verdict == REPRODUCED
    assert CH.claim_large_forests(_table1({"Spambase": 70})).verdict == DIFFERS
    assert CH.claim_large_forests(_table1({"Spambase": 40})).verdict == DIFFERS  # the paper: "falls below 25%"
    assert CH.claim_large_forests(_table1({"COMPAS": 20})).verdict == NOT_RUN
    assert CH.claim_large_forests(_table1({"Spambase": 20})).paper.startswith("24% on Spambase")


def test_evolving_claims_need_every_dataset_and_the_three_robust_saa_curves():
    small = set(CH.EVOLVING_ROBUST)
    rows = [(d, "Direct-SAA", 0.9, 0.5 if d in small else 0.95) for d in CH.ENSEMBLE_DATASETS]
    assert CH.claim_evolving_direct(_curves(rows)).verdict == REPRODUCED
    assert "misses: German-Credit, Spambase, Students-Performance" in CH.claim_evolving_direct(_curves(rows)).ours
    all_meet = [(d, "Direct-SAA", 0.9, 0.95) for d in CH.ENSEMBLE_DATASETS]
    assert CH.claim_evolving_direct(_curves(all_meet)).verdict == DIFFERS
    assert CH.claim_evolving_direct(_curves(rows[:-1])).verdict == NOT_RUN
    label = "Robust-SAA (beta=0.05)"
    robust = [(d, label, 0.9, 0.99) for d in small]
    assert CH.claim_evolving_robust(_curves(robust)).verdict == REPRODUCED
    assert CH.claim_evolving_robust(_curves(robust[:-1] + [(robust[-1][0], label, 0.9, 0.5)])).verdict == DIFFERS
    assert CH.claim_evolving_robust(_curves(robust[:-1])).verdict == NOT_RUN


def test_evolving_naive_table_puts_fixed_and_evolving_validity_side_by_side():
    def frame(valid):
        return pd.DataFrame({"dataset": "COMPAS", "method": "naive", "valid_retrained": valid, "distance": 1.0,
                             "n_changed": 1})
    table = CH.evolving_naive_table(frame([True, False]), frame([True, True, True, False]))
    assert (table.loc[0, "evolving data [%]"], table.loc[0, "fixed data [%]"], table.loc[0, "n"]) == (50, 75, 2)
    assert CH.evolving_naive_table(frame([]), frame([True])).empty


def test_tables_of_an_empty_store_keep_their_columns():
    empty = CH.simulation_frame([None, None])
    assert {"target", "label", "rate", "high"} <= set(CH.saa_curves(empty).columns) and CH.saa_curves(empty).empty
    assert {"label", "parameter", "distance", "rate"} <= set(CH.benchmark_points(empty).columns)
    assert CH.solve_time_frame(empty).empty and CH.benchmark_time_ratio(CH.solve_time_frame(empty)).empty
    claims = CH.claims(checks=CH.check_counts(empty), table1=CH.naive_validity_table(empty),
                       curves=CH.saa_curves(empty), points=CH.benchmark_points(empty),
                       times=CH.solve_time_table(empty), correlation=pd.Series(dtype=float),
                       table3=CH.naive_validity_table(empty), datasets=[], evolving_curves=CH.saa_curves(empty))
    assert {c.verdict for c in claims} == {NOT_RUN}


def test_sparse_adult_claim_weighs_each_alpha_by_its_counterfactuals():
    curves = pd.DataFrame({"dataset": ["Adult", "Adult", "Credit-Card-Default"], "label": "Direct-SAA",
                           "n_changed": [1.0, 4.0, 2.0], "n": [3, 1, 4]})
    assert CH.claim_sparse_adult(curves).verdict == REPRODUCED          # (3 + 4) / 4 = 1.75 < 2
    assert CH.claim_sparse_adult(curves.assign(n=[1, 3, 4])).verdict == DIFFERS   # 13 / 4 > 2
    assert CH.claim_sparse_adult(curves.iloc[:2]).verdict == NOT_RUN


def test_a_target_missed_on_enough_counterfactuals_decides_its_dataset_whatever_a_short_rate_lacks():
    # audit4: as A1 one level down. Adult misses the 50% target on 100 counterfactuals (interval up to 30%),
    # so it does not meet every target, whatever its 99% rate on 10 counterfactuals would show
    adult = [("Adult", "Direct-SAA", 0.5, 0.3, 100), ("Adult", "Direct-SAA", 0.99, 0.5, 10)]
    curves = pd.DataFrame(adult + [("Spambase", "Direct-SAA", 0.9, 0.5, 100)],
                          columns=["dataset", "label", "target", "high", "n"])
    assert CH.meets_targets(curves, dataset="Adult") is False
    assert CH.claim_direct_saa_targets(curves, datasets=["Adult", "Spambase"]).verdict == DIFFERS
    robust = "Robust-SAA (beta=0.05)"
    evolving = pd.DataFrame([("Spambase", robust, 0.5, 0.3, 100), ("Spambase", robust, 0.99, 0.5, 10),
                             ("German-Credit", robust, 0.9, 0.99, 100),
                             ("Students-Performance", robust, 0.9, 0.99, 100)],
                            columns=["dataset", "label", "target", "high", "n"])
    assert CH.claim_evolving_robust(evolving).verdict == DIFFERS
    # a short rate alone still decides nothing: a miss on 10 counterfactuals is noise
    short = pd.DataFrame([("Adult", "Direct-SAA", 0.99, 0.5, 10)], columns=["dataset", "label", "target", "high", "n"])
    assert CH.meets_targets(short, dataset="Adult") is None
