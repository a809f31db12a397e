"""PROPLACE (chapter 4): exact inner problem, robust neighbours, Algorithm 1, metrics and baselines."""

import numpy as np
import pytest
import torch
from sklearn.datasets import make_moons
from torch import nn

from explainopt.encoders import IntervalNetwork, model_predict
from explainopt.encoders.networks import forward
from explainopt.counterfactuals import baselines as B
from explainopt.counterfactuals import proplace as P

DELTA = 0.05


@pytest.fixture(scope="module")
def moons():
    X, y = make_moons(300, noise=0.2, random_state=0)
    X = (X - X.min(0)) / (X.max(0) - X.min(0))
    net = P.train_network(X, y, width=6, epochs=20, seed=0)
    return X, y, net


@pytest.fixture(scope="module")
def factuals(moons):
    X, _, net = moons
    return X[model_predict(net, X) == 0][:3]


def test_trained_network_is_accurate_and_encodable(moons):
    X, y, net = moons
    assert isinstance(net, nn.Sequential)
    assert (model_predict(net, X) == y).mean() > 0.8


def test_interval_bounds_match_shared_interval_network(moons):
    X, _, net = moons
    layers = P.as_layers(net)
    lower = IntervalNetwork(net, DELTA).bounds(X[:20])[0]
    ours = [P.interval_layer_bounds(layers, x, DELTA)[-1][0][0] for x in X[:20]]
    np.testing.assert_allclose(lower, ours, atol=1e-9)


def test_worst_case_is_exact_member_of_delta(moons):
    X, _, net = moons
    layers = P.as_layers(net)
    for x in X[:6]:
        wc = P.worst_case_model(net, x, DELTA)
        for (W, b), (Ws, bs) in zip(layers, wc.layers):  # a real member of Delta
            assert np.abs(Ws - W).max() <= DELTA + 1e-9 and np.abs(bs - b).max() <= DELTA + 1e-9
        assert wc.output == pytest.approx(wc.milp_objective, abs=1e-6)  # recovered model attains the MILP optimum
        assert wc.interval_lower <= wc.output + 1e-7  # IBP is a lower bound of the worst case
        assert wc.output <= P.brute_force_worst_case(net, x, DELTA, n_samples=300) + 1e-7
        assert wc.output <= P.local_worst_case(net, x, DELTA, restarts=2, steps=80) + 1e-7
        assert wc.output <= forward(layers, x[None])[0] + 1e-9


def test_one_hidden_layer_worst_case_equals_interval_bound():
    rng = np.random.default_rng(0)
    layers = [(rng.normal(size=(5, 3)), rng.normal(size=5)), (rng.normal(size=(1, 5)), rng.normal(size=1))]
    for x in rng.uniform(0, 1, (5, 3)):
        wc = P.worst_case_model(layers, x, 0.1)
        assert wc.output == pytest.approx(wc.interval_lower, abs=1e-6)


def test_interval_bound_is_strictly_loose_when_neurons_share_an_activation():
    # h = relu(x); out = relu(h) + relu(2 - h): IBP lets the two neurons see different h.
    layers = [(np.array([[1.0]]), np.array([0.0])), (np.array([[1.0], [-1.0]]), np.array([0.0, 2.0])),
              (np.array([[1.0, 1.0]]), np.array([0.0]))]
    wc = P.worst_case_model(layers, np.array([1.0]), 0.1)
    assert wc.output > wc.interval_lower + 1e-3
    assert wc.output <= P.local_worst_case(layers, np.array([1.0]), 0.1, restarts=4, steps=200) + 1e-7


def test_worst_case_rejects_negative_inputs(moons):
    with pytest.raises(ValueError):
        P.worst_case_model(moons[2], np.array([-0.1, 0.5]), DELTA)


def test_robust_neighbours_are_the_k_nearest_robust_points(moons):
    X, _, net = moons
    nb = P.RobustNeighbours(net, X, DELTA)
    x = X[model_predict(net, X) == 0][0]
    S = nb.query(x, 5)
    assert (model_predict(net, S) == 1).all() and P.delta_robust(net, S, DELTA).all()
    ok = (model_predict(net, X) == 1) & P.delta_robust(net, X, DELTA)
    dist = np.sort(np.linalg.norm(X[ok] - x, axis=1))[:5]
    np.testing.assert_allclose(np.sort(np.linalg.norm(S - x, axis=1)), dist)


def test_proplace_returns_valid_robust_plausible_counterfactuals(moons, factuals):
    X, _, net = moons
    nb = P.RobustNeighbours(net, X, DELTA)
    for x in factuals:
        V = P.plausible_vertices(x, nb.query(x, 8))
        res = P.proplace(net, x, V, DELTA)
        assert res.status in ("optimal", "certified", "neighbour")
        assert res.valid and res.delta_valid and res.worst_case >= 0
        assert res.lambdas.sum() == pytest.approx(1) and (res.lambdas >= 0).all()
        np.testing.assert_allclose(res.x, V.T @ res.lambdas)  # inside the plausible region
        assert res.distance == pytest.approx(P.l1_distance(res.x, x))
        assert res.iterations >= 1 and len(res.history) == res.iterations
        # the outer problem is a relaxation: iteration 1 (original model only) is never farther
        assert P.l1_distance(res.history[0][0], x) <= res.distance + 1e-7


