"""PROPLACE's algorithm: exact inner problem, robust neighbours, Algorithm 1, metrics, and the baselines.

The protocol of chapter 4 (split, experiment cells, tables, claims) is tested in test_chapter_proplace.py.
"""

import cvxpy as cp
import numpy as np
import pytest
from sklearn.datasets import make_moons
from torch import nn

from explainopt import solvers
from explainopt.chapters.proplace import train_network
from explainopt.counterfactuals import Counterfactual
from explainopt.counterfactuals import baselines as B
from explainopt.counterfactuals import gradient_baselines as GB
from explainopt.counterfactuals import proplace as P
from explainopt.counterfactuals.costs import LofScorer, l1, l1_distance
from explainopt.encoders import IntervalNetwork, delta_robust, model_predict, network_layers
from explainopt.encoders.networks import encode_layers, forward

DELTA = 0.05


@pytest.fixture(scope="module")
def moons():
    X, y = make_moons(300, noise=0.2, random_state=0)
    X = (X - X.min(0)) / (X.max(0) - X.min(0))
    net = train_network(X, y, width=6, epochs=20, random_state=0)
    return X, y, net


@pytest.fixture(scope="module")
def factuals(moons):
    X, _, net = moons
    return X[model_predict(net, X) == 0][:3]


@pytest.fixture(scope="module")
def plausible(moons, factuals):
    """The fixed instances: each factual with the vertices of its plausible region (k = 8)."""
    X, _, net = moons
    neighbours = P.RobustNeighbours(net, X, delta=DELTA)
    return [(x0, P.plausible_vertices(x0, neighbours.query(x0, 8))) for x0 in factuals]


def test_trained_network_is_accurate_and_encodable(moons):
    X, y, net = moons
    assert isinstance(net, nn.Sequential)
    assert (model_predict(net, X) == y).mean() > 0.8


def test_worst_case_reports_the_interval_networks_bound(moons):
    X, _, net = moons
    lower = IntervalNetwork(net, delta=DELTA).bounds(X[:5])[0]
    for x, bound in zip(X[:5], lower):
        assert P.worst_case_model(net, x, delta=DELTA).interval_lower == pytest.approx(bound, abs=1e-12)


def test_worst_case_is_exact_member_of_delta(moons):
    X, _, net = moons
    layers = network_layers(net)
    for x in X[:6]:
        wc = P.worst_case_model(net, x, delta=DELTA)
        for (W, b), (Ws, bs) in zip(layers, wc.layers):  # a real member of Delta
            assert np.abs(Ws - W).max() <= DELTA + 1e-9 and np.abs(bs - b).max() <= DELTA + 1e-9
        assert wc.output == pytest.approx(wc.milp_objective, abs=1e-6)  # recovered model attains the MILP optimum
        assert wc.interval_lower <= wc.output + 1e-7  # IBP is a lower bound of the worst case
        assert wc.output <= P.brute_force_worst_case(net, x, delta=DELTA, n_samples=300) + 1e-7
        assert wc.output <= P.local_worst_case(net, x, delta=DELTA, restarts=2, steps=80) + 1e-7
        assert wc.output <= forward(layers, x[None])[0] + 1e-9
        assert wc.solver == "highs" and wc.status == "optimal"


def test_one_hidden_layer_worst_case_equals_interval_bound():
    rng = np.random.default_rng(0)
    layers = [(rng.normal(size=(5, 3)), rng.normal(size=5)), (rng.normal(size=(1, 5)), rng.normal(size=1))]
    for x in rng.uniform(0, 1, (5, 3)):
        wc = P.worst_case_model(layers, x, delta=0.1)
        assert wc.output == pytest.approx(wc.interval_lower, abs=1e-6)


def test_interval_bound_is_strictly_loose_when_neurons_share_an_activation():
    # h = relu(x); out = relu(h) + relu(2 - h): IBP lets the two neurons see different h.
    layers = [(np.array([[1.0]]), np.array([0.0])), (np.array([[1.0], [-1.0]]), np.array([0.0, 2.0])),
              (np.array([[1.0, 1.0]]), np.array([0.0]))]
    wc = P.worst_case_model(layers, np.array([1.0]), delta=0.1)
    assert wc.output > wc.interval_lower + 1e-3
    assert wc.output <= P.local_worst_case(layers, np.array([1.0]), delta=0.1, restarts=4, steps=200) + 1e-7


def test_worst_case_rejects_negative_inputs(moons):
    with pytest.raises(ValueError):
        P.worst_case_model(moons[2], np.array([-0.1, 0.5]), delta=DELTA)


def test_reference_searches_are_reproducible_by_random_state(moons):
    X, _, net = moons
    a = P.brute_force_worst_case(net, X[0], delta=DELTA, n_samples=50, random_state=3)
    assert a == P.brute_force_worst_case(net, X[0], delta=DELTA, n_samples=50, random_state=3)
    b = P.local_worst_case(net, X[0], delta=DELTA, restarts=2, steps=20, random_state=3)
    assert b == P.local_worst_case(net, X[0], delta=DELTA, restarts=2, steps=20, random_state=3)


