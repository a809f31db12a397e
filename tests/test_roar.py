"""ROAR (Upadhyay et al. 2021): the LIME-style surrogate, the closed-form inner problem, and the recourse."""

import itertools

import numpy as np
import pytest
import torch
from sklearn.datasets import make_moons
from torch import nn

from explainopt.counterfactuals import roar as R
from explainopt.encoders import model_predict


def linear_net(w, b) -> nn.Sequential:
    net = nn.Sequential(nn.Linear(len(w), 1)).double()
    with torch.no_grad():
        net[0].weight[:] = torch.tensor([w], dtype=torch.float64)
        net[0].bias[:] = torch.tensor([b], dtype=torch.float64)
    return net.eval()


@pytest.fixture(scope="module")
def linear():
    X = np.random.default_rng(0).uniform(0, 1, (400, 3))
    return X, linear_net([2.0, -1.0, 1.5], -1.5)


def test_worst_shift_matches_brute_force_over_the_vertices_of_the_ball():
    rng = np.random.default_rng(1)
    for _ in range(20):
        w, b, x, d = rng.normal(size=3), rng.normal(), rng.uniform(0, 1, 3), rng.uniform(0, 0.5)
        surrogate = R.LinearSurrogate(w, b, 1.0)
        brute = min((w + np.array(s[:3])) @ x + b + s[3] for s in itertools.product([-d, d], repeat=4))
        dw, db = R.worst_shift(x, d)
        assert R.robust_score(surrogate, x, d) == pytest.approx(brute)
        assert (w + dw) @ x + b + db == pytest.approx(brute)


def test_lime_surrogate_recovers_a_linear_models_boundary(linear):
    X, net = linear
    x0 = np.array([0.2, 0.6, 0.3])
    s = R.lime_surrogate(net, x0, X, n_samples=3000)
    true = np.array([2.0, -1.0, 1.5])
    assert s.w @ true / (np.linalg.norm(s.w) * np.linalg.norm(true)) > 0.98 and s.fidelity > 0.95


def test_lime_surrogate_is_reproducible_and_rejects_wrong_shapes(linear):
    X, net = linear
    a, b = (R.lime_surrogate(net, X[0], X, n_samples=500, random_state=3) for _ in range(2))
    assert np.array_equal(a.w, b.w) and a.b == b.b
    with pytest.raises(ValueError, match="features"):
        R.lime_surrogate(net, X[0, :2], X)


def test_roar_is_valid_and_robust_to_every_shift_of_the_surrogate_it_claims(linear):
    X, net = linear
    x0 = np.array([0.2, 0.6, 0.3])
    assert model_predict(net, x0[None])[0] == 0
    res = R.roar(net, x0, X, delta_max=0.1)
    assert res.detail == "valid" and model_predict(net, res.x[None])[0] == 1
    assert ((res.x >= 0) & (res.x <= 1)).all() and res.solver == R.GRADIENT_SOLVER
    assert res.robust_score > 0  # then every surrogate in the ball gives class 1: check its vertices
    scores = [(res.surrogate.w + np.array(s[:3])) @ res.x + res.surrogate.b + s[3]
              for s in itertools.product([-0.1, 0.1], repeat=4)]
    assert min(scores) == pytest.approx(res.robust_score) and min(scores) > 0


def test_a_larger_ball_costs_more_and_buys_a_larger_robust_margin(linear):
    X, net = linear
    x0 = np.array([0.2, 0.6, 0.3])
    small, large = (R.roar(net, x0, X, delta_max=d, lambdas=(0.05,)) for d in (0.0, 0.2))
    assert np.abs(large.x - x0).sum() > np.abs(small.x - x0).sum()
    assert R.robust_score(large.surrogate, large.x, 0.2) > R.robust_score(small.surrogate, small.x, 0.2)


def test_roar_on_a_network_takes_the_cheapest_valid_lambda():
    X, y = make_moons(300, noise=0.2, random_state=0)
    X = (X - X.min(0)) / (X.max(0) - X.min(0))
    torch.manual_seed(0)
    from explainopt.chapters.proplace import train_network
    net = train_network(X, y, width=6, epochs=20, random_state=0)
    x0 = X[model_predict(net, X) == 0][0]
    res = R.roar(net, x0, X, delta_max=0.05)
    assert res.detail == "valid" and model_predict(net, res.x[None])[0] == 1
    earlier = R.LAMBDAS[: R.LAMBDAS.index(res.lam)]  # every larger lambda of the schedule failed
    assert all(model_predict(net, R.roar_recourse(res.surrogate, x0, delta_max=0.05, lam=lam)[None])[0] == 0
               for lam in earlier)
