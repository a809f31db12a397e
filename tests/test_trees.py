"""Tree models as read by the encoder: float32-centred thresholds with the model's own decisions, and the
repair of a point a solver left on the wrong float32 side of a split it chose."""

import cvxpy as cp
import numpy as np
import pytest
from sklearn.ensemble import GradientBoostingClassifier, IsolationForest, RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split

from explainopt import solvers
from explainopt.counterfactuals import nearest_counterfactual
from explainopt.counterfactuals.ensembles import ensemble_counterfactual, robustness_threshold
from explainopt.datasets import FeatureSpec, load_dataset
from explainopt.encoders import encode, model_output, tree_ensemble
from explainopt.encoders.trees import chosen_leaves, float32_centred, snap_to_chosen_leaves


def close_threshold_forest(rng):
    """A forest on a feature whose values differ by less than a float32 spacing (as in Spambase)."""
    base = np.float64(np.float32(0.00576092))
    X = rng.random((400, 3))
    X[:200, 0] = base + rng.integers(-3, 4, 200) * 5e-11  # many values inside one float32 cell
    y = (X[:, 0] > base) ^ (X[:, 1] > 0.5)
    return RandomForestClassifier(n_estimators=15, max_depth=4, random_state=0).fit(X, y.astype(int)), X


def _estimators(model):
    if isinstance(model, GradientBoostingClassifier):
        return list(model.estimators_[:, 0]), [None] * model.n_estimators_
    return list(model.estimators_), list(getattr(model, "estimators_features_", [None] * len(model.estimators_)))


def _assert_same_decisions(model, probe):
    """Every tree read by tree_ensemble sends every probe row to scikit-learn's own leaf, and the
    ensemble's output is the model's own output."""
    ensemble = tree_ensemble(model)
    for tree, (estimator, features) in zip(ensemble.trees, zip(*_estimators(model))):
        rows = probe if features is None else probe[:, features]
        assert np.array_equal(tree.apply(probe), estimator.apply(rows.astype(np.float32)))
    assert np.allclose(ensemble.output(probe), model_output(model, probe), rtol=0, atol=1e-9)


def _near_thresholds(model, X, rng, n=300):
    """Rows of X with one feature set to (a float32 neighbour of) one of the model's raw thresholds."""
    estimators, features = _estimators(model)
    pairs = [(f if cols is None else cols[f], t) for e, cols in zip(estimators, features)
             for f, t in zip(e.tree_.feature, e.tree_.threshold) if f >= 0]
    rows = X[rng.integers(0, len(X), n)].copy()
    for row, k, step in zip(rows, rng.integers(0, len(pairs), n), rng.integers(-1, 2, n)):
        f, t = pairs[k]
        v = np.float32(t)
        row[f] = float(v if step == 0 else np.nextafter(v, np.float32(step * np.inf)))
    return rows


def test_centring_moves_a_threshold_to_the_middle_of_its_float32_cell_and_is_idempotent(rng):
    t = rng.choice([-1.0, 1.0], 1000) * rng.random(1000) * 10 ** rng.uniform(-8, 2, 1000)
    centred = float32_centred(t)
    a = centred.astype(np.float32)
    a = np.where(a.astype(float) > centred, np.nextafter(a, np.float32(-np.inf)), a)
    b = np.nextafter(a, np.float32(np.inf))
    assert np.all((a.astype(float) <= t) & (t < b.astype(float)))  # the same cell as the original
    assert np.array_equal(centred, (a.astype(float) + b.astype(float)) / 2)
    assert np.array_equal(float32_centred(centred), centred)
    x = np.concatenate([a, b]).astype(float)  # every float32 input decides as before
    assert np.array_equal(x.astype(np.float32) <= np.tile(t, 2), x.astype(np.float32) <= np.tile(centred, 2))


@pytest.mark.parametrize("kind", ["forest", "gbm", "isolation_forest"])
def test_centred_thresholds_reproduce_the_models_own_leaves_and_output(kind, rng):
    forest, X = close_threshold_forest(rng)
    y = forest.predict(X)
    model = {"forest": lambda: forest,
             "gbm": lambda: GradientBoostingClassifier(n_estimators=15, max_depth=3, random_state=0).fit(X, y),
             "isolation_forest": lambda: IsolationForest(n_estimators=15, random_state=0).fit(X)}[kind]()
    probe = np.vstack([X, X + rng.normal(scale=1e-9, size=X.shape), rng.random((500, 3)),
                       _near_thresholds(model, X, rng)])
    _assert_same_decisions(model, probe)


@pytest.fixture(scope="module")
def spambase():
    data = load_dataset("ensembles/Spambase").scaled()
    X_train, X_factual, y_train, _ = train_test_split(data.X.to_numpy(float), data.y.to_numpy(int), test_size=2,
                                                      random_state=0)
    forest = RandomForestClassifier(n_estimators=100, max_depth=4, max_features="sqrt", random_state=0)
    return forest.fit(X_train, y_train), X_train, X_factual, list(data.spec)


