"""The network encoder's pieces that PROPLACE reuses: the one big-M ReLU layer, the interval network's
neuron bounds at a point, its samples, and the Delta-robustness test beside it."""

import cvxpy as cp
import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.neural_network import MLPClassifier

from explainopt import solvers
from explainopt.encoders import IntervalNetwork, delta_robust, interval_lower, network_layers
from explainopt.encoders import networks
from explainopt.encoders.networks import encode_layers, forward, lp_bounds, network_bounds, propagate_bounds, relu_layer


@pytest.fixture(scope="module")
def mlp():
    X, y = make_classification(200, 4, random_state=1)
    X = (X - X.min(0)) / np.ptp(X, 0)
    return X, MLPClassifier((6, 5), max_iter=800, random_state=0).fit(X, y)


def test_relu_layer_fixes_h_to_the_relu_of_z_for_every_neuron_state():
    # neurons: always off (u <= 0), always on (l >= 0), unstable below and above zero
    lower, upper = np.array([-2.0, 0.5, -1.0, -1.0]), np.array([-0.5, 2.0, 1.0, 1.0])
    target = np.array([-1.0, 1.5, -0.4, 0.7])
    z = cp.Variable(4)
    h, cons, sigma = relu_layer(z, lower, upper, name="t")
    assert sigma is not None and sigma.shape == (2,)  # binaries only for the two unstable neurons
    problem = cp.Problem(cp.Minimize(cp.sum(h)), cons + [z == target])  # h's lowest feasible value
    assert solvers.solve(problem).status == "optimal"
    np.testing.assert_allclose(h.value, np.maximum(target, 0), atol=1e-7)
    problem = cp.Problem(cp.Maximize(cp.sum(h)), cons + [z == target])  # ... and its highest
    assert solvers.solve(problem).status == "optimal"
    np.testing.assert_allclose(h.value, np.maximum(target, 0), atol=1e-7)


def test_relu_layer_needs_no_binary_for_stable_neurons():
    z = cp.Variable(2)
    _, _, sigma = relu_layer(z, np.array([0.0, -3.0]), np.array([1.0, -1.0]))
    assert sigma is None


@pytest.mark.parametrize("sense", [1.0, -1.0])
def test_relu_rows_give_the_relu_in_cvxpy_and_in_a_matrix_milp_alike(sense):
    # one formulation, two emitters: h's lowest and highest feasible value is relu(W v + b) in both
    rng = np.random.default_rng(3)
    W, b = rng.normal(size=(8, 3)), rng.normal(size=8)
    lower, upper = propagate_bounds([(W, b), (np.ones((1, 8)), np.zeros(1))], -np.ones(3), np.ones(3))[0]
    for v in rng.uniform(-1, 1, size=(5, 3)):
        expected = np.maximum(W @ v + b, 0)
        h, cons, _ = relu_layer(W @ v + b, lower, upper)
        assert solvers.solve(cp.Problem(cp.Minimize(sense * cp.sum(h)), cons)).status == "optimal"
        np.testing.assert_allclose(h.value, expected, atol=1e-7)
        milp = solvers.MatrixMILP(bounded=True)
        inputs = milp.add_columns(3, lower=v, upper=v)
        cols = networks.relu_rows(lower, upper).to_matrix(milp, inputs, W, b)
        total = milp.add_columns(1, lower=-np.inf, cost=sense)
        milp.add_row(np.r_[total, cols], np.r_[1.0, -np.ones(len(cols))], lower=0.0, upper=0.0)  # total = sum(h)
        result = milp.solve(solver="highs")
        assert result.status == "optimal"
        np.testing.assert_allclose(result.values[cols], expected, atol=1e-7)


def test_relu_rows_of_a_layer_always_off_are_bounds_alone():
    rows = networks.relu_rows(np.array([-2.0, -1.0]), np.array([-0.5, 0.0]))
    assert rows.Z.shape[0] == 0 and rows.S.shape[1] == 0
    np.testing.assert_array_equal(rows.h_upper, [0.0, 0.0])


def test_interval_layer_bounds_contain_every_shifted_network_at_the_point(mlp):
    X, model = mlp
    inn = IntervalNetwork(model, delta=0.05)
    lower, upper = inn.bounds(X[:10])
    samples = [inn.sample(seed, vertex=seed % 2 == 1) for seed in range(40)]
    for i, x in enumerate(X[:10]):
        bounds = inn.layer_bounds(x)
        assert len(bounds) == len(inn.base_layers) and bounds[-1][0].shape == (1,)
        for shifted in samples:
            _, zs = forward(shifted, x[None], preactivations=True)
            for z, (lo, hi) in zip(zs, bounds):
                assert (z[0] >= lo - 1e-9).all() and (z[0] <= hi + 1e-9).all()
        # the doubled network's forward pass and the propagation give the same logit bounds
        assert bounds[-1][0][0] == pytest.approx(lower[i], abs=1e-12)
        assert bounds[-1][1][0] == pytest.approx(upper[i], abs=1e-12)
    with pytest.raises(ValueError, match="one point"):
        inn.layer_bounds(X[:2])


