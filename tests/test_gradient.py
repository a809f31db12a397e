"""The gradient-recourse core and the three methods that run on it (Wachter and the ROAR-style baseline,
ROAR, adversarial recourse)."""

import inspect

import numpy as np
import pytest
import torch
from sklearn.datasets import make_moons
from sklearn.neural_network import MLPClassifier

from explainopt.counterfactuals import adversarial_recourse as A
from explainopt.counterfactuals import gradient_baselines as GB
from explainopt.counterfactuals import gradient as G
from explainopt.counterfactuals import roar as R
from explainopt.encoders import network_layers, torch_network

#: The parameter names of the core, and the names the methods used before they shared it.
SHARED = {"learning_rate", "steps"}
MULTIPLIER = {"lam", "lam_growth", "rounds"}
RETIRED = {"lr", "lam0", "max_steps", "outer_steps", "max_lam_rounds"}


@pytest.fixture(scope="module")
def moons():
    X, y = make_moons(200, noise=0.2, random_state=0)
    X = (X - X.min(0)) / (X.max(0) - X.min(0))
    mlp = MLPClassifier((8,), max_iter=2000, random_state=0).fit(X, y)
    net = torch_network(mlp)
    x0 = X[mlp.predict(X) == 0][0]
    return X, mlp, net, x0


def test_descend_keeps_x_in_its_box_and_stops_at_tol():
    target = torch.tensor([2.0, -1.0, 0.5], dtype=torch.float64)
    calls = []

    def loss(x):
        calls.append(1)
        return ((x - target) ** 2).sum()

    x = G.descend(loss, np.zeros(3), lower=0.0, upper=[1.0, 1.0, 0.25], learning_rate=0.1, steps=200)
    assert len(calls) == 200
    np.testing.assert_allclose(x, [1.0, 0.0, 0.25])
    calls.clear()
    G.descend(loss, np.zeros(3), learning_rate=0.1, steps=10_000, tol=1e-3)
    assert 1 < len(calls) < 10_000


def test_growing_multiplies_step_by_step():
    assert G.growing(0.5, 2.0, 4) == [0.5, 1.0, 2.0, 4.0]
    assert G.growing(0.1, 3.0, 0) == []


def test_multiplier_rounds_stops_at_the_first_accepted_point():
    seen = []

    def loss(lam):
        seen.append(lam)
        return lambda x: ((x - lam) ** 2).sum()

    found = G.multiplier_rounds(loss, lambda x: x[0] > 0.3, np.zeros(1), [0.1, 0.2, 0.4, 0.8], learning_rate=0.05,
                                steps=300)
    assert found.accepted and found.lam == 0.4 and found.rounds == 3 and seen == [0.1, 0.2, 0.4]
    never = G.multiplier_rounds(loss, lambda x: False, np.zeros(1), [0.1, 0.2], steps=5)
    assert not never.accepted and never.lam == 0.2 and never.rounds == 2 and never.x is not None
    none = G.multiplier_rounds(loss, lambda x: True, np.zeros(1), [])
    assert none.x is None and none.lam is None and not none.accepted


def test_continued_rounds_carries_x_across_multipliers_and_tests_before_every_step():
    seen, tested = [], []

    def loss(lam):
        seen.append(lam)
        return lambda x: ((x - lam) ** 2).sum()

    def accept(x):
        tested.append(float(x[0]))
        return x[0] > 0.35

    found = G.continued_rounds(loss, accept, np.zeros(1), [0.2, 0.4, 0.8], learning_rate=0.05, steps=200)
    assert found.accepted and found.lam == 0.4 and found.rounds == 2 and seen == [0.2, 0.4]
    assert tested[0] == 0.0 and found.x[0] > 0.35 and tested[-1] == found.x[0]
    assert len(tested) > 200 and tested[200] == pytest.approx(tested[199], abs=0.06)  # no restart from x0
    never = G.continued_rounds(loss, lambda x: False, np.zeros(1), [0.1], steps=3)
    assert not never.accepted and never.rounds == 1 and never.x is not None
    assert G.continued_rounds(loss, accept, np.zeros(1), []).x is None