def test_spambase_thresholds_closer_than_a_float32_spacing_become_one_with_the_same_decisions(spambase, rng):
    """The case that motivated centring: Spambase's forests split one feature at thresholds 1e-10 apart."""
    forest, X, _, _ = spambase
    raw, read = {}, {}
    for estimator, tree in zip(forest.estimators_, tree_ensemble(forest).trees):
        split = estimator.tree_.children_left != -1
        for f, t, c in zip(estimator.tree_.feature[split], estimator.tree_.threshold[split], tree.threshold[split]):
            raw.setdefault(f, set()).add(float(t))
            read.setdefault(f, set()).add(float(c))
    spacing = {f: np.spacing(np.float32(max(ts))) for f, ts in raw.items()}
    close = [f for f, ts in raw.items() if len(ts) > 1 and np.diff(sorted(ts)).min() < spacing[f]]
    assert close, "Spambase's forest no longer has thresholds closer than a float32 spacing"
    for f, ts in read.items():  # after centring, distinct thresholds of a feature are a spacing apart
        gaps = np.diff(sorted(ts))
        assert not gaps.size or gaps.min() >= np.spacing(np.float32(min(ts))) * 0.999
    assert sum(map(len, read.values())) < sum(map(len, raw.values()))
    _assert_same_decisions(forest, np.vstack([X[rng.choice(len(X), 1000, replace=False)],
                                              _near_thresholds(forest, X, rng, n=2000)]))


def _solved_forest_encoding(forest, point):
    """The encoding of `forest` solved with x fixed near `point` (so that leaves are chosen)."""
    x = cp.Variable(point.size)
    enc = encode(forest, x, lower=0, upper=1)
    problem = cp.Problem(cp.Minimize(0), enc.constraints + [x >= point - 1e-4, x <= point + 1e-4])
    assert solvers.solve(problem).status == "optimal"
    return enc


def test_a_point_left_across_a_chosen_split_is_moved_back_into_the_chosen_leaves(rng):
    forest, X = close_threshold_forest(rng)
    enc = _solved_forest_encoding(forest, np.array([0.3, 0.6, 0.4]))
    leaves = chosen_leaves(enc)
    assert len(leaves) == forest.n_estimators
    trees = tree_ensemble(forest).trees
    hi = np.full(3, np.inf)  # the chosen cell's upper ends, from the chosen leaves' paths
    for ti, leaf in leaves:
        for f, t, goes_left in trees[ti].path(leaf):
            hi[f] = min(hi[f], t) if goes_left else hi[f]
    f = int(np.flatnonzero(np.isfinite(hi))[0])
    x = np.array(enc.input.value, dtype=float)
    x[f] = float(np.nextafter(np.float32(hi[f]), np.float32(np.inf)))  # one float32 step past the cell
    assert any(trees[ti].apply(x[None])[0] != leaf for ti, leaf in leaves)
    snapped, moved = snap_to_chosen_leaves(x, enc)
    below = np.float32(hi[f])  # hi is centred: the largest float32 at most hi is half a spacing below
    below = float(np.nextafter(below, np.float32(-np.inf)) if float(below) > hi[f] else below)
    assert moved == 1 and snapped[f] == below and hi[f] - below < 1e-7
    assert all(trees[ti].apply(snapped[None])[0] == leaf for ti, leaf in leaves)
    again, moved_again = snap_to_chosen_leaves(snapped, [enc])
    assert moved_again == 0 and np.array_equal(again, snapped)


def test_encodings_without_trees_or_a_solution_are_left_alone(rng):
    X = rng.random((100, 3))
    linear = LogisticRegression().fit(X, X[:, 0] > 0.5)
    x = cp.Variable(3)
    point = np.array([0.1, 0.2, 0.3])
    assert snap_to_chosen_leaves(point, [encode(linear, x, lower=0, upper=1)])[1] == 0
    forest, _ = close_threshold_forest(rng)
    unsolved = encode(forest, cp.Variable(3), lower=0, upper=1)
    assert chosen_leaves(unsolved) is None and snap_to_chosen_leaves(point, unsolved)[1] == 0


def test_counterfactuals_on_close_thresholds_are_verified_by_the_forest(rng):
    """Thresholds closer than a float32 spacing and than the solver's tolerances: every returned point
    reaches the score the MILP promised (centring + repair onto the chosen leaves), for the ensemble
    counterfactual and the nearest counterfactual alike."""
    forest, X = close_threshold_forest(rng)
    spec = [FeatureSpec(name=f"f{j}", kind="continuous", lower=0.0, upper=1.0, actionability="free", group=None)
            for j in range(3)]
    for x0 in X[:3]:
        target = 1 - int(forest.predict(x0[None])[0])
        for tau in (0.5, robustness_threshold(15, 0.2)):
            ce = ensemble_counterfactual(forest, x0, spec=spec, tau=tau)
            assert ce.x is not None and ce.repaired >= 0
            if not ce.relaxed:
                assert ce.valid and ce.meets_threshold, (ce.score, tau, ce.repaired)
            threshold = tau if target == 1 else 1 - tau
            near = nearest_counterfactual(forest, x0, spec, target=target, threshold=threshold)
            assert near.valid and near.repaired >= 0
            assert abs(near.model_output - near.encoded_output) <= 1e-9