def test_proplace_without_certify_stops_at_true_worst_case(moons, factuals):
    X, _, net = moons
    nb = P.RobustNeighbours(net, X, DELTA)
    x = factuals[0]
    res = P.proplace(net, x, P.plausible_vertices(x, nb.query(x, 8)), DELTA, certify=False)
    assert res.status == "optimal" and res.worst_case >= 0 and res.valid


def test_metrics(moons, factuals):
    X, y, net = moons
    lof = P.LofScorer(X[y == 1])
    assert lof(X[y == 1][:5]).mean() < 1.5 and lof(np.array([[5.0, 5.0]]))[0] > 1.5
    C = np.vstack([factuals[:2], np.full((1, 2), np.nan)])
    m = P.evaluate(net, factuals, C, DELTA, retrained=[net], lof=lof)
    assert m["found"] == pytest.approx(200 / 3) and m["validity"] == 0 and m["vr"] == 0 and m["l1"] == 0
    assert P.l1_distance([1, 0], [0, 0]) == 0.5


def test_protocol_split_sizes():
    X = np.random.default_rng(0).uniform(size=(200, 3))
    y = np.r_[np.zeros(100), np.ones(100)].astype(int)
    s = P.protocol_split(X, y)
    assert len(s["X1"]) + len(s["X1_test"]) == 99 and len(s["X2"]) + len(s["X2_test"]) == 101


def test_baselines(moons, factuals):
    X, _, net = moons
    x = factuals[0]
    xr, eps, robust = B.milp_r(net, x, DELTA)
    assert robust and P.delta_robust(net, xr, DELTA)[0] and eps >= 0.02
    for xp in (B.wachter(net, x), B.robx(net, x, X, K=200), B.roar_style(net, x, DELTA)):
        assert xp is not None and model_predict(net, xp[None])[0] == 1 and (xp >= 0).all() and (xp <= 1).all()
    assert B.stability(net, X[:3], K=50).shape == (3,)


def test_experiment_pipeline_on_a_toy_prep(moons):
    X, y, net = moons
    split = {"X1": X, "y1": y, "X1_test": X, "y1_test": y}
    prep = dict(split=split, model=net, retrained=[net], width=6, epochs=20, train_time=0.0, accuracy=1.0, columns=["a", "b"])
    key = ("carla/compas", -1, 0, 1)
    P._MODELS[key] = prep
    try:
        idx = P.factual_indices(prep, 2)
        assert len(set(idx)) == 2 and (model_predict(net, X[idx]) == 0).all()
        methods = ("PROPLACE", "MILP-R", "WCE")
        res = [P.run_factual("carla/compas", int(i), -1, 0, 1, methods) for i in idx]
        assert all(r["proplace"]["status"] in ("optimal", "certified") for r in res)
        rows = P.table1_rows("carla/compas", prep, idx, res, methods)
        pp = next(r for r in rows if r["method"] == "PROPLACE")
        assert pp["validity"] == 100 and pp["vΔ"] == 100 and pp["vr"] == 100 and pp["paper l1"] == 0.039
        timing = P.timing_table(P.proplace_log({"carla/compas": res}))
        assert timing.loc["compas", "factuals"] == 2
        assert timing.loc["compas", ["optimal", "certified", "neighbour"]].sum() == 2
        assert timing.loc["compas", "inner_solves"] == sum(r["proplace"]["iterations"] for r in res)
        assert timing.loc["compas", "exact_above_ibp"] <= timing.loc["compas", "inner_solves"]
        with pytest.raises(ValueError):
            P.run_factual("carla/compas", int(idx[0]), -1, 0, 1, ("nope",))
    finally:
        P._MODELS.pop(key, None)
        P._MODELS.pop(("nb", "carla/compas", -1, 0, 1), None)


def test_inner_problem_check_finds_the_milp_exact_and_ibp_loose(moons):
    X, _, net = moons
    points = P.probe_points(net, X, DELTA, 4)
    assert points.shape == (4, 2) and (points >= 0).all()
    rows, summary, exact = P.inner_problem_check({"moons": (net, points, DELTA)})
    assert exact and len(rows) == 4 and summary.loc["moons", "points"] == 4
    assert (rows["IBP lower bound"] <= rows["exact MILP"] + 1e-7).all()


def test_paper_only_rows_carry_the_papers_numbers():
    rows = P.paper_only_rows(("RBR",), ["carla/heloc"])
    assert rows == [{"dataset": "heloc", "method": "RBR (not run)", "paper vr": 80, "paper vΔ": 0, "paper l1": .038,
                     "paper lof": 1.10}]