def test_continued_rounds_stops_at_a_non_finite_iterate_and_keeps_its_dtype():
    tested = []
    nan_after_one_step = lambda lam: lambda x: (x * float("nan")).sum()  # noqa: E731
    found = G.continued_rounds(nan_after_one_step, lambda x: tested.append(x) or False, np.zeros(2), [1.0, 2.0],
                               steps=5)
    assert not found.accepted and found.rounds == 1 and np.isnan(found.x).all() and len(tested) == 1
    seen = []
    G.continued_rounds(lambda lam: lambda x: (x - 0.3).pow(2).sum(), lambda x: seen.append(x) or False,
                       np.zeros(1), [1.0], steps=3, learning_rate=0.1, dtype=torch.float32)
    assert all(x.dtype == np.float64 for x in seen)
    assert seen[-1][0] == np.float32(seen[-1][0]) and seen[-1][0] > 0  # float32 values, read as float64


def test_both_schedules_take_the_same_boxed_adam_steps():
    """One multiplier: `multiplier_rounds` (restart per round) and `continued_rounds` reach the same point
    after the same steps, and :class:`~.gradient.BoxedAdam` is the one that took them."""
    loss = lambda lam: lambda x: ((x - torch.tensor([2.0, -1.0], dtype=x.dtype)) ** 2).sum()  # noqa: E731
    kw = dict(lower=0.0, upper=[1.0, 0.5], learning_rate=0.1, steps=40)
    restarted = G.multiplier_rounds(loss, lambda x: False, np.full(2, 0.5), [1.0], **kw)
    continued = G.continued_rounds(loss, lambda x: False, np.full(2, 0.5), [1.0], **kw)
    adam = G.BoxedAdam(np.full(2, 0.5), lower=0.0, upper=[1.0, 0.5], learning_rate=0.1)
    for _ in range(40):
        adam.step(loss(1.0))
    np.testing.assert_array_equal(restarted.x, continued.x)
    np.testing.assert_array_equal(adam.point(), continued.x)
    np.testing.assert_allclose(continued.x, [1.0, 0.0], atol=1e-3)


def _methods(moons):
    X, mlp, net, x0 = moons
    return {
        "wachter": (GB.wachter, lambda **kw: GB.wachter(net, x0, **kw)),
        "roar_style": (GB.roar_style, lambda **kw: GB.roar_style(net, x0, delta=0.02, **kw)),
        "roar": (R.roar, lambda **kw: R.roar(net, x0, X, delta_max=0.05, n_samples=500, **kw)),
        "adversarial_recourse": (A.adversarial_recourse,
                                 lambda **kw: A.adversarial_recourse(mlp, x0, rho=0.05, rounds=2, **kw)),
    }


def test_the_methods_share_the_parameter_names(moons):
    for name, (method, _) in _methods(moons).items():
        params = set(inspect.signature(method).parameters)
        assert SHARED <= params, name
        assert not params & RETIRED, name
        if name != "roar":  # ROAR tries a fixed schedule of cost weights, `lambdas`
            assert MULTIPLIER <= params, name
    assert {"learning_rate", "steps", "tol"} <= set(inspect.signature(R.roar_recourse).parameters)


def test_the_methods_run_on_the_core_and_name_one_solver(moons, monkeypatch):
    assert GB.GRADIENT_SOLVER is G.GRADIENT_SOLVER and R.GRADIENT_SOLVER is G.GRADIENT_SOLVER
    descents = []
    original = G.descend

    def spy(loss, x0, **kw):
        descents.append(kw)
        return original(loss, x0, **kw)

    def spy_continued(loss, accept, x0, multipliers, **kw):
        descents.append(kw)
        return original_continued(loss, accept, x0, multipliers, **kw)

    original_continued = G.continued_rounds
    assert A.continued_rounds is G.continued_rounds
    monkeypatch.setattr(G, "descend", spy)
    monkeypatch.setattr(A, "continued_rounds", spy_continued)
    for name, (_, run) in _methods(moons).items():
        descents.clear()
        res = run(steps=7, learning_rate=0.02)
        assert res.solver == G.GRADIENT_SOLVER, name
        assert descents and all(d["steps"] == 7 and d["learning_rate"] == 0.02 for d in descents), name


def test_torch_network_rebuilds_layers_and_models_alike(moons):
    _, mlp, net, _ = moons
    again = torch_network([[W.tolist(), b.tolist()] for W, b in network_layers(mlp)])  # as the results store has them
    points = torch.as_tensor(np.random.default_rng(0).uniform(size=(20, 2)))
    with torch.no_grad():
        np.testing.assert_array_equal(again(points).numpy(), net(points).numpy())
    assert not again.training and not any(p.requires_grad for p in again.parameters())
    assert all(p.dtype == torch.float64 for p in again.parameters())
