"""Every encoder against the model itself: round trips, bounds, optimality on small cases, errors.

The round trip fixes x (trees: to a 1e-4 box, since points within the split margins are excluded),
solves, and compares the encoded output with the model's own output at the solver's x; for trees the
active leaf of every tree must equal ``apply()``. CI runs 100 points per model and dataset; the
acceptance run of 1000 points is ``pytest -m slow tests/test_encoders.py``.
"""

import itertools

import cvxpy as cp
import numpy as np
import pytest
import torch
from sklearn.datasets import make_classification, make_moons
from sklearn.ensemble import (
    ExtraTreesClassifier,
    GradientBoostingClassifier,
    IsolationForest,
    RandomForestClassifier,
)
from sklearn.linear_model import LogisticRegression
from sklearn.neighbors import KNeighborsClassifier
from sklearn.neural_network import MLPClassifier
from sklearn.svm import LinearSVC
from sklearn.tree import DecisionTreeClassifier
from torch import nn

from explainopt.counterfactuals import nearest_counterfactual
from explainopt.datasets import load_dataset
from explainopt.encoders import IntervalNetwork, encode, model_output, supported_models
from explainopt.encoders.check import round_trip, sample_points
from explainopt.encoders.networks import forward, network_layers, propagate_bounds

DATASETS = ["robust-ce/banknote", "robust-ce/diabetes", "robust-ce/ionosphere"]
TREE_MODELS = {"tree", "forest", "extra_trees", "gbm", "isolation_forest"}


def _torch_net(X, y, seed):
    """A small torch classifier trained briefly with full-batch Adam (one logit)."""
    torch.manual_seed(seed)
    net = nn.Sequential(nn.Linear(X.shape[1], 8), nn.ReLU(), nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 1)).double()
    optimizer = torch.optim.Adam(net.parameters(), lr=0.02)
    inputs, labels = torch.as_tensor(X), torch.as_tensor(y, dtype=torch.float64)
    for _ in range(200):
        optimizer.zero_grad()
        loss = nn.functional.binary_cross_entropy_with_logits(net(inputs)[:, 0], labels)
        loss.backward()
        optimizer.step()
    return net


def make_model(name, X, y, seed=0):
    """A fitted model of each supported family (small, so the suite stays fast)."""
    fitted = {
        "logistic": lambda: LogisticRegression(max_iter=1000),
        "linear_svc": lambda: LinearSVC(),
        "tree": lambda: DecisionTreeClassifier(max_depth=5, random_state=seed),
        "forest": lambda: RandomForestClassifier(n_estimators=10, max_depth=4, random_state=seed),
        "extra_trees": lambda: ExtraTreesClassifier(n_estimators=10, max_depth=4, random_state=seed),
        "gbm": lambda: GradientBoostingClassifier(n_estimators=15, max_depth=3, learning_rate=0.3, random_state=seed),
        "mlp": lambda: MLPClassifier((10, 10), max_iter=600, random_state=seed),
    }
    if name in fitted:
        return fitted[name]().fit(X, y)
    if name == "isolation_forest":
        return IsolationForest(n_estimators=10, random_state=seed).fit(X)
    if name == "torch":
        return _torch_net(X, y, seed)
    if name == "interval":
        return IntervalNetwork(MLPClassifier((10,), max_iter=600, random_state=seed).fit(X, y), delta=0.02)
    raise KeyError(name)


MODELS = ["logistic", "linear_svc", "tree", "forest", "extra_trees", "gbm", "isolation_forest", "mlp", "torch",
          "interval"]


@pytest.fixture(scope="module", params=DATASETS)
def data(request):
    ds = load_dataset(request.param).scaled()
    return ds.X.to_numpy(float), ds.y.to_numpy(int)


def check_round_trip(name, X, y, n_points):
    model = make_model(name, X, y)
    points = sample_points(X, n_points, 0, 1, random_state=0)
    frame = round_trip(model, points, lower=0, upper=1, half_width=1e-4 if name in TREE_MODELS else 0.0)
    assert (frame.status == "optimal").all()
    assert (frame.relative_error <= 1e-6).all(), frame.sort_values("relative_error").tail()
    assert frame.within_bounds.all()
    if name in TREE_MODELS:
        assert frame.leaves_agree.all()


@pytest.mark.parametrize("name", MODELS)
def test_encoded_output_equals_the_models_own_output(name, data):
    check_round_trip(name, *data, n_points=100)


