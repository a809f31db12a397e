"""Gradient-based adversarially robust recourse (the Table 3 baseline)."""

import numpy as np
import pytest
import torch
from scipy.special import logit
from sklearn.neural_network import MLPClassifier
from sklearn.tree import DecisionTreeClassifier

from explainopt.counterfactuals.adversarial_recourse import adversarial_recourse, torch_network, worst_perturbation


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
    for x_hat in X[:3]:
        res = adversarial_recourse(model, x_hat, rho=0.05, outer_steps=100)
        assert res.target == 1 - model.predict(x_hat[None])[0]
        assert res.valid == (model.predict(res.x[None])[0] == res.target)
        assert res.valid
        assert np.all((res.x >= 0) & (res.x <= 1))


def test_non_differentiable_models_are_rejected(mlp):
    _, X = mlp
    tree = DecisionTreeClassifier(max_depth=2).fit(X, X[:, 0] > 0.5)
    with pytest.raises(TypeError, match="MLPClassifier"):
        adversarial_recourse(tree, X[0], rho=0.1)
    with pytest.raises(ValueError, match="rho"):
        adversarial_recourse(mlp[0], X[0], rho=0.0)
