"""Adversarially robust recourse: Dominguez-Olmedo et al.'s Algorithm 1 (chapter 2's Table 3 baseline)."""

import numpy as np
import pytest
import torch
from scipy.special import logit
from sklearn.datasets import make_moons
from sklearn.neural_network import MLPClassifier
from sklearn.tree import DecisionTreeClassifier

from explainopt.counterfactuals.adversarial_recourse import adversarial_recourse, first_order_perturbation
from explainopt.counterfactuals.base import Counterfactual
from explainopt.counterfactuals.gradient import GRADIENT_SOLVER
from explainopt.encoders import torch_network


@pytest.fixture(scope="module")
def mlp():
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(300, 4))
    y = (X[:, 0] + X[:, 1] ** 2 > 0.8).astype(int)
    return MLPClassifier((10,), max_iter=3000, random_state=0).fit(X, y), X


@pytest.fixture(scope="module")
def moons():
    X, y = make_moons(200, noise=0.2, random_state=0)
    X = (X - X.min(0)) / (X.max(0) - X.min(0))
    mlp = MLPClassifier((8,), max_iter=2000, random_state=0).fit(X, y)
    return mlp, X[mlp.predict(X) == 0]


def test_torch_network_reproduces_the_mlp_logit(mlp):
    model, X = mlp
    net = torch_network(model)
    out = net(torch.as_tensor(X)).numpy().ravel()
    np.testing.assert_allclose(out, logit(model.predict_proba(X)[:, 1]), atol=1e-8)


def test_first_order_perturbation_has_length_rho_and_lowers_the_margin(mlp):
    model, X = mlp
    net = torch_network(model)
    for x0 in X[:5]:
        x = torch.as_tensor(x0)
        target = int(model.predict(x0[None])[0])
        s = first_order_perturbation(net, x, rho=0.1, target=target)
        assert float(torch.linalg.vector_norm(s)) == pytest.approx(0.1)
        sign = 1 if target == 1 else -1
        assert sign * float(net(x + s)) < sign * float(net(x))


def test_matches_the_authors_code_on_a_fixed_small_case(moons):
    """Their ``recourse.DifferentiableRecourse`` (RicardoDominguez/AdversariallyRobustRecourse, default
    hyperparameters, robust=True, [0, 1] box), run by ``benchmarks/baselines.py``'s ``Float32Logit`` on this
    network, returned these points (float32, as ours by default)."""
    mlp, X0 = moons
    theirs = {(0, 0.1): [0.681188702583313, 0.5143009424209595],
              (1, 0.6): [0.9087576866149902, 0.0],
              (2, 0.3): [0.35859936475753784, 0.0]}
    for (i, rho), x in theirs.items():
        res = adversarial_recourse(mlp, X0[i], rho=rho, target=1)
        np.testing.assert_allclose(res.x, x, atol=1e-6)
        assert res.valid and res.robust_by_attack and res.detail == "converged" and not res.diverged


def test_an_accepted_point_survives_its_perturbation_and_is_valid(mlp):
    model, X = mlp
    net = torch_network(model)
    for x0 in X[:3]:
        res = adversarial_recourse(model, x0, rho=0.05)
        assert isinstance(res, Counterfactual) and res.solver == GRADIENT_SOLVER and res.time > 0
        assert res.target == 1 - model.predict(x0[None])[0]
        assert res.robust_by_attack and res.valid == (model.predict(res.x[None])[0] == res.target)
        x = torch.as_tensor(res.x)
        sign = 1 if res.target == 1 else -1
        assert sign * float(net(x + first_order_perturbation(net, x, rho=0.05, target=res.target))) >= 0
        assert np.all((res.x >= 0) & (res.x <= 1))
        assert res.distance == pytest.approx(np.abs(res.x - x0).sum())


def test_on_a_linear_network_an_accepted_point_is_robust_in_the_whole_ball():
    """For a linear logit the first-order perturbation is the exact worst case: w.x + b >= rho ||w||."""
    net = torch.nn.Sequential(torch.nn.Linear(3, 1)).double()
    with torch.no_grad():
        net[0].weight.copy_(torch.tensor([[2.0, -1.0, 0.5]]))
        net[0].bias.fill_(-1.5)
    res = adversarial_recourse(net, np.array([0.1, 0.6, 0.2]), rho=0.2)
    w = np.array([2.0, -1.0, 0.5])
    assert res.robust_by_attack and w @ res.x - 1.5 >= 0.2 * np.linalg.norm(w) - 1e-12


def test_without_an_accepted_iterate_the_factual_is_returned_invalid(moons):
    mlp, X0 = moons
    res = adversarial_recourse(mlp, X0[0], rho=0.1, rounds=1, steps=1)
    assert res.detail == "round_limit" and not res.robust_by_attack and not res.valid
    np.testing.assert_array_equal(res.x, X0[0])
    assert res.distance == 0.0 and res.rounds == 1


def test_a_saturated_float32_gradient_ends_the_run_without_recourse_as_in_the_authors_code():
    """A step that takes the logit past ~17 saturates float32's sigmoid: the first-order step normalises a zero
    gradient (NaN), so nothing is accepted and the factual comes back, invalid."""
    net = torch.nn.Sequential(torch.nn.Linear(1, 1)).double()
    with torch.no_grad():
        net[0].weight.fill_(1000.0)
        net[0].bias.fill_(-10.0)
    res = adversarial_recourse(net, np.array([0.0]), rho=0.1)
    assert res.diverged and not res.valid and res.detail == "round_limit" and res.x.tolist() == [0.0]
    gentle = torch.nn.Sequential(torch.nn.Linear(1, 1)).double()
    with torch.no_grad():
        gentle[0].weight.fill_(4.0)
        gentle[0].bias.fill_(-1.0)
    ok = adversarial_recourse(gentle, np.array([0.0]), rho=0.1)
    assert ok.valid and not ok.diverged and 4 * ok.x[0] - 1 >= 0.4 - 1e-6  # linear: robust in the whole ball


def test_a_torch_sequential_with_a_sigmoid_output_is_run_on_its_logit(mlp):
    model, X = mlp
    net = torch_network(model)
    with_sigmoid = torch.nn.Sequential(*net, torch.nn.Sigmoid())
    x = torch.as_tensor(X[:5])
    np.testing.assert_allclose(torch_network(with_sigmoid)(x).numpy(), net(x).numpy())
    res = adversarial_recourse(with_sigmoid, X[0], rho=0.05, rounds=2)
    np.testing.assert_array_equal(res.x, adversarial_recourse(model, X[0], rho=0.05, rounds=2).x)


def test_non_differentiable_models_and_bad_inputs_are_rejected(mlp):
    _, X = mlp
    tree = DecisionTreeClassifier(max_depth=2).fit(X, X[:, 0] > 0.5)
    with pytest.raises(TypeError, match="MLPClassifier"):
        adversarial_recourse(tree, X[0], rho=0.1)
    with pytest.raises(ValueError, match="rho"):
        adversarial_recourse(mlp[0], X[0], rho=0.0)
    with pytest.raises(ValueError, match="x0"):
        adversarial_recourse(mlp[0], X[0, :2], rho=0.1)