def test_robust_neighbours_are_the_k_nearest_robust_points(moons):
    X, _, net = moons
    nb = P.RobustNeighbours(net, X, delta=DELTA)
    x = X[model_predict(net, X) == 0][0]
    S = nb.query(x, 5)
    assert (model_predict(net, S) == 1).all() and delta_robust(net, S, delta=DELTA).all()
    ok = (model_predict(net, X) == 1) & delta_robust(net, X, delta=DELTA)
    dist = np.sort(np.linalg.norm(X[ok] - x, axis=1))[:5]
    np.testing.assert_allclose(np.sort(np.linalg.norm(S - x, axis=1)), dist)


def test_proplace_returns_valid_robust_plausible_counterfactuals(moons, factuals):
    X, _, net = moons
    nb = P.RobustNeighbours(net, X, delta=DELTA)
    for x in factuals:
        V = P.plausible_vertices(x, nb.query(x, 8))
        res = P.proplace(net, x, V, delta=DELTA)
        assert isinstance(res, Counterfactual) and res.solver == "highs" and res.fallback_from is None
        assert res.time >= res.outer_time + res.inner_time
        assert res.detail in ("optimal", "certified", "neighbour")
        assert res.valid and res.delta_valid and res.worst_case >= 0
        assert res.lambdas.sum() == pytest.approx(1) and (res.lambdas >= 0).all()
        np.testing.assert_allclose(res.x, V.T @ res.lambdas)  # inside the plausible region
        assert res.distance == pytest.approx(l1(res.x, x))  # the raw l1 (the paper divides it by d)
        assert res.iterations >= 1 and len(res.history) == res.iterations
        # the outer problem is a relaxation: iteration 1 (original model only) is never farther
        assert l1(res.history[0][0], x) <= res.distance + 1e-7


def test_proplace_without_certify_stops_at_true_worst_case(moons, factuals):
    X, _, net = moons
    nb = P.RobustNeighbours(net, X, delta=DELTA)
    x = factuals[0]
    res = P.proplace(net, x, P.plausible_vertices(x, nb.query(x, 8)), delta=DELTA, certify=False)
    assert res.status == "optimal" and res.worst_case >= 0 and res.valid
    with pytest.raises(TypeError):
        P.proplace(net, x, P.plausible_vertices(x, nb.query(x, 8)), DELTA)  # delta is keyword-only


def test_metrics(moons, factuals):
    X, y, net = moons
    lof = LofScorer(X[y == 1])
    assert lof(X[y == 1][:5]).mean() < 1.5 and lof(np.array([[5.0, 5.0]]))[0] > 1.5
    C = np.vstack([factuals[:2], np.full((1, 2), np.nan)])
    m = P.evaluate(net, factuals, C, delta=DELTA, retrained=[net], lof=lof)
    assert m["found"] == pytest.approx(200 / 3) and m["validity"] == 0 and m["vr"] == 0 and m["l1"] == 0
    assert m["outside"] == 0
    out = np.vstack([factuals[:1], [[-0.5, 0.5]]])  # a point outside [0, 1]: vΔ is over the one inside
    m = P.evaluate(net, factuals[:2], out, delta=DELTA)
    assert m["outside"] == 50 and m["vΔ"] == 100.0 * delta_robust(net, factuals[:1], delta=DELTA).mean()
    assert l1_distance([1, 0], [0, 0]) == 0.5


def test_baselines(moons, factuals):
    X, _, net = moons
    x = factuals[0]
    r = B.milp_r(net, x, delta=DELTA)
    assert r.robust and r.detail == "robust" and r.status == "feasible" and delta_robust(net, r.x, delta=DELTA)[0] and r.eps >= 0.02
    assert r.solver == "highs" and r.time > 0
    for res in (GB.wachter(net, x), B.robx(net, x, X, K=200), GB.roar_style(net, x, delta=DELTA)):
        assert isinstance(res, Counterfactual) and res.detail in ("valid", "line_search", "training_point")
        xp = res.x
        assert xp is not None and model_predict(net, xp[None])[0] == 1 and (xp >= 0).all() and (xp <= 1).all()
    assert GB.wachter(net, x).solver == GB.GRADIENT_SOLVER and B.robx(net, x, X, K=200).solver == "highs"
    assert B.stability(net, X[:3], K=50).shape == (3,)
    with pytest.raises(TypeError):
        B.milp_r(net, x, DELTA)  # delta is keyword-only


def test_robx_with_a_given_base_names_no_solver_and_milp_r_reports_running_out(moons, factuals):
    X, _, net = moons
    x = factuals[0]
    base = B.milp_r(net, x, delta=0.0).x
    res = B.robx(net, x, X, K=100, base=base)
    assert res.solver == "" and res.x is not None
    stuck = B.milp_r(net, x, delta=10.0, max_steps=2)  # no point is robust to shifts this large
    assert stuck.detail == "not_robust" and stuck.status == "limit" and not stuck.robust and stuck.eps is None and stuck.x is not None