@pytest.mark.slow
@pytest.mark.parametrize("name", MODELS)
def test_round_trip_on_a_thousand_points(name, data):
    check_round_trip(name, *data, n_points=1000)


# ---------------------------------------------------------------------- under optimization pressure


@pytest.mark.parametrize("name", ["logistic", "tree", "forest", "extra_trees", "gbm", "mlp", "torch"])
def test_counterfactuals_are_valid_and_the_true_margin_agrees(name):
    ds = load_dataset("robust-ce/diabetes").scaled()
    X, y = ds.X.to_numpy(float), ds.y.to_numpy(int)
    model = make_model(name, X, y)
    rng = np.random.default_rng(1)
    for i in rng.choice(len(X), 10, replace=False):
        target = 1 - int(model_output(model, X[i])[0] > (0.5 if name in TREE_MODELS - {"gbm"} else 0.0))
        res = nearest_counterfactual(model, X[i], lower=0, upper=1, target=target, time_limit=60)
        assert res.status == "optimal" and res.valid, (name, i, res)
        assert abs(res.model_output - res.encoded_output) <= 1e-6 * (1 + abs(res.model_output))


def test_isolation_forest_inlier_constraint_is_respected():
    X, _ = make_classification(300, 4, random_state=0)
    X = (X - X.min(0)) / np.ptp(X, 0)
    forest = IsolationForest(n_estimators=20, contamination=0.1, random_state=0).fit(X)
    outlier = X[forest.predict(X) == -1][0]
    res = nearest_counterfactual(forest, outlier, lower=0, upper=1, target=1)
    assert res.status == "optimal" and res.valid and forest.predict(res.x[None])[0] == 1


# ------------------------------------------------------------------------- optimal against brute force


def _cells(model, lo, hi):
    """Boxes between consecutive thresholds of a 2-D tree ensemble: the prediction is constant on each."""
    trees = [model] if hasattr(model, "tree_") else np.ravel(model.estimators_)
    cuts = [{lo[j], hi[j]} for j in range(2)]
    for t in trees:
        tree = t.tree_
        for f, thr in zip(tree.feature, tree.threshold):
            if f >= 0:
                cuts[f].add(float(thr))
    edges = [np.array(sorted(c)) for c in cuts]
    for a, b in itertools.product(range(len(edges[0]) - 1), range(len(edges[1]) - 1)):
        yield np.array([edges[0][a], edges[1][b]]), np.array([edges[0][a + 1], edges[1][b + 1]])


@pytest.mark.parametrize("model", [
    DecisionTreeClassifier(max_depth=3, random_state=0),
    RandomForestClassifier(n_estimators=3, max_depth=3, random_state=0),
    GradientBoostingClassifier(n_estimators=4, max_depth=2, random_state=0),
], ids=["tree", "forest", "gbm"])
def test_tree_counterfactuals_are_optimal_against_enumerated_cells(model):
    X, y = make_moons(200, noise=0.3, random_state=0)
    model.fit(X, y)
    lo, hi = X.min(0), X.max(0)
    for i in range(10):
        target = 1 - int(model.predict(X[i:i + 1])[0])
        best = np.inf
        for a, b in _cells(model, lo, hi):
            if model.predict(((a + b) / 2)[None])[0] == target:
                best = min(best, np.abs(np.clip(X[i], a, b) - X[i]).sum())
        res = nearest_counterfactual(model, X[i], lower=lo, upper=hi, target=target)
        assert res.valid
        assert best - 1e-9 <= res.distance <= best + 1e-3  # the split margins cost at most 2 * 1e-4 per cut


def test_network_counterfactual_is_optimal_against_a_dense_grid():
    X, y = make_moons(200, noise=0.2, random_state=0)
    X = (X - X.min(0)) / np.ptp(X, 0)
    model = MLPClassifier((8, 8), max_iter=2000, random_state=0).fit(X, y)
    grid = np.stack(np.meshgrid(np.linspace(0, 1, 501), np.linspace(0, 1, 501)), -1).reshape(-1, 2)
    labels = model.predict(grid)
    for i in range(5):
        target = 1 - int(model.predict(X[i:i + 1])[0])
        brute = np.abs(grid[labels == target] - X[i]).sum(1).min()
        res = nearest_counterfactual(model, X[i], lower=0, upper=1, target=target)
        assert res.valid
        assert brute - 2 * 0.002 <= res.distance <= brute + 1e-6  # grid spacing 0.002 per coordinate


