"""Gradient-based adversarially robust recourse (the Table 3 baseline)."""

import numpy as np
import pytest
import torch
from scipy.special import logit
from sklearn.neural_network import MLPClassifier
from sklearn.tree import DecisionTreeClassifier

from explainopt.counterfactuals.adversarial_recourse import adversarial_recourse, worst_perturbation
from explainopt.counterfactuals.base import Counterfactual
from explainopt.counterfactuals.gradient import GRADIENT_SOLVER
from explainopt.encoders import torch_network


@pytest.fixture(scope="module")
def mlp():
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(300, 4))
    y = (X[:, 0] + X[:, 1] ** 2 > 0.8).astype(int)
    return MLPClassifier((10,), max_iter=3000, random_state=0).fit(X, y), X


def test_torch_network_reproduces_the_mlp_logit(mlp):
    model, X = mlp
    net = torch_network(model)
    out = net(torch.as_tensor(X)).numpy().ravel()
    np.testing.assert_allclose(out, logit(model.predict_proba(X)[:, 1]), atol=1e-8)


def test_worst_perturbation_stays_in_the_ball_and_lowers_the_margin(mlp):
    model, X = mlp
    net = torch_network(model)
    x = torch.as_tensor(X[0])
    target = int(model.predict(X[:1])[0])
    s = worst_perturbation(net, x, rho=0.1, target=target, generator=torch.Generator().manual_seed(0))
    assert torch.linalg.vector_norm(s) <= 0.1 + 1e-9
    sign = 1 if target == 1 else -1
    assert sign * float(net(x + s)) < sign * float(net(x))


def test_recourse_is_valid_under_model_predict(mlp):
    model, X = mlp
    for x0 in X[:3]:
        res = adversarial_recourse(model, x0, rho=0.05, steps=100)
        assert isinstance(res, Counterfactual) and res.solver == GRADIENT_SOLVER and res.time > 0
        assert res.target == 1 - model.predict(x0[None])[0]
        assert res.valid == (model.predict(res.x[None])[0] == res.target)
        assert res.valid and res.detail == ("converged" if res.robust_by_attack else "round_limit")
        assert np.all((res.x >= 0) & (res.x <= 1))
        assert res.distance == pytest.approx(np.abs(res.x - x0).sum())


def test_the_same_random_state_gives_the_same_recourse(mlp):
    model, X = mlp
    first, again = (adversarial_recourse(model, X[0], rho=0.1, steps=20, random_state=3) for _ in range(2))
    np.testing.assert_array_equal(first.x, again.x)


def test_a_torch_sequential_with_a_sigmoid_output_is_run_on_its_logit(mlp):
    model, X = mlp
    net = torch_network(model)
    with_sigmoid = torch.nn.Sequential(*net, torch.nn.Sigmoid())
    x = torch.as_tensor(X[:5])
    np.testing.assert_allclose(torch_network(with_sigmoid)(x).numpy(), net(x).numpy())
    res = adversarial_recourse(with_sigmoid, X[0], rho=0.05, steps=20)
    assert res.target == 1 - model.predict(X[:1])[0]


def test_non_differentiable_models_are_rejected(mlp):
    _, X = mlp
    tree = DecisionTreeClassifier(max_depth=2).fit(X, X[:, 0] > 0.5)
    with pytest.raises(TypeError, match="MLPClassifier"):
        adversarial_recourse(tree, X[0], rho=0.1)
    with pytest.raises(ValueError, match="rho"):
        adversarial_recourse(mlp[0], X[0], rho=0.0)
    with pytest.raises(ValueError, match="x0"):
        adversarial_recourse(mlp[0], X[0, :2], rho=0.1)