def test_propagation_without_shifts_is_plain_interval_propagation_and_needs_no_sign(mlp):
    _, model = mlp
    layers = network_layers(model)
    box = propagate_bounds(layers, -np.ones(4), np.ones(4))  # negative inputs are fine without shifts
    shifted = propagate_bounds(layers, np.zeros(4), np.ones(4), delta=0.1)
    plain = propagate_bounds(layers, np.zeros(4), np.ones(4))
    assert all((ls <= lp).all() and (us >= up).all() for (ls, us), (lp, up) in zip(shifted, plain))
    assert all((l <= u).all() for l, u in box)
    with pytest.raises(ValueError, match="non-negative"):
        propagate_bounds(layers, -np.ones(4), np.ones(4), delta=0.1)


def test_vertex_samples_sit_at_the_ends_of_the_shift_intervals(mlp):
    _, model = mlp
    inn = IntervalNetwork(model, delta=0.03)
    for (W, b), (Ws, bs) in zip(inn.base_layers, inn.sample(0, vertex=True)):
        np.testing.assert_allclose(np.abs(Ws - W), 0.03)
        np.testing.assert_allclose(np.abs(bs - b), 0.03)


def test_delta_robust_is_the_sign_of_the_interval_lower_bound(mlp):
    X, model = mlp
    lower = interval_lower(model, X, delta=0.02)
    np.testing.assert_array_equal(delta_robust(model, X, delta=0.02), lower >= 0)
    np.testing.assert_allclose(interval_lower(model, X, delta=0.0), forward(network_layers(model), X))
    assert (interval_lower(model, X, delta=0.05) <= lower + 1e-12).all()  # a larger delta can only lower it
    with pytest.raises(TypeError):
        delta_robust(model, X, 0.02)  # delta is keyword-only


def test_network_layers_accepts_its_own_layer_lists(mlp):
    _, model = mlp
    layers = network_layers(model)
    again = network_layers(layers)
    assert all(np.array_equal(W, W2) and np.array_equal(b, b2) for (W, b), (W2, b2) in zip(layers, again))
    assert IntervalNetwork(layers, delta=0.1).n_features_in_ == 4


def test_interval_networks_refuse_negative_inputs(mlp):
    _, model = mlp
    with pytest.raises(ValueError, match="non-negative"):
        interval_lower(model, -np.ones((1, 4)), delta=0.1)


# ------------------------------------------------------------------- LP bound tightening (OBBT)


def _random_layers(widths, seed):
    rng = np.random.default_rng(seed)
    return [(rng.normal(size=(o, i)), rng.normal(scale=0.5, size=o)) for i, o in zip(widths[:-1], widths[1:])]


def _inside(bounds, preactivations, tol=1e-7):
    return all(((z >= l - tol) & (z <= u + tol)).all() for (l, u), z in zip(bounds, preactivations))


@pytest.mark.parametrize("widths", [(4, 8, 8, 1), (3, 10, 6, 5, 1)])
def test_lp_bounds_are_sound_over_the_box_and_never_looser_than_intervals(widths):
    layers = _random_layers(widths, seed=len(widths))
    lo, hi = np.zeros(widths[0]), np.ones(widths[0])
    bounds = lp_bounds(layers, lo, hi)
    ibp = propagate_bounds(layers, lo, hi)
    rng = np.random.default_rng(0)
    X = np.vstack([rng.uniform(size=(3000, widths[0])), rng.integers(0, 2, size=(200, widths[0]))])  # + corners
    _, zs = forward(layers, X, preactivations=True)
    assert _inside(bounds, zs)
    for (l, u), (li, ui) in zip(bounds, ibp):
        assert (l >= li - 1e-12).all() and (u <= ui + 1e-12).all()
    width = sum(float((u - l).sum()) for l, u in bounds[1:])
    assert width < sum(float((u - l).sum()) for l, u in ibp[1:])  # strictly tighter somewhere


def test_lp_bounds_over_a_hull_are_sound_and_exact_in_the_first_layer():
    layers = _random_layers((4, 8, 8, 1), seed=5)
    rng = np.random.default_rng(1)
    V = rng.uniform(size=(7, 4))
    bounds = lp_bounds(layers, V.min(0), V.max(0), vertices=V)
    lam = rng.dirichlet(np.ones(7) * 0.3, size=4000)
    _, zs = forward(layers, np.vstack([lam @ V, V]), preactivations=True)
    assert _inside(bounds, zs)
    vals = V @ layers[0][0].T + layers[0][1]
    np.testing.assert_allclose(bounds[0][0], vals.min(0))
    np.testing.assert_allclose(bounds[0][1], vals.max(0))