def _outer_with_interval_bounds(models, x0, V, margin=0.01):
    """Eq. 5 formulated with plain interval bounds (no LP tightening): the reference optimum."""
    lam = cp.Variable(len(V), nonneg=True)
    xp = V.T @ lam
    cons = [cp.sum(lam) == 1]
    for layers in models:
        out, c, _, _ = encode_layers(layers, xp, V.min(0), V.max(0))
        cons += c + [out >= margin]
    return solvers.solve(cp.Problem(cp.Minimize(cp.norm1(xp - x0) / x0.size), cons)).objective


def test_outer_problem_with_lp_bounds_keeps_the_optimum(moons, plausible):
    _, _, net = moons
    for x0, V in plausible:
        models = [network_layers(net)]
        for _ in range(3):  # the base network, then worst-case networks as Algorithm 1 adds them
            xp, _, res = P.outer_problem(models, x0, V)
            assert res.status == "optimal"
            assert res.objective == pytest.approx(_outer_with_interval_bounds(models, x0, V), abs=1e-6)
            assert model_predict(net, xp[None])[0] == 1  # re-checked with the model's own predict
            models.append(P.worst_case_model(net, xp, delta=DELTA).layers)


def test_lazy_outer_problems_keep_the_distance(moons, plausible):
    """Lazy networks change the outer problems' size, never Algorithm 1's result (fixed instances)."""
    _, _, net = moons
    for x0, V in plausible:
        before = P.proplace(net, x0, V, delta=DELTA, lazy=False)
        after = P.proplace(net, x0, V, delta=DELTA, lazy=True)
        assert after.valid and after.delta_valid and model_predict(net, after.x[None])[0] == 1
        assert after.detail == before.detail
        assert after.distance == pytest.approx(before.distance, abs=1e-6)
        assert after.outer_solves >= after.iterations


def test_lazy_outer_problem_takes_back_violated_networks_and_keeps_the_optimum(moons, plausible):
    _, _, net = moons
    for x0, V in plausible:
        models = [network_layers(net)]
        for _ in range(3):
            xp, _, full = P.outer_problem(models, x0, V)
            models.append(P.worst_case_model(net, xp, delta=DELTA).layers)
        _, _, full = P.outer_problem(models, x0, V)
        active = [len(models) - 1]  # start from the newest network alone
        xp, _, solves = P._outer(models, active, x0, V, margin=0.01, tighten=True, lazy=True, hull_bounds={},
                                 solver=None, time_limit=None)
        assert len(solves) == len(active) and sorted(set(active)) == sorted(active)
        assert all(forward(m, xp[None])[0] >= 0.01 - 1e-6 for m in models)  # every network, checked
        assert solves[-1].objective == pytest.approx(full.objective, abs=1e-6)


def test_outer_problem_levers_keep_the_optimum(moons, plausible):
    """The ball around x0, the objective cutoff and the solver without sub-MIPs change how eq. 5 is
    solved, never its optimum (fixed instances)."""
    _, _, net = moons
    for x0, V in plausible:
        ball = P._robust_ball(net, x0, V, delta=DELTA, margin=0.01)
        assert ball is not None and ball[1] <= np.abs(V - x0).sum(axis=1).max()
        models = [network_layers(net)]
        for _ in range(3):
            _, _, plain = P.outer_problem(models, x0, V, sub_mips=True)
            cutoff = P._incumbent(models, [0.01] * len(models), x0, V)
            bounds = [P._hull_bounds(m, V, V.min(0), V.max(0), cached=False, ball=ball) for m in models]
            xp, _, fast = P.outer_problem(models, x0, V, hull_bounds=bounds, ball=ball, cutoff=cutoff)
            assert fast.status == plain.status == "optimal"
            assert fast.objective == pytest.approx(plain.objective, abs=1e-6)
            assert plain.objective <= cutoff + 1e-9 and ball[1] / x0.size >= plain.objective - 1e-9
            assert all(forward(m, xp[None])[0] >= 0.01 - 1e-6 for m in models)
            models.append(P.worst_case_model(net, xp, delta=DELTA).layers)


def test_proplace_levers_keep_the_distance(moons, plausible):
    _, _, net = moons
    for x0, V in plausible:
        before = P.proplace(net, x0, V, delta=DELTA, ball=False, cutoff=False, sub_mips=True)
        after = P.proplace(net, x0, V, delta=DELTA)
        assert after.valid and after.delta_valid and model_predict(net, after.x[None])[0] == 1
        assert delta_robust(net, after.x, delta=DELTA)[0]
        assert after.detail == before.detail
        assert after.distance == pytest.approx(before.distance, abs=1e-6)