# ---------------------------------------------------------------------------- network bounds


def test_every_preactivation_lies_within_its_propagated_bounds():
    X, y = make_classification(500, 6, random_state=0)
    X = (X - X.min(0)) / np.ptp(X, 0)
    model = MLPClassifier((20, 20, 20), max_iter=500, random_state=0).fit(X, y)
    layers = network_layers(model)
    bounds = propagate_bounds(layers, np.zeros(6), np.ones(6))
    points = np.random.default_rng(0).uniform(0, 1, (10_000, 6))
    logits, zs = forward(layers, points, preactivations=True)
    for z, (l, u) in zip(zs, bounds):
        assert (z >= l - 1e-9).all() and (z <= u + 1e-9).all()
    assert np.allclose(1 / (1 + np.exp(-logits)), model.predict_proba(points)[:, 1])


def test_interval_network_with_zero_delta_is_the_network_and_shifted_networks_stay_inside():
    X, y = make_classification(300, 5, random_state=0)
    X = (X - X.min(0)) / np.ptp(X, 0)
    model = MLPClassifier((10, 10), max_iter=800, random_state=0).fit(X, y)
    l0, u0 = IntervalNetwork(model, delta=0.0).bounds(X)
    assert np.allclose(l0, model_output(model, X)) and np.allclose(u0, l0)
    inn = IntervalNetwork(model, delta=0.05)
    lower, upper = inn.bounds(X)
    for seed in range(50):
        shifted = forward(inn.sample(seed), X)
        assert (shifted >= lower - 1e-9).all() and (shifted <= upper + 1e-9).all()


def test_lp_tightening_gives_tighter_bounds_and_the_same_counterfactual():
    X, y = make_classification(300, 5, random_state=0)
    X = (X - X.min(0)) / np.ptp(X, 0)
    model = MLPClassifier((15, 15), max_iter=800, random_state=0).fit(X, y)
    plain = encode(model, cp.Variable(5), lower=np.zeros(5), upper=np.ones(5))
    tight = encode(model, cp.Variable(5), lower=np.zeros(5), upper=np.ones(5), tighten="lp")
    for (l0, u0), (l1, u1) in zip(plain.variables["bounds"], tight.variables["bounds"]):
        assert (l1 >= l0 - 1e-9).all() and (u1 <= u0 + 1e-9).all()
    target = 1 - int(model.predict(X[:1])[0])
    a = nearest_counterfactual(model, X[0], lower=0, upper=1, target=target)
    b = nearest_counterfactual(model, X[0], lower=0, upper=1, target=target, tighten="lp")
    assert a.valid and b.valid and a.distance == pytest.approx(b.distance, abs=1e-6)


# ----------------------------------------------------------------------------------- bad input


def test_unsupported_unfitted_multiclass_and_mismatched_models_are_refused():
    X, y = make_classification(100, 4, n_classes=3, n_informative=3, n_redundant=0, random_state=0)
    x = cp.Variable(4)
    with pytest.raises(TypeError, match="KNeighborsClassifier.*supported models: .*LogisticRegression"):
        encode(KNeighborsClassifier().fit(X, y), x, lower=0, upper=1)
    with pytest.raises(ValueError, match="not fitted"):
        encode(RandomForestClassifier(), x, lower=0, upper=1)
    with pytest.raises(ValueError, match="3 classes"):
        encode(DecisionTreeClassifier().fit(X, y), x, lower=0, upper=1)
    with pytest.raises(ValueError, match="expects 4 features"):
        encode(LogisticRegression().fit(X, y == 0), cp.Variable(3))
    with pytest.raises(ValueError, match="activation='tanh'"):
        encode(MLPClassifier((3,), activation="tanh", max_iter=50).fit(X, y == 0), x, lower=0, upper=1)
    with pytest.raises(ValueError, match="lower.*NaN|NaN"):
        encode(DecisionTreeClassifier().fit(X, y == 0), x, lower=[0, np.nan, 0, 0], upper=1)
    with pytest.raises(ValueError, match="non-negative"):
        encode(IntervalNetwork(MLPClassifier((3,), max_iter=50).fit(X, y == 0), delta=0.1), x, lower=-1, upper=1)
    with pytest.raises(ValueError, match="Linear, ReLU"):
        encode(nn.Sequential(nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 1)), x, lower=0, upper=1)
    assert {"LogisticRegression", "RandomForestClassifier", "Sequential", "IntervalNetwork"} <= set(supported_models())