def test_network_bounds_are_memoised_per_network_and_box(mlp):
    _, model = mlp
    lo, hi = np.zeros(4), np.ones(4)
    first = network_bounds(model, lo, hi)
    n = len(networks._BOUND_CACHE)
    second = network_bounds(network_layers(model), lo, hi)  # same network: reused, not recomputed
    assert len(networks._BOUND_CACHE) == n
    for (l1, u1), (l2, u2) in zip(first, second):
        np.testing.assert_array_equal(l1, l2)
        np.testing.assert_array_equal(u1, u2)
    second[0][0][:] = 99.0  # callers get copies
    assert network_bounds(model, lo, hi)[0][0].max() < 99.0
    network_bounds(model, lo, 0.5 * hi)  # another box: another entry
    assert len(networks._BOUND_CACHE) == n + 1


def test_encoding_with_lp_bounds_has_fewer_binaries_and_the_same_optimum(mlp):
    X, model = mlp
    layers = network_layers(model)
    lo, hi = np.zeros(4), np.ones(4)
    optima, binaries = [], []
    for tighten in (None, "lp"):
        for target in (0, 1):  # nearest point of each class to X[0] (l1), through the logit's sign
            x = cp.Variable(4)
            out, cons, variables, bounds = encode_layers(layers, x, lo, hi, tighten=tighten)
            side = [out >= 1e-3] if target == 1 else [out <= -1e-3]
            res = solvers.solve(cp.Problem(cp.Minimize(cp.norm1(x - X[0])), cons + side))
            assert res.status == "optimal"
            optima.append(res.objective)
            pred = model.predict(np.clip(x.value, lo, hi)[None])[0]
            assert pred == target  # re-checked with the model's own predict
        binaries.append(sum(s.size for s in variables["sigma"] if s is not None))
    np.testing.assert_allclose(optima[:2], optima[2:], atol=1e-6)
    assert binaries[1] <= binaries[0]


@pytest.mark.parametrize("vertices", [False, True])
def test_lp_bounds_over_a_ball_are_sound_and_never_looser(vertices):
    layers = _random_layers((4, 8, 8, 1), seed=7)
    rng = np.random.default_rng(2)
    V = rng.uniform(size=(7, 4)) if vertices else None
    lo, hi = (V.min(0), V.max(0)) if vertices else (np.zeros(4), np.ones(4))
    center, radius = (V[0] if vertices else np.full(4, 0.5)), 0.6
    plain = lp_bounds(layers, lo, hi, vertices=V)
    bounds = lp_bounds(layers, lo, hi, vertices=V, ball=(center, radius))
    X = rng.dirichlet(np.ones(7) * 0.3, size=20000) @ V if vertices else rng.uniform(size=(20000, 4))
    X = X[np.abs(X - center).sum(axis=1) <= radius]  # the points of the domain and the ball
    assert len(X) > 100
    _, zs = forward(layers, X, preactivations=True)
    assert _inside(bounds, zs)
    for (l, u), (lp, up) in zip(bounds, plain):
        assert (l >= lp - 1e-12).all() and (u <= up + 1e-12).all()
    assert sum(float((u - l).sum()) for l, u in bounds) < sum(float((u - l).sum()) for l, u in plain)


def test_segment_points_and_region_descent_are_accepted_and_no_farther_than_their_rows(mlp):
    X, model = mlp
    layers = network_layers(model)
    valid = lambda Z: forward(layers, Z) >= 1e-3  # noqa: E731
    x0 = X[forward(layers, X) < 0][0]
    points = networks.segment_points(x0, X, valid)
    rows = X[valid(X)]
    assert len(points) == len(rows) and valid(points).all()
    assert (np.abs(points - x0).sum(1) <= np.abs(rows - x0).sum(1) + 1e-12).all()
    for p in points[:5]:
        q = networks.region_descent(layers, x0, p, np.zeros(4), np.ones(4), sign=1.0, margin=1e-3)
        assert valid(q[None])[0] and np.abs(q - x0).sum() <= np.abs(p - x0).sum() + 1e-12


def test_encoding_over_the_counterfactual_ball_keeps_the_optimum(mlp):
    X, model = mlp
    lo, hi = np.zeros(4), np.ones(4)
    for i in range(4):
        target = 1 - int(model.predict(X[i][None])[0])
        ball = networks.counterfactual_ball(model, X[i], X, target=target, margin=1e-3)
        optima = []
        for options in ({"tighten": "lp"}, {"tighten": "lp", "ball": ball}):
            x = cp.Variable(4)
            enc = networks.encode_network(model, x, lower=lo, upper=hi, **options)
            res = solvers.solve(cp.Problem(cp.Minimize(cp.norm1(x - X[i])), enc.constraints + enc.predicts(target, margin=1e-3)))
            assert res.status == "optimal"
            assert model.predict(np.clip(x.value, lo, hi)[None])[0] == target  # the model's own predict
            optima.append(res.objective)
        assert optima[1] == pytest.approx(optima[0], abs=1e-6)
        assert optima[1] <= ball[1] + 1e-9
    with pytest.raises(ValueError, match="tighten"):
        networks.encode_network(model, cp.Variable(4), lower=lo, upper=hi, ball=ball)
