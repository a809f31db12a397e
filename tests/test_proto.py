"""Prototype-guided counterfactuals (Van Looveren and Klaise 2021) and Proto-R (Jiang et al. 2023)."""

import numpy as np
import pytest
import torch
from sklearn.datasets import make_moons
from torch import nn

from explainopt.chapters.proplace import train_network
from explainopt.counterfactuals import proto as P
from explainopt.encoders import interval_lower, model_predict, network_layers


@pytest.fixture(scope="module")
def moons():
    X, y = make_moons(300, noise=0.2, random_state=0)
    X = (X - X.min(0)) / (X.max(0) - X.min(0))
    net = train_network(X, y, width=6, epochs=20, random_state=0)
    return X, net, X[model_predict(net, X) == 0][:2]


def test_logit_gradient_matches_autograd(moons):
    X, net, _ = moons
    layers = network_layers(net)
    for x in X[:5]:
        xt = torch.as_tensor(x).requires_grad_(True)
        net(xt[None])[0, 0].backward()
        out, g = P.logit_and_gradient(layers, x)
        assert out == pytest.approx(float(net(torch.as_tensor(x)[None])[0, 0].detach())) and np.allclose(g, xt.grad.numpy())


def test_prototype_is_the_mean_of_the_k_nearest_target_points(moons):
    X, net, F = moons
    targets = X[model_predict(net, X) == 1]
    nearest = targets[np.argsort(np.linalg.norm(targets - F[0], axis=1))[:5]]
    assert np.allclose(P.prototype(net, F[0], X, k=5), nearest.mean(axis=0))


def test_base_method_on_a_line_stops_between_the_boundary_and_the_analytic_optimum():
    # f(x) = x - 0.5, x0 = 0.2, prototype 0.9: beyond the boundary the objective is (x - x0)^2 + theta (x - proto)^2
    # + beta |x - x0|, minimised at (x0 + theta proto - beta / 2) / (1 + theta) = 0.525; the method keeps the valid
    # iterate of smallest elastic-net distance, so its CE lies in (0.5, 0.525]
    net = nn.Sequential(nn.Linear(1, 1)).double()
    with torch.no_grad():
        net[0].weight[:] = 1.0
        net[0].bias[:] = -0.5
    res = P.proto_counterfactual(net, [0.2], [0.9], c=10, beta=0.1, theta=1.0)
    assert res.detail == "valid" and 0.5 < res.x[0] <= 0.525 + 1e-3


def test_base_method_finds_valid_counterfactuals_in_the_box(moons):
    X, net, F = moons
    for x0 in F:
        res = P.proto_counterfactual(net, x0, P.prototype(net, x0, X), max_iterations=300)
        assert res.detail == "valid" and model_predict(net, res.x[None])[0] == 1
        assert ((res.x >= 0) & (res.x <= 1)).all() and res.solver == P.SOLVER


def test_proto_r_returns_delta_robust_counterfactuals_or_says_not_robust(moons):
    X, net, F = moons
    for x0 in F:
        res = P.proto_r(net, x0, X, delta=0.02, max_iterations=300)
        assert res.interval_lower == pytest.approx(float(interval_lower(net, res.x, delta=0.02)[0]))
        assert (res.detail == "robust") == (res.interval_lower >= 0)
        assert model_predict(net, res.x[None])[0] == 1
    hopeless = P.proto_r(net, F[0], X, delta=1.0, max_rounds=2, max_iterations=100)
    assert hopeless.detail == "not_robust" and hopeless.interval_lower < 0 and hopeless.rounds == 3
