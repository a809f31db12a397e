"""CLEMO: weights, losses and gradients, LR/DTR benchmarks, the three fits, stability measures."""

import itertools

import numpy as np
import pytest
from scipy.optimize import check_grad
from threadpoolctl import threadpool_limits

from explainopt import clemo
from explainopt.problems import ShortestPath, pisinger_instance, solve_many


@pytest.fixture(autouse=True, scope="module")
def one_blas_thread():
    """Dense algebra on a shared machine: one BLAS thread (as the chapter runs it)."""
    with threadpool_limits(limits=1, user_api="blas"):
        yield


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


def test_fits_and_data_sets_name_the_solvers_that_ran(kp_data, spp_data):
    assert kp_data.solver == "highs" and spp_data.solver == "networkx-dijkstra"
    lr = clemo.fit_lr(kp_data)
    assert clemo.fit_clemo(kp_data, method="slsqp", warm_start=lr, maxiter=5).solver == "scipy-slsqp"
    assert clemo.fit_clemo(kp_data, method="lbfgs", warm_start=lr, maxiter=5).solver == "scipy-lbfgsb"
    assert clemo.fit_clemo(kp_data, method="convex", warm_start=lr).solver == "clemo-dual"
    assert clemo.fit_clemo(kp_data, method="convex", warm_start=lr, formulation="primal").solver == "clarabel"


@pytest.mark.filterwarnings("ignore:invalid value encountered in matmul")  # cvxpy's bound propagation for HiGHS
def test_convex_path_uses_the_solver_it_is_given(kp_data):
    lr = clemo.fit_lr(kp_data)
    default = clemo.fit_clemo(kp_data, method="convex", warm_start=lr, formulation="primal")
    highs = clemo.fit_clemo(kp_data, method="convex", warm_start=lr, formulation="primal", solver="highs")
    assert highs.solver == "highs"
    assert highs.loss == pytest.approx(default.loss, rel=1e-5)


def test_predict_at_other_features_extends_the_fit(kp_data):
    lr = clemo.fit_lr(kp_data)
    f_hat, x_hat = clemo.predict(kp_data, lr.coef, features=kp_data.X[:, :-1])
    assert np.allclose(f_hat, lr.f_hat) and np.allclose(x_hat, lr.x_hat)


def test_convex_path_refuses_logistic_components(spp_data):
    with pytest.raises(ValueError, match="continuous"):
        clemo.fit_clemo(spp_data, method="convex")


def test_slsqp_time_limit_returns_best_iterate_not_worse_than_warm_start(kp_data):
    lr = clemo.fit_lr(kp_data)
    fit = clemo.fit_clemo(kp_data, method="slsqp", warm_start=lr, time_limit=0.0)
    assert fit.status == "time_limit" and np.isfinite(fit.loss)
    assert fit.loss <= clemo.total_loss(lr.terms, fit.lambdas) * (1 + 1e-12)
    assert fit.loss == pytest.approx(min(h[2] for h in fit.history))


def test_history_records_loss_and_incoherence_per_iteration(kp_data):
    fit = clemo.fit_clemo(kp_data, method="lbfgs", maxiter=5)
    it, seconds, loss, incoherence = fit.history[-1]
    assert [h[0] for h in fit.history] == list(range(len(fit.history)))
    terms = clemo.linear_loss_terms(kp_data, fit.coef)
    assert incoherence == pytest.approx(terms["C1"] + terms["C2"]) and loss >= fit.loss * (1 - 1e-12)


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


def test_dataset_from_solutions_equals_build_dataset():
    problem = pisinger_instance(4, random_state=3)
    data = clemo.build_dataset(problem, n_samples=50, random_state=7)
    thetas = problem.sample(50, random_state=7)
    again = clemo.dataset_from_solutions(problem, thetas, solve_many(problem, thetas))
    assert np.array_equal(again.y, data.y) and np.array_equal(again.weights, data.weights)
    with pytest.raises(ValueError, match="solutions"):
        clemo.dataset_from_solutions(problem, thetas, solve_many(problem, thetas[:3]))


# --------------------------------------------------------------------------- the convex path's dual

def brute_force_box_qp(G, h, upper):
    """min ½αᵀGα − hᵀα on the box by enumerating which coordinates sit at 0, at the upper bound or free."""
    best, n = (np.inf, None), len(h)
    for sides in itertools.product((0, 1, 2), repeat=n):
        alpha = np.where(np.array(sides) == 1, upper, 0.0)
        free = np.array(sides) == 2
        if free.any():
            rhs = h[free] - G[np.ix_(free, ~free)] @ alpha[~free]
            sol, *_ = np.linalg.lstsq(G[np.ix_(free, free)], rhs, rcond=None)
            if np.any(sol < -1e-12) or np.any(sol > upper[free] + 1e-12):
                continue
            alpha[free] = sol
        value = 0.5 * alpha @ G @ alpha - h @ alpha
        best = min(best, (value, tuple(alpha)), key=lambda t: t[0])
    return best[0]


