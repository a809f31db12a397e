"""The robustness measures of explainopt.counterfactuals.robustness against closed forms, brute force and
grid searches on toy models."""

import numpy as np
import pytest
import torch
from scipy import stats
from sklearn.datasets import make_moons
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.neural_network import MLPClassifier

from explainopt.counterfactuals.ensembles import robustness_threshold
from explainopt.counterfactuals.proplace import worst_case_model
from explainopt.counterfactuals.regions import sample_set
from explainopt.counterfactuals.robustness import input_radius, largest_delta, retrained_validity, score_margin
from explainopt.encoders import interval_lower, model_predict, torch_network


@pytest.fixture(scope="module")
def moons():
    X, y = make_moons(300, noise=0.2, random_state=0)
    return (X - X.min(0)) / (X.max(0) - X.min(0)), y


@pytest.fixture(scope="module")
def network(moons):
    X, y = moons
    return torch_network(MLPClassifier((6, 6), max_iter=400, random_state=0).fit(X, y))


@pytest.fixture(scope="module")
def linear():
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(200, 3))
    y = (X @ [1.0, -2.0, 0.5] > -0.3).astype(int)
    return LogisticRegression().fit(X, y), X


@pytest.mark.parametrize("norm, dual", [("linf", 1), ("l2", 2)])
@pytest.mark.parametrize("method", ["direct", "bisection"])
def test_input_radius_of_a_linear_model_is_the_distance_to_its_hyperplane(linear, norm, dual, method):
    model, X = linear
    w, b = model.coef_[0], model.intercept_[0]
    for x in X[model.predict(X) == 1][:3]:
        expected = (w @ x + b) / np.linalg.norm(w, ord=dual)
        assert input_radius(model, x, norm=norm, cap=10, method=method, tol=1e-7) == pytest.approx(expected, abs=1e-6)


def test_input_radius_is_zero_off_target_and_the_cap_when_the_ball_is_clear(linear):
    model, X = linear
    x_neg = X[model.predict(X) == 0][0]
    assert input_radius(model, x_neg, norm="linf") == 0.0
    x_pos = X[model.predict(X) == 1][0]
    assert input_radius(model, x_pos, norm="linf", cap=1e-6) == 1e-6


@pytest.mark.parametrize("norm", ["linf", "l2"])
def test_network_radius_agrees_with_bisection_and_sampling(network, moons, norm):
    X, _ = moons
    x = X[model_predict(network, X) == 1][0]
    direct = input_radius(network, x, norm=norm, cap=0.5)
    bisected = input_radius(network, x, norm=norm, cap=0.5, method="bisection", tol=1e-5)
    assert direct == pytest.approx(bisected, abs=2e-4)
    inside = x + sample_set(2, rho=0.99 * direct, norm=norm, n_samples=3000, random_state=0)
    assert (model_predict(network, inside) == 1).all()  # every sampled point of the ball keeps the class
    beyond = x + sample_set(2, rho=direct + 0.02, norm=norm, n_samples=20000, random_state=1)
    assert (model_predict(network, beyond) == 0).any()  # a slightly larger ball reaches the other class


def test_forest_radius_matches_a_grid_search(moons):
    X, y = moons
    forest = RandomForestClassifier(5, max_depth=3, random_state=0).fit(X, y)
    x = X[forest.predict(X) == 1][3]
    r = input_radius(forest, x, norm="linf", cap=0.5)
    grid = np.linspace(-1, 1, 81)
    box = np.array([[a, b] for a in grid for b in grid])
    assert (forest.predict(x + 0.999 * r * box) == 1).all()
    assert (forest.predict(x + (r + 0.02) * box) == 0).any()


def test_largest_delta_of_a_one_layer_network_is_closed_form():
    layer = torch.nn.Linear(3, 1).double()
    with torch.no_grad():
        layer.weight.copy_(torch.tensor([[1.0, -0.5, 2.0]]))
        layer.bias.fill_(0.1)
    net = torch.nn.Sequential(layer)
    x = np.array([0.4, 0.2, 0.3])
    expected = (np.array([1.0, -0.5, 2.0]) @ x + 0.1) / (x.sum() + 1)
    shift = largest_delta(net, x, cap=1.0, tol=1e-7)
    assert shift.interval == pytest.approx(expected, abs=1e-6) and shift.exact == pytest.approx(expected, abs=1e-6)


def test_largest_delta_matches_a_grid_search(network, moons):
    X, _ = moons
    x = X[model_predict(network, X) == 1][5]
    shift = largest_delta(network, x, cap=0.5, tol=1e-5)
    deltas = np.linspace(0, 0.5, 101)
    passes = np.array([interval_lower(network, x, delta=d)[0] >= 0 for d in deltas])
    assert passes[deltas <= shift.interval].all() and not passes[deltas > shift.interval + 1e-5].any()
    assert shift.exact >= shift.interval - 1e-12
    if shift.exact < 0.5:  # just past the exact answer a shifted network flips the class, just before none does
        assert worst_case_model(network, x, delta=shift.exact + 1e-3).output < 0
        assert worst_case_model(network, x, delta=max(shift.exact - 1e-4, 0.0)).milp_objective >= -1e-7


def test_largest_delta_is_zero_off_target_and_rejects_negative_inputs(network, moons):
    X, _ = moons
    x_neg = X[model_predict(network, X) == 0][0]
    assert largest_delta(network, x_neg).interval == 0.0
    with pytest.raises(ValueError, match="x >= 0"):
        largest_delta(network, -np.ones(2))


def test_retrained_validity_counts_pairs_with_a_clopper_pearson_interval(moons):
    X, y = moons
    forests = [RandomForestClassifier(5, max_depth=2, random_state=s).fit(X, y) for s in range(4)]
    points = X[:7]
    k = sum(int((f.predict(points) == 1).sum()) for f in forests)
    est = retrained_validity(forests, points)
    assert (est.valid, est.n) == (k, 28)
    if 0 < k < 28:
        assert est.low == pytest.approx(stats.beta.ppf(0.025, k, 28 - k + 1))
        assert est.high == pytest.approx(stats.beta.ppf(0.975, k + 1, 28 - k))
    assert np.isnan(retrained_validity([], points).rate)


def test_score_margin_is_the_score_minus_the_threshold(moons):
    X, y = moons
    forest = RandomForestClassifier(21, max_depth=3, random_state=0).fit(X, y)
    x = X[0]
    expected = forest.predict_proba(x[None])[0, 1] - robustness_threshold(21, 0.1)
    assert score_margin(forest, x, alpha=0.1) == pytest.approx(expected)
    with pytest.raises(TypeError):
        score_margin(LogisticRegression().fit(X, y), x, alpha=0.1)
