"""CLEMO: weights, losses and gradients, LR/DTR benchmarks, the three fits, stability measures."""

import numpy as np
import pytest
from scipy.optimize import check_grad

from explainopt import clemo
from explainopt.problems import ShortestPath, pisinger_instance


@pytest.fixture(scope="module")
def kp_data():
    return clemo.build_dataset(pisinger_instance(6, random_state=0), n_samples=300, random_state=42)


@pytest.fixture(scope="module")
def spp_data():
    return clemo.build_dataset(ShortestPath.from_registry(), n_samples=300, random_state=42)


def test_rbf_weights_follow_code_and_paper_kernels():
    theta = np.array([[0.0], [1.0], [2.0]])
    w_code, nu = clemo.rbf_weights(theta, kernel="code")
    w_paper, _ = clemo.rbf_weights(theta, kernel="paper")
    assert nu == pytest.approx(1.0)
    assert w_code[2] == pytest.approx(np.exp(-4 / 2)) and w_paper[2] == pytest.approx(np.exp(-4))
    with pytest.raises(ValueError, match="kernel"):
        clemo.rbf_weights(theta, kernel="gauss")


def test_first_sample_is_theta0_with_weight_one(kp_data):
    assert kp_data.weights[0] == 1.0 and np.all(kp_data.weights <= 1.0)


def test_gradient_matches_finite_differences(kp_data, spp_data):
    for data in (kp_data, spp_data):
        lr = clemo.fit_lr(data)
        lam = clemo.balance_lambdas(lr.terms)
        B = lr.coef + 1e-3
        f = lambda b: clemo.loss_and_gradient(data, b.reshape(B.shape), lam)[0]
        g = lambda b: clemo.loss_and_gradient(data, b.reshape(B.shape), lam)[1].ravel()
        assert check_grad(f, g, B.ravel()) <= 1e-4 * np.linalg.norm(g(B.ravel())) + 1e-6


def test_true_targets_are_coherent(kp_data):
    terms = clemo.loss_terms(kp_data, kp_data.y[:, 0], kp_data.y[:, 1:])
    assert terms["A1"] == pytest.approx(0) and terms["C1"] == pytest.approx(0, abs=1e-12)
    assert terms["C2"] == pytest.approx(0, abs=1e-9)


def test_lr_is_objective_coherent_in_expectation_for_fixed_costs():
    # Theorem A.1: with c fixed, independent least squares fits are coherent (3); here v varies, so only check
    # that LR reproduces weighted least squares exactly.
    data = clemo.build_dataset(pisinger_instance(4, random_state=1), n_samples=200, random_state=0)
    lr = clemo.fit_lr(data)
    W = data.weights
    beta = np.linalg.solve(data.X.T @ (W[:, None] * data.X), data.X.T @ (W * data.y[:, 0]))
    assert np.allclose(lr.coef[:, 0], beta)


def test_balance_lambdas_paper_rule():
    lam = clemo.balance_lambdas({"A1": 10.0, "A2": 0.0, "C1": 1.0, "C2": 0.5})
    assert lam == {"A1": 1.0, "A2": 1.0, "C1": 5.0, "C2": 10.0}
    assert clemo.balance_lambdas({"A1": 10.0, "A2": 0.0, "C1": 1.0, "C2": 0.5}, rule="code")["C2"] == 10.0


def test_clemo_loss_decreases_from_lr_warm_start(spp_data):
    lr = clemo.fit_lr(spp_data)
    for method in ("slsqp", "lbfgs"):
        fit = clemo.fit_clemo(spp_data, method=method, warm_start=lr)
        assert fit.loss < clemo.total_loss(lr.terms, fit.lambdas)
        assert fit.terms["C1"] + fit.terms["C2"] < lr.terms["C1"] + lr.terms["C2"]


def test_convex_path_is_at_least_as_good_as_slsqp(kp_data):
    lr = clemo.fit_lr(kp_data)
    slsqp = clemo.fit_clemo(kp_data, method="slsqp", warm_start=lr)
    primal = clemo.fit_clemo(kp_data, method="convex", warm_start=lr, formulation="primal")
    dual = clemo.fit_clemo(kp_data, method="convex", warm_start=lr, formulation="dual")
    assert primal.loss <= slsqp.loss * (1 + 1e-6)
    assert dual.loss == pytest.approx(primal.loss, rel=1e-5)


def test_convex_path_refuses_logistic_components(spp_data):
    with pytest.raises(ValueError, match="continuous"):
        clemo.fit_clemo(spp_data, method="convex")


def test_slsqp_time_limit_returns_best_iterate_not_worse_than_warm_start(kp_data):
    lr = clemo.fit_lr(kp_data)
    fit = clemo.fit_clemo(kp_data, method="slsqp", warm_start=lr, time_limit=0.0)
    assert fit.status == "time_limit" and np.isfinite(fit.loss)
    assert fit.loss <= clemo.total_loss(lr.terms, fit.lambdas) * (1 + 1e-12)
    assert fit.loss == pytest.approx(min(h[2] for h in fit.history))


def test_paper_tables_sit_beside_ours():
    import pandas as pd

    rows = [{"method": m, "accuracy": 3.0, "objective_accuracy": 1.0, "objective_incoherence": 0.5,
             "feasibility_incoherence": 0.25, "fit_time_s": 0.1, "status": "converged"} for m in ("LR", "CLEMO (SLSQP)")]
    t1 = clemo.with_paper_rows(clemo.rows_table(rows), clemo.PAPER_TABLE1)
    assert list(t1.index) == ["LR", "CLEMO (SLSQP)", "LR (paper)", "CLEMO (paper)"]
    assert t1.loc["CLEMO (paper)", "incoherence: objective"] == 6.91
    assert t1.loc["LR", "accuracy: decisions"] == 2.0
    idx = pd.MultiIndex.from_product([["uncorrelated"], ["DTR", "LR", "CLEMO"]], names=["kind", "method"])
    t2 = pd.DataFrame({"accuracy_mean": [3.0, 1.0, 1.2], "objective_mean": [1.0, 0.4, 0.1],
                       "feasibility_mean": [2.0, 1.0, 0.01]}, index=idx)
    vs = clemo.knapsack_vs_paper(t2)
    assert vs.loc[("uncorrelated", "CLEMO"), "accuracy (paper)"] == 479
    assert np.isnan(vs.loc[("uncorrelated", "CLEMO"), "FSI (ours)"])
    ratios = clemo.clemo_vs_lr(t2).loc["uncorrelated"]
    assert ratios["accuracy cost (ours)"] == pytest.approx(0.2)
    assert ratios["feasibility cut (ours)"] == pytest.approx(0.99)
    assert ratios["objective cut (paper)"] == pytest.approx(1 - 0.08 / 0.24)


def test_dtr_predictions_have_the_target_shape(kp_data):
    dtr = clemo.fit_dtr(kp_data)
    assert dtr.x_hat.shape == (kp_data.n_samples, len(kp_data.explained))
    assert dtr.importances.shape == (1 + len(kp_data.explained), kp_data.X.shape[1] - 1)


def test_stability_measures_on_identical_and_shuffled_resamples(rng):
    c = rng.normal(size=(3, 8))
    assert clemo.feature_stability_index([c, c, c]) == pytest.approx(5.0)
    assert clemo.stability([c, c])["std"] == 0.0
    shuffled = [c[:, rng.permutation(8)] for _ in range(6)]
    assert clemo.feature_stability_index(shuffled) < 5.0
    with pytest.raises(ValueError):
        clemo.feature_stability_index([c])