@pytest.mark.parametrize("rank", [5, 2, 0])
def test_box_qp_matches_brute_force_including_singular_matrices(rng, rank):
    for _ in range(5):
        F = rng.normal(size=(5, rank))
        G, h, upper = F @ F.T, rng.normal(size=5) * 3, rng.uniform(0.5, 2.0, 5)
        alpha, iterations = clemo._box_qp(G, h, upper)
        assert np.all(alpha >= 0) and np.all(alpha <= upper) and iterations < 100
        value = 0.5 * alpha @ G @ alpha - h @ alpha
        assert value == pytest.approx(brute_force_box_qp(G, h, upper), abs=1e-8 * (1 + abs(value)))


def synthetic_data(rng, *, n=80, k=3, q=4, eq_rows=0, in_rows=1, per_sample=False):
    """A random ClemoData with continuous components and the requested coherence structure."""
    X = np.column_stack([rng.normal(size=(n, k)), np.ones(n)])
    decisions = rng.uniform(size=(n, q))
    Ce = rng.uniform(0.5, 1.5, size=(n, q))

    def rows(m):
        shape = (n, m, q) if per_sample else (m, q)
        return rng.normal(size=shape), rng.normal(size=(n, m))

    Ae_eq, r0_eq = rows(eq_rows)
    Ae_in, r0_in = rows(in_rows)
    return clemo.ClemoData(theta=X[:, :-1], X=X, weights=rng.uniform(0.1, 1.0, n), width=1.0,
                           objective=np.sum(Ce * decisions, axis=1) + rng.normal(scale=0.1, size=n),
                           decisions=decisions, explained=np.arange(q), binary=np.zeros(q, dtype=bool), Ce=Ce,
                           f0=np.zeros(n), Ae_eq=Ae_eq, r0_eq=r0_eq, Ae_in=Ae_in, r0_in=r0_in,
                           feature_names=[f"t{j}" for j in range(k)] + ["intercept"],
                           component_names=["f"] + [f"x{j}" for j in range(q)])


@pytest.mark.parametrize("structure", [dict(), dict(in_rows=3), dict(in_rows=2, per_sample=True),
                                       dict(eq_rows=2, in_rows=1), dict(eq_rows=1, in_rows=0, per_sample=True)])
def test_dual_path_reaches_the_primal_optimum_with_a_certified_gap(rng, structure):
    data = synthetic_data(rng, **structure)
    lambdas = {"A1": 1.0, "A2": 1.0, "C1": 3.0, "C2": 5.0}
    dual = clemo.fit_clemo(data, method="convex", lambdas=lambdas, formulation="dual")
    primal = clemo.fit_clemo(data, method="convex", lambdas=lambdas, formulation="primal")
    assert dual.solver == "clemo-dual" and dual.status == "optimal"
    assert dual.loss == pytest.approx(primal.loss, rel=1e-6)
    assert 0 <= dual.info["gap"] <= clemo.DUAL_GAP_TOL * dual.loss
    # the certificate is a bound: no coefficients do better than the dual's loss minus its gap
    for _ in range(20):
        B = dual.coef + rng.normal(scale=1e-2, size=dual.coef.shape)
        assert clemo.total_loss(clemo.linear_loss_terms(data, B), lambdas) >= dual.loss - dual.info["gap"] - 1e-9


def test_dual_path_falls_back_to_the_primal_when_its_gap_is_not_certified(kp_data, monkeypatch):
    monkeypatch.setattr(clemo, "DUAL_GAP_TOL", -1.0)
    fit = clemo.fit_clemo(kp_data, method="convex", formulation="dual")
    assert fit.solver == "clarabel" and fit.status == "optimal"


def test_convex_auto_path_chooses_by_size_and_solver(kp_data):
    assert clemo.fit_clemo(kp_data, method="convex").solver == "clemo-dual"          # 49 coefficients, 300 rows
    assert clemo.fit_clemo(kp_data, method="convex", solver="clarabel").solver == "clarabel"
    small = clemo.build_dataset(pisinger_instance(2, random_state=0), n_samples=300, random_state=1)
    assert clemo.fit_clemo(small, method="convex").solver == "clarabel"              # 300 rows > 10 x 15 coefficients
    with pytest.raises(ValueError, match="formulation"):
        clemo.fit_clemo(kp_data, method="convex", formulation="kkt")
