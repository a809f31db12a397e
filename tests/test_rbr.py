"""Robust Bayesian Recourse (Nguyen et al. 2022): the closed-form worst case, the projection, the recourse."""

import cvxpy as cp
import numpy as np
import pytest
from sklearn.datasets import make_moons

from explainopt.chapters.proplace import train_network
from explainopt.counterfactuals import rbr as R
from explainopt.encoders import model_predict


def kernel_log(r, sigma):
    return -r ** 2 / (2 * sigma ** 2)


def test_worst_case_odds_is_the_brute_force_worst_case_of_one_sample_per_class():
    rng = np.random.default_rng(0)
    x, xi0, xi1, sigma, eps = rng.uniform(0, 1, 3), rng.uniform(0, 1, 3), rng.uniform(0, 1, 3), 0.5, 0.1
    f, _ = R.worst_case_odds(x, xi0[None], xi1[None], sigma=sigma, eps_op=eps, eps_pe=eps)
    u = rng.standard_normal((20000, 3))
    ball = eps * u / np.linalg.norm(u, axis=1, keepdims=True)  # the sphere: the extremes of a ball lie on it
    sup0 = kernel_log(np.linalg.norm(x - (xi0 + ball), axis=1), sigma).max()
    inf1 = kernel_log(np.linalg.norm(x - (xi1 + ball), axis=1), sigma).min()
    assert sup0 - inf1 <= f + 1e-12 and f - (sup0 - inf1) < 1e-3


def test_worst_case_odds_gradient_matches_finite_differences():
    rng = np.random.default_rng(1)
    S0, S1, x = rng.uniform(0, 1, (30, 4)), rng.uniform(0, 1, (20, 4)), rng.uniform(0, 1, 4)
    f, g = R.worst_case_odds(x, S0, S1, sigma=0.7, eps_op=0.05, eps_pe=0.1)
    h = 1e-6
    numeric = [(R.worst_case_odds(x + h * e, S0, S1, sigma=0.7, eps_op=0.05, eps_pe=0.1)[0] - f) / h for e in np.eye(4)]
    assert np.allclose(g, numeric, atol=1e-4)


def test_projection_onto_the_l1_ball_and_box_matches_a_convex_solver():
    rng = np.random.default_rng(2)
    for _ in range(5):
        x0, v, budget = rng.uniform(0, 1, 5), rng.uniform(-0.5, 1.5, 5), rng.uniform(0.05, 1.0)
        p = R.project_l1_box(v, x0, budget)
        z = cp.Variable(5)
        cp.Problem(cp.Minimize(cp.sum_squares(z - v)), [cp.norm1(z - x0) <= budget, z >= 0, z <= 1]).solve()
        assert np.allclose(p, z.value, atol=1e-5) and np.abs(p - x0).sum() <= budget + 1e-9


def test_rbr_is_valid_within_its_budget_and_the_budget_is_nearly_the_smallest():
    X, y = make_moons(300, noise=0.2, random_state=0)
    X = (X - X.min(0)) / (X.max(0) - X.min(0))
    net = train_network(X, y, width=6, epochs=20, random_state=0)
    x0 = X[model_predict(net, X) == 0][0]
    res = R.rbr(net, x0, n_bisection=8)
    assert res.detail == "valid" and model_predict(net, res.x[None])[0] == 1 and res.solver == R.SOLVER
    assert np.abs(res.x - x0).sum() <= res.budget + 1e-9 and ((res.x >= 0) & (res.x <= 1)).all()
    S0, S1 = R.rbr_samples(net, x0)
    smaller, _ = R.rbr_recourse(x0, S0, S1, budget=res.budget - 1.0 / 2 ** 8, eps_pe=0.05)
    assert model_predict(net, smaller[None])[0] == 0  # one bisection step less budget: not valid


def test_rbr_samples_are_labelled_by_the_model_and_widen_until_one_is_favourable():
    X, y = make_moons(300, noise=0.2, random_state=0)
    X = (X - X.min(0)) / (X.max(0) - X.min(0))
    net = train_network(X, y, width=6, epochs=20, random_state=0)
    x0 = X[model_predict(net, X) == 0][0]
    S0, S1 = R.rbr_samples(net, x0, perturb_radius=0.01)
    assert len(S1) and (model_predict(net, S1) == 1).all() and (model_predict(net, S0) == 0).all()
    with pytest.raises(ValueError, match="class 1"):
        R.rbr_samples(net, x0, perturb_radius=1e-6, max_doublings=0)
