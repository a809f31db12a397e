"""Robust Bayesian Recourse (Nguyen et al. 2022) as its reference code runs it: boundary point, samples,
projection, the recourse."""

import cvxpy as cp
import numpy as np
import pytest
from sklearn.datasets import make_moons

from explainopt.chapters.proplace import train_network
from explainopt.counterfactuals import rbr as R
from explainopt.encoders import model_predict


@pytest.fixture(scope="module")
def moons():
    X, y = make_moons(300, noise=0.2, random_state=0)
    X = (X - X.min(0)) / (X.max(0) - X.min(0))
    net = train_network(X, y, width=6, epochs=20, random_state=0)
    return X, net, X[model_predict(net, X) == 0]


def test_projection_onto_the_l1_ball_matches_a_convex_solver():
    rng = np.random.default_rng(2)
    for _ in range(5):
        x0, v, radius = rng.uniform(0, 1, 5), rng.uniform(-0.5, 1.5, 5), rng.uniform(0.05, 1.0)
        p = R.project_l1(v, x0, radius)
        z = cp.Variable(5)
        cp.Problem(cp.Minimize(cp.sum_squares(z - v)), [cp.norm1(z - x0) <= radius]).solve()
        assert np.allclose(p, z.value, atol=1e-5) and np.abs(p - x0).sum() <= radius + 1e-9
    inside = x0 + 0.01
    np.testing.assert_array_equal(R.project_l1(inside, x0, 1.0), inside)


def test_ball_samples_are_in_the_ball_and_follow_the_seed():
    center = np.array([0.3, 0.7, 0.5])
    S = R.ball_samples(center, radius=0.2, n=500, random_state=4)
    assert S.shape == (500, 3) and (np.linalg.norm(S - center, axis=1) <= 0.2 + 1e-12).all()
    np.testing.assert_array_equal(S, R.ball_samples(center, radius=0.2, n=500, random_state=4))
    assert np.linalg.norm(S - center, axis=1).max() > 0.19  # they fill the ball, not a shell inside it


def test_boundary_point_is_the_closest_first_flip_on_the_segments(moons):
    X, net, X0 = moons
    x0 = X0[0]
    x_b = R.boundary_point(net, x0, X)
    assert model_predict(net, x_b[None])[0] == 1
    others = X[model_predict(net, X) == 1]
    lambdas = np.linspace(0, 1, 100)
    firsts = []
    for z in others:  # brute force, one segment at a time
        pts = (1 - lambdas)[:, None] * x0 + lambdas[:, None] * z
        firsts.append(pts[np.argmax(model_predict(net, pts) == 1)])
    assert np.abs(x_b - x0).sum() == pytest.approx(min(np.abs(f - x0).sum() for f in firsts))


def test_matches_the_reference_code_on_a_fixed_small_case(moons):
    """The reference code (``rbr/rbr.py`` of junqi-jiang/proplace, ``run_rbr``'s settings, a fresh
    ``RandomState(10)`` per factual), run by ``benchmarks/baselines.py``'s ``AuthorsModel`` on this network,
    returned these points (float32); ours runs in float64."""
    X, net, X0 = moons
    theirs = [[0.6256495118141174, 0.5066696405410767], [0.17408478260040283, 0.28166627883911133]]
    for x0, x in zip(X0[:2], theirs):
        res = R.rbr(net, x0, X)
        np.testing.assert_allclose(res.x, x, atol=1e-6)
        assert res.detail == "valid" and res.solver == R.SOLVER
        assert np.abs(res.x - x0).sum() <= res.budget + 1e-9


def test_an_invalid_recourse_is_returned_and_says_so(moons):
    X, net, X0 = moons
    res = R.rbr(net, X0[0], X, max_iter=1, delta_plus=0.0, perturb_radius=0.05)
    assert res.x is not None and res.iterations == 1
    assert res.detail == ("valid" if model_predict(net, res.x[None])[0] == 1 else "not_valid")


def test_bad_inputs_are_named(moons):
    X, net, X0 = moons
    with pytest.raises(ValueError, match="x0"):
        R.rbr(net, X0[0, :1], X)
    with pytest.raises(ValueError, match="labelled otherwise"):
        R.boundary_point(net, X0[0], X0)
