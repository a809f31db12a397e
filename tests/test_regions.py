"""Robust counterfactual regions (Maragno et al.): adversarial problems, the loop, certification."""

import itertools
import math

import numpy as np
import pytest
from sklearn.ensemble import (ExtraTreesClassifier, GradientBoostingClassifier, IsolationForest,
                              RandomForestClassifier)
from sklearn.linear_model import LogisticRegression, SGDClassifier
from sklearn.neural_network import MLPClassifier
from sklearn.tree import DecisionTreeClassifier

from explainopt import encoders, solvers
from explainopt.counterfactuals import regions as R
from explainopt.counterfactuals.regions import adversarial, algorithm, master
from explainopt.counterfactuals.base import Counterfactual


def _data(n=300, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, d))
    y = (X[:, 0] + X[:, 1] ** 2 > 0.8).astype(int)
    return X, y


TREE_MODELS = [
    DecisionTreeClassifier(max_depth=4, random_state=0),
    RandomForestClassifier(n_estimators=5, max_depth=3, random_state=0),
    ExtraTreesClassifier(n_estimators=4, max_depth=3, random_state=0),
    GradientBoostingClassifier(n_estimators=5, max_depth=2, learning_rate=1.0, random_state=0),
]


@pytest.mark.parametrize("model", TREE_MODELS, ids=lambda m: type(m).__name__)
def test_tree_boxes_reproduce_the_model_scores_and_predictions(model, rng):
    X, y = _data()
    model.fit(X, y)
    boxes = R.tree_boxes(model)
    P = rng.uniform(-0.1, 1.1, size=(3000, 3))
    score = boxes.score(P)
    ref = model.decision_function(P) if isinstance(model, GradientBoostingClassifier) else model.predict_proba(P)[:, 1]
    np.testing.assert_allclose(score, ref, atol=1e-12)
    assert np.array_equal(boxes.adverse(score, target=1), model.predict(P) == 0)


def test_gradient_boosting_boxes_carry_the_init_offset_of_the_encoders():
    X, y = _data()
    y[:250] = 1  # unbalanced classes: a clearly non-zero init log-odds
    model = GradientBoostingClassifier(n_estimators=3, max_depth=2, learning_rate=1.0, random_state=0).fit(X, y)
    boxes = R.tree_boxes(model)
    assert boxes.ensemble.constant == pytest.approx(encoders.gradient_boosting_offset(model)) and boxes.ensemble.constant != 0
    assert (boxes.ensemble.threshold, boxes.ensemble.inclusive) == (0.0, True)


@pytest.mark.parametrize("norm", R.NORMS)
def test_a_robust_region_for_an_sgd_classifier_is_the_linear_one_and_certified(norm):
    X, y = _data()
    model = SGDClassifier(loss="hinge", random_state=0).fit(X, y)
    for x0 in X[:3]:
        region = R.robust_region(model, x0, rho=0.05, norm=norm)
        assert region.converged and region.iterations == 0
        assert region.target == 1 - model.predict(x0[None])[0]
        assert R.certify_region(model, region.x, rho=0.05, norm=norm, target=region.target, n_samples=3000).certified


@pytest.mark.parametrize("norm", R.NORMS)
def test_linear_ap_is_the_closed_form_distance_to_the_hyperplane(norm, rng):
    X, y = _data()
    model = LogisticRegression().fit(X, y)
    beta, beta0 = model.coef_[0], model.intercept_[0]
    dual = np.linalg.norm(beta, ord=1 if norm == "linf" else 2)
    for x in rng.uniform(size=(20, 3)):
        target = int(model.predict(x[None])[0])
        margin = abs(beta @ x + beta0)
        assert R.certified_radius(model, x, norm=norm, target=target, cap=10) == pytest.approx(margin / dual)
        rho = 0.05
        ap = R.adversarial_problem(model, x, rho=rho, norm=norm, target=target)
        assert ap.value == pytest.approx(rho * dual - margin)  # positive iff the set crosses the hyperplane
        assert np.linalg.norm(ap.scenario, ord=np.inf if norm == "linf" else 2) == pytest.approx(rho)
        worst = x + ap.scenario
        assert (model.decision_function(worst[None])[0] * (1 if target else -1)) == pytest.approx(margin - rho * dual)


@pytest.mark.parametrize("norm", R.NORMS)
def test_linear_region_is_eq69_and_certified(norm):
    X, y = _data()
    model = LogisticRegression().fit(X, y)
    for x0 in X[:5]:
        region = R.robust_region(model, x0, rho=0.05, norm=norm)
        assert region.converged and region.iterations == 0
        assert R.certified_radius(model, region.x, norm=norm, target=region.target, cap=1) >= 0.05 - 1e-6
        assert R.certify_region(model, region.x, rho=0.05, norm=norm, target=region.target, n_samples=3000).certified


@pytest.mark.parametrize("norm", R.NORMS)
def test_tree_ap_per_leaf_equals_the_milp_and_agrees_with_sampling(norm, rng):
    X, y = _data()
    model = DecisionTreeClassifier(max_depth=3, random_state=0).fit(X, y)
    for i in range(15):
        x = rng.uniform(size=3)
        target = int(model.predict(x[None])[0])
        leaves = R.adversarial_problem(model, x, rho=0.1, norm=norm, target=target)
        milp = R.adversarial_problem(model, x, rho=0.1, norm=norm, target=target, method="milp")
        assert leaves.value == pytest.approx(milp.value, abs=1e-6)
        points = x + R.sample_set(3, rho=0.1, norm=norm, n_samples=6000, random_state=i)
        sampled_bad = (model.predict(points) != target).any()
        if leaves.value > 1e-3:  # a deep adverse point exists: sampling finds adverse points too
            assert sampled_bad
            assert model.predict((x + leaves.scenario)[None])[0] != target
        if leaves.value == -math.inf:
            assert not sampled_bad


@pytest.mark.parametrize("norm", R.NORMS)
def test_certified_radius_of_a_tree_matches_a_dense_grid(norm):
    X, y = _data(d=2)
    model = DecisionTreeClassifier(max_depth=3, random_state=0).fit(X, y)
    grid = np.stack(np.meshgrid(np.linspace(-0.5, 1.5, 801), np.linspace(-0.5, 1.5, 801)), -1).reshape(-1, 2)
    pred = model.predict(grid)
    for x in [np.array([0.2, 0.3]), np.array([0.7, 0.6]), np.array([0.45, 0.5])]:
        target = int(model.predict(x[None])[0])
        other = grid[pred != target]
        dist = np.linalg.norm(other - x, ord=np.inf if norm == "linf" else 2, axis=1).min()
        radius = R.certified_radius(model, x, norm=norm, target=target, cap=5)
        assert radius == pytest.approx(dist, abs=2 * 2 / 800)


def test_ensemble_radius_equals_the_tree_radius_for_a_one_tree_forest():
    X, y = _data(d=2)
    forest = GradientBoostingClassifier(n_estimators=1, max_depth=3, learning_rate=1.0).fit(X, y)
    for x in [np.array([0.2, 0.3]), np.array([0.7, 0.6])]:
        target = int(forest.predict(x[None])[0])
        grid = np.random.default_rng(0).uniform(-0.5, 1.5, size=(200_000, 2))
        other = grid[forest.predict(grid) != target]
        dist = np.abs(other - x).max(axis=1).min()
        assert R.certified_radius(forest, x, norm="linf", target=target, cap=2) == pytest.approx(dist, abs=5e-3)


def test_single_leaf_heuristic_keeps_the_whole_box_in_one_target_leaf():
    X, y = _data()
    model = DecisionTreeClassifier(max_depth=5, random_state=0).fit(X, y)
    for x0 in X[:10]:
        for norm in R.NORMS:
            region = R.single_leaf_region(model, x0, rho=0.05, norm=norm)
            assert region.converged
            leaves = model.apply(region.x[None] + R.sample_set(3, rho=0.05, norm=norm, n_samples=2000))
            assert len(set(leaves)) == 1
            assert R.certify_region(model, region.x, rho=0.05, norm=norm, target=region.target, n_samples=2000).certified


def test_certificate_rejects_a_point_next_to_the_boundary():
    X, y = _data()
    model = DecisionTreeClassifier(max_depth=3, random_state=0).fit(X, y)
    node = 0
    f, t = model.tree_.feature[node], model.tree_.threshold[node]
    x = np.full(3, 0.5)
    x[f] = t + 1e-3
    cert = R.certify_region(model, x, rho=0.05, norm="linf", target=int(model.predict(x[None])[0]), n_samples=3000)
    assert not cert.certified and cert.ap_value > 0 and cert.n_violations > 0


def test_bad_inputs_raise_clear_errors():
    X, y = _data()
    model = DecisionTreeClassifier(max_depth=2).fit(X, y)
    with pytest.raises(ValueError, match="norm"):
        R.robust_region(model, X[0], rho=0.1, norm="l1")
    with pytest.raises(ValueError, match="rho"):
        R.robust_region(model, X[0], rho=0.0)
    with pytest.raises(ValueError, match="objective"):
        R.robust_region(model, X[0], rho=0.1, objective="l0")
    with pytest.raises(TypeError, match="support"):
        R.robust_region(object(), X[0], rho=0.1)
    with pytest.raises(TypeError, match="famil"):
        R.robust_region(IsolationForest(n_estimators=5, random_state=0).fit(X), X[0], rho=0.1)
    with pytest.raises(ValueError, match="x0"):
        R.robust_region(model, X[0, :2], rho=0.1)
    with pytest.raises(TypeError, match="DecisionTreeClassifier"):
        R.single_leaf_region(LogisticRegression().fit(X, y), X[0], rho=0.1)


# --------------------------------------------------------------------------- Algorithm 1

LOOP_MODELS = TREE_MODELS[:2] + [TREE_MODELS[3], MLPClassifier((8,), max_iter=3000, random_state=0)]


@pytest.mark.parametrize("norm", R.NORMS)
@pytest.mark.parametrize("model", LOOP_MODELS, ids=lambda m: type(m).__name__)
def test_algorithm1_returns_certified_regions(model, norm):
    X, y = _data()
    model.fit(X, y)
    for x0 in X[:3]:
        region = R.robust_region(model, x0, rho=0.05, norm=norm, time_limit=120, track_radius=True)
        assert region.converged, region.status
        assert isinstance(region, Counterfactual) and region.found and region.solver and region.time > 0
        assert model.predict(region.x[None])[0] == region.target
        cert = R.certify_region(model, region.x, rho=0.05, norm=norm, target=region.target, n_samples=5000)
        assert cert.certified, cert
        assert region.history[-1].radius >= 0.05 - 1e-6
        distances = [h.distance for h in region.history]
        assert all(b >= a - 1e-6 for a, b in zip(distances, distances[1:]))  # MP values only grow


def test_single_leaf_heuristic_is_never_closer_than_algorithm1():
    X, y = _data()
    model = DecisionTreeClassifier(max_depth=4, random_state=0).fit(X, y)
    for x0 in X[:5]:
        exact = R.robust_region(model, x0, rho=0.05, norm="linf")
        heuristic = R.single_leaf_region(model, x0, rho=0.05, norm="linf")
        assert heuristic.distance >= exact.distance - 1e-3


def test_early_stop_reports_the_best_certified_radius():
    X, y = _data()
    model = RandomForestClassifier(n_estimators=10, max_depth=3, random_state=0).fit(X, y)
    region = R.robust_region(model, X[0], rho=0.1, norm="linf", max_iterations=1)
    if region.converged:
        pytest.skip("converged in one iteration")
    assert region.early_stop and 0 <= region.rho_bar < 0.1
    assert region.rho_bar == pytest.approx(max(0.0, max(h.radius for h in region.history) - R.RHO_BAR_SLACK))
    assert model.predict(region.x[None])[0] == region.target
    cert = R.certify_region(model, region.x, rho=region.rho_bar, norm="linf", target=region.target, n_samples=3000)
    assert cert.certified, cert


def test_early_stop_rho_bar_is_certified_on_a_forest_whose_closed_leaf_side_touches_the_ball():
    """Regression: at exactly the certified radius the box touches an adverse leaf's closed side
    (``x <= t``), so sampled corners were adverse; rho-bar is reported a hair inside."""
    X, y = _data(d=2, seed=3)
    model = RandomForestClassifier(n_estimators=5, max_depth=3, random_state=0).fit(X, y)
    for x0 in X[:4]:
        region = R.robust_region(model, x0, rho=0.1, norm="linf", max_iterations=2)
        if region.converged or region.x is None:
            continue
        cert = R.certify_region(model, region.x, rho=region.rho_bar, norm="linf", target=region.target,
                                n_samples=5000)
        assert cert.certified, (region.rho_bar, cert)


@pytest.mark.parametrize("depth", [3, 5])
def test_algorithm1_distance_matches_a_brute_force_grid_on_a_2d_tree(depth):
    """Optimality on a small case: the robust counterfactual's l1 distance against an exhaustive grid
    search whose robustness test is ``model.predict`` on every grid point of the box around a candidate."""
    from scipy.ndimage import minimum_filter

    X, y = _data(d=2, seed=1)
    model = DecisionTreeClassifier(max_depth=depth, random_state=0).fit(X, y)
    rho, h = 0.05, 0.0025
    pad = int(round(rho / h)) + 2
    axis = np.arange(-pad, int(round(1 / h)) + pad + 1) * h
    G1, G2 = np.meshgrid(axis, axis, indexing="ij")
    labels = model.predict(np.column_stack([G1.ravel(), G2.ravel()])).reshape(G1.shape)
    inside = (axis >= -1e-12) & (axis <= 1 + 1e-12)
    for x0 in X[:2]:
        region = R.robust_region(model, x0, rho=rho, norm="linf", time_limit=60)
        assert region.converged and model.predict(region.x[None])[0] == region.target
        ok = (labels == region.target).astype(np.uint8)
        bounds = []
        for half in (int(np.ceil(rho / h)) + 1, int(np.floor(rho / h)) - 1):  # conservative, optimistic
            robust = minimum_filter(ok, size=2 * half + 1, mode="constant", cval=1)[np.ix_(inside, inside)]
            cand = np.column_stack([G1[np.ix_(inside, inside)][robust == 1], G2[np.ix_(inside, inside)][robust == 1]])
            bounds.append(np.abs(cand - x0).sum(axis=1).min())
        upper, lower = bounds
        assert lower - 2 * h <= region.distance <= upper + 1e-6, (lower, region.distance, upper)


# --------------------------------------------------------------------------- optimum unchanged by the speed work

#: l1 distances of Algorithm 1 on fixed instances (``_data()``, rho 0.05, domain [0, 1], the first rows),
#: recorded with the code before the speed work (issue 12): the optimum must not move.
RECORDED = {
    ("DT4", "linf"): [0.1157255, 0.1509151, 0.1886314, 0.603425],
    ("DT4", "l2"): [0.1157255, 0.1509151, 0.1886314, 0.603425],
    ("RF5", "linf"): [0.0669162, 0.0898698],
}
RECORDED_MODELS = {"DT4": TREE_MODELS[0], "RF5": TREE_MODELS[1]}


@pytest.mark.parametrize("cell_copies", [False, True])
@pytest.mark.parametrize("cuts", [1, 4])
@pytest.mark.parametrize("key", list(RECORDED), ids=lambda k: "-".join(k))
def test_the_optimum_on_fixed_instances_is_the_recorded_one(key, cuts, cell_copies):
    X, y = _data()
    model = RECORDED_MODELS[key[0]].fit(X, y)
    for x0, before in zip(X, RECORDED[key]):
        region = R.robust_region(model, x0, rho=0.05, norm=key[1], cuts=cuts, cell_copies=cell_copies,
                                 time_limit=120)
        assert region.converged and region.distance == pytest.approx(before, abs=2e-6)
        assert region.scenarios >= region.iterations
        assert all(h.master_compile_time == 0 for h in region.history)  # persistent: no modelling layer


def test_every_adverse_leaf_of_a_tree_is_a_violated_scenario():
    X, y = _data()
    model = DecisionTreeClassifier(max_depth=4, random_state=0).fit(X, y)
    x = np.array([0.45, 0.5, 0.5])
    target = 1 - int(model.predict(x[None])[0])
    ap = R.adversarial_problem(model, x, rho=0.2, norm="linf", target=target)
    assert ap.value > 0 and len(ap.more) >= 1
    for s in [ap.scenario] + ap.more:
        assert np.abs(s).max() <= 0.2 + 1e-12 and model.predict((x + s)[None])[0] != target


def test_sampled_adverse_cells_of_an_ensemble_are_violated_scenarios():
    X, y = _data()
    model = RandomForestClassifier(n_estimators=5, max_depth=3, random_state=0).fit(X, y)
    boxes = R.tree_boxes(model)
    for norm in R.NORMS:
        x = np.array([0.45, 0.5, 0.5])
        target = 1 - int(model.predict(x[None])[0])
        cells = adversarial.adverse_cells(boxes, x, rho=0.2, norm=norm, target=target, rng=np.random.default_rng(0))
        assert cells
        for s in cells:
            assert np.linalg.norm(s, ord=np.inf if norm == "linf" else 2) <= 0.2 + 1e-9
            assert model.predict((x + s)[None])[0] != target


# --------------------------------------------------------------------------- the domain

@pytest.mark.parametrize("norm", R.NORMS)
@pytest.mark.parametrize("model", TREE_MODELS[:2], ids=lambda m: type(m).__name__)
def test_an_unbounded_domain_gives_a_tree_the_optimum_of_a_wide_box(model, norm):
    X, y = _data()
    model.fit(X, y)
    for x0 in X[:2]:
        free = R.robust_region(model, x0, rho=0.05, norm=norm, lower=None, upper=None, time_limit=120)
        wide = R.robust_region(model, x0, rho=0.05, norm=norm, lower=-5.0, upper=6.0, time_limit=120)
        assert free.converged and wide.converged
        assert free.distance == pytest.approx(wide.distance, abs=2e-6)
        lo, hi = free.domain
        assert np.all(lo > -5) and np.all(hi < 6)  # closed just beyond the thresholds, not at the wide box
        assert R.certify_region(model, free.x, rho=0.05, norm=norm, target=free.target, n_samples=2000).certified


def test_tree_domain_closes_only_the_infinite_sides_beyond_every_threshold():
    X, y = _data()
    model = DecisionTreeClassifier(max_depth=3, random_state=0).fit(X, y)
    boxes = R.tree_boxes(model)
    x0 = np.array([0.5, 0.5, 0.5])
    lo, hi = R.tree_domain(boxes, x0, np.array([-np.inf, 0.0, -np.inf]), np.full(3, np.inf), rho=0.1)
    used = np.unique(model.tree_.feature[model.tree_.feature >= 0])
    thresholds = model.tree_.threshold[model.tree_.feature >= 0]
    features = model.tree_.feature[model.tree_.feature >= 0]
    for f in range(3):
        t = thresholds[features == f]
        if f not in used:
            assert (f == 1 and lo[f] == 0.0) or lo[f] == x0[f]
            assert hi[f] == x0[f]
            continue
        assert hi[f] > t.max() + 0.1 and hi[f] >= x0[f]
        assert lo[f] == 0.0 if f == 1 else lo[f] < t.min() - 0.1


def test_an_unbounded_domain_for_a_linear_model_is_the_closed_form():
    """l1 objective, l-inf set, no box: move the single feature with the largest |beta| until the
    robust score reaches the margin (the cheapest direction of an l1 step)."""
    X, y = _data()
    model = LogisticRegression().fit(X, y)
    beta, beta0 = model.coef_[0], model.intercept_[0]
    x0 = X[0]
    region = R.robust_region(model, x0, rho=0.05, lower=None, upper=None, margin=0.0)
    sign = 1 if region.target == 1 else -1
    need = 0.05 * np.abs(beta).sum() - sign * (beta @ x0 + beta0)
    assert region.converged and region.distance == pytest.approx(max(0.0, need) / np.abs(beta).max(), rel=1e-6)


@pytest.mark.parametrize("bound", [True, False], ids=["bound", "widening"])  # without the bound: the reach
@pytest.mark.parametrize("reach", [0.5, 0.02])  # 0.02: the region found is farther, the box widens to it
def test_an_unbounded_domain_for_a_network_is_exact_within_the_reach(reach, bound, monkeypatch):
    monkeypatch.setattr(algorithm, "NETWORK_BOUND", bound)
    X, y = _data()
    model = MLPClassifier((8,), max_iter=3000, random_state=0).fit(X, y)
    for x0 in X[:2]:
        free = R.robust_region(model, x0, rho=0.05, lower=None, upper=None, reach=reach, time_limit=120)
        wide = R.robust_region(model, x0, rho=0.05, lower=x0 - 3, upper=x0 + 3, time_limit=120)
        assert free.converged and free.distance == pytest.approx(wide.distance, abs=1e-5)
        lo, hi = free.domain
        assert free.distance <= (hi - x0).min() + 1e-9 and free.distance <= (x0 - lo).min() + 1e-9


def test_bad_domain_and_options_raise_clear_errors():
    X, y = _data()
    model = DecisionTreeClassifier(max_depth=2).fit(X, y)
    with pytest.raises(ValueError, match="exceeds"):
        R.robust_region(model, X[0], rho=0.1, lower=1.0, upper=0.0)
    with pytest.raises(ValueError, match="NaN"):
        R.robust_region(model, X[0], rho=0.1, lower=np.nan)
    with pytest.raises(ValueError, match="cuts"):
        R.robust_region(model, X[0], rho=0.1, cuts=0)
    with pytest.raises(ValueError, match="reach"):
        R.robust_region(MLPClassifier((2,), max_iter=50).fit(X, y), X[0], rho=0.1, reach=0.0)


# --------------------------------------------------------------------------- the Gurobi path

def _gurobi_presolve(monkeypatch):
    """Make every proven infeasible solve come back as Gurobi's presolve answers it: INF_OR_UNBD."""
    import cvxpy as cp

    real = cp.Problem.solve

    def solve(self, *args, **kwargs):
        value = real(self, *args, **kwargs)
        if self.status == cp.INFEASIBLE:
            self._status = cp.settings.INFEASIBLE_OR_UNBOUNDED
        return value

    monkeypatch.setattr(cp.Problem, "solve", solve)


def test_an_adversarial_problem_answered_infeasible_or_unbounded_means_robust(monkeypatch):
    """Issue 12: the robust point's AP is infeasible; Gurobi's presolve says INF_OR_UNBD, which must
    not end the loop early (every problem here is bounded by construction)."""
    X, y = _data()
    model = RandomForestClassifier(n_estimators=5, max_depth=3, random_state=0).fit(X, y)
    plain = [R.robust_region(model, x0, rho=0.05, time_limit=60) for x0 in X[:3]]
    _gurobi_presolve(monkeypatch)
    for x0, before in zip(X[:3], plain):
        region = R.robust_region(model, x0, rho=0.05, time_limit=60)
        assert region.converged, region.status
        assert region.distance == pytest.approx(before.distance, abs=1e-6)
        assert region.history[-1].ap_value == -math.inf
    x = plain[0].x
    assert R.certified_radius(model, x, target=plain[0].target, cap=0.01) == pytest.approx(0.01)


def test_a_model_too_large_for_the_licence_falls_back_and_the_region_says_so(monkeypatch):
    """A size-limited commercial licence refuses the growing master problem: the open-source solver
    solves it, the region converges to the same optimum and names the refusing solver."""
    from explainopt import solvers

    real_choose, real_solve = solvers.choose_solver, solvers._solve_with

    def choose(kind, solver=None):
        return "gurobi" if solver == "gurobi" else real_choose(kind, solver)

    def solve_with(problem, name, kind, **kwargs):
        if name != "gurobi":
            return real_solve(problem, name, kind, **kwargs)
        if problem.size_metrics.num_scalar_variables > 60:
            return solvers.SolveResult(solvers.LICENCE_LIMIT, None, name, 0.0, message="gurobi: licence too small")
        result = real_solve(problem, real_choose(kind, None), kind, **kwargs)
        result.solver = "gurobi"
        return result

    class RefusingGurobi(solvers._HighsMatrix):  # the persistent master problem's Gurobi, licence-limited
        name = "gurobi"

        def solve(self, time_limit):
            if self.m.n_cols > 60:
                raise solvers.LicenceLimitError("gurobi: licence too small")
            return super().solve(time_limit)

    X, y = _data()
    model = RandomForestClassifier(n_estimators=5, max_depth=3, random_state=0).fit(X, y)
    plain = R.robust_region(model, X[2], rho=0.05, time_limit=60)
    monkeypatch.setattr(solvers, "choose_solver", choose)
    monkeypatch.setattr(solvers, "_solve_with", solve_with)
    monkeypatch.setitem(solvers.MATRIX_SOLVERS, "gurobi", RefusingGurobi)
    monkeypatch.setattr(solvers, "gurobipy", solvers.gurobipy or object())
    region = R.robust_region(model, X[2], rho=0.05, time_limit=60, solver="gurobi")
    assert region.converged and region.distance == pytest.approx(plain.distance, abs=1e-6)
    assert region.fallback_from == "gurobi" and "highs" in region.solver and "gurobi" in region.solver


@pytest.mark.skipif(not __import__("explainopt").solvers.solver_available("gurobi"), reason="gurobi unavailable")
@pytest.mark.parametrize("model", [TREE_MODELS[1], LOOP_MODELS[-1]], ids=lambda m: type(m).__name__)
def test_gurobi_converges_to_the_open_source_optimum(model):
    X, y = _data()
    model.fit(X, y)
    for x0 in X[:2]:
        ours = R.robust_region(model, x0, rho=0.05, solver="gurobi", time_limit=60)
        open_source = R.robust_region(model, x0, rho=0.05, time_limit=60)
        assert ours.converged, ours.status
        assert ours.distance == pytest.approx(open_source.distance, abs=1e-5)
        assert R.certify_region(model, ours.x, rho=0.05, target=ours.target, n_samples=2000).certified


# --------------------------------------------------------------------------- the persistent master problem

@pytest.mark.parametrize("norm", R.NORMS)
@pytest.mark.parametrize("model", TREE_MODELS + [LOOP_MODELS[-1]], ids=lambda m: type(m).__name__)
def test_the_persistent_master_finds_the_optimum_of_the_cvxpy_master(model, norm, monkeypatch):
    """Issue 12: the master problem kept alive in HiGHS (trees in x-space with shared split binaries;
    for l-inf, adverse cells excluded by one cut each instead of a model copy per scenario) reaches the
    optimum of the cvxpy master problem with one encoded copy per scenario, and certified regions."""
    X, y = _data()
    model.fit(X, y)
    fast = [R.robust_region(model, x0, rho=0.05, norm=norm, time_limit=120) for x0 in X[:3]]
    monkeypatch.setattr(solvers, "MATRIX_SOLVERS", {})
    for x0, region in zip(X[:3], fast):
        plain = R.robust_region(model, x0, rho=0.05, norm=norm, time_limit=120)
        assert region.converged and plain.converged
        assert all(h.master_compile_time == 0 for h in region.history)
        assert region.distance == pytest.approx(plain.distance, abs=2e-6)
        assert model.predict(region.x[None])[0] == region.target
        assert R.certify_region(model, region.x, rho=0.05, norm=norm, target=region.target, n_samples=2000).certified


@pytest.mark.parametrize("model", TREE_MODELS[1:], ids=lambda m: type(m).__name__)
def test_an_adverse_core_is_adverse_everywhere_and_holds_its_point(model, rng):
    X, y = _data()
    model.fit(X, y)
    boxes = R.tree_boxes(model)
    for x in rng.uniform(size=(20, 3)):
        target = 1 - int(model.predict(x[None])[0])  # x itself is adverse for this target
        lo, hi = master.adverse_core(boxes, x, target)
        assert np.all(lo < x) and np.all(x <= hi)
        inside = rng.uniform(np.maximum(lo, -0.5), np.minimum(hi, 1.5), size=(500, 3))
        assert np.all(model.predict(inside) != target)


# --------------------------------------------------------------------------- networks: an upper bound first

@pytest.mark.parametrize("norm", R.NORMS)
def test_a_network_distance_bound_is_a_certified_robust_point_no_closer_than_the_optimum(norm):
    X, y = _data()
    model = LOOP_MODELS[-1].fit(X, y)
    layers = encoders.networks.network_layers(model)
    for x0 in X[:4]:
        target = 1 - int(model.predict(x0[None])[0])
        bound, point = R.network_distance_bound(layers, x0, np.zeros(3), np.ones(3), rho=0.05, norm=norm,
                                                target=target, objective="l1", margin=1e-4)
        assert np.isfinite(bound) and np.all((point >= 0) & (point <= 1))
        assert bound == pytest.approx(np.abs(point - x0).sum())
        assert R.certify_region(model, point, rho=0.05, norm=norm, target=target, n_samples=2000).certified
        region = R.robust_region(model, x0, rho=0.05, norm=norm, time_limit=120)
        assert region.converged and region.distance <= bound + 1e-6


@pytest.mark.parametrize("objective", ["l1", "linf"])
@pytest.mark.parametrize("domain", [(0.0, 1.0), (None, None)], ids=["box", "unbounded"])
def test_the_network_bound_leaves_the_optimum_unchanged(domain, objective, monkeypatch):
    """The master problem restricted to the bound (its box, the l1 ball's neuron bounds, the distance row)
    reaches the optimum of the loop without it, on fixed instances."""
    X, y = _data()
    model = LOOP_MODELS[-1].fit(X, y)
    for norm in R.NORMS:
        fast = [R.robust_region(model, x0, rho=0.05, norm=norm, objective=objective, lower=domain[0],
                                upper=domain[1], time_limit=120) for x0 in X[:3]]
        with monkeypatch.context() as m:
            m.setattr(R, "NETWORK_BOUND", False)
            plain = [R.robust_region(model, x0, rho=0.05, norm=norm, objective=objective, lower=domain[0],
                                     upper=domain[1], time_limit=120) for x0 in X[:3]]
        for a, b in zip(fast, plain):
            assert a.converged and b.converged
            assert a.distance == pytest.approx(b.distance, abs=2e-6)
            assert R.certify_region(model, a.x, rho=0.05, norm=norm, target=a.target, n_samples=2000).certified



@pytest.mark.parametrize("seed", [1, 9])
def test_the_certified_radius_of_a_forest_is_the_distance_to_its_nearest_adverse_cell(seed):
    # Discrete features make the trees split at the same thresholds, so leaves of two trees that only touch on
    # a threshold (y <= t in one, y > t in the other) are common; they share no point and must not count.
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 3, size=(300, 3)) / 2.0
    y = ((X @ rng.normal(size=3) + rng.normal(0, 0.5, 300)) > 0).astype(int)
    forest = RandomForestClassifier(n_estimators=25, max_depth=4, random_state=seed).fit(X, y)
    cuts = [np.unique(np.r_[-3.0, 4.0, *[e.tree_.threshold[e.tree_.feature == f] for e in forest.estimators_]])
            for f in range(3)]
    cell = np.array(list(itertools.product(*[range(len(c) - 1) for c in cuts])))  # every cell of the split grid
    lo = np.stack([cuts[f][cell[:, f]] for f in range(3)], 1)
    hi = np.stack([cuts[f][cell[:, f] + 1] for f in range(3)], 1)
    predicted = forest.predict((lo + hi) / 2)
    for x in rng.uniform(0, 1, size=(10, 3)):
        target = int(forest.predict(x[None])[0])
        adverse = predicted != target
        exact = np.maximum(0, np.maximum(lo[adverse] - x, x - hi[adverse])).max(axis=1).min()
        assert R.certified_radius(forest, x, norm="linf", target=target, cap=3) == pytest.approx(exact, abs=1e-5)


# --------------------------------------------------------------------------- targets are class labels

@pytest.mark.parametrize("model", [TREE_MODELS[0], TREE_MODELS[1], LogisticRegression()],
                         ids=lambda m: type(m).__name__)
def test_certificates_and_radii_take_the_target_as_a_label(model):
    """certify_region and certified_radius read `target` as a label of ``model.classes_`` (None: the class
    predicted at x), and agree with the same model fitted on 0/1 labels."""
    X, y = _data()
    named = type(model)(**model.get_params()).fit(X, np.where(y == 1, "yes", "no"))
    plain = type(model)(**model.get_params()).fit(X, y)
    region = R.robust_region(named, X[0], rho=0.05, time_limit=120)
    assert region.converged and region.target in ("yes", "no")
    index = int(region.target == "yes")
    for target in (region.target, None):
        cert = R.certify_region(named, region.x, rho=0.05, target=target, n_samples=1000)
        assert cert.certified and cert.ap_value == R.certify_region(plain, region.x, rho=0.05, target=index,
                                                                    n_samples=1000).ap_value
        radius = R.certified_radius(named, region.x, target=target, cap=1)
        assert radius == pytest.approx(R.certified_radius(plain, region.x, target=index, cap=1))
        assert radius >= 0.05 - 1e-6
    other = "no" if region.target == "yes" else "yes"
    assert R.certified_radius(named, region.x, target=other, cap=1) == 0.0
    assert not R.certify_region(named, region.x, rho=0.05, target=other, n_samples=100).certified


def test_a_target_that_is_not_a_class_label_is_refused_by_name():
    X, y = _data()
    model = DecisionTreeClassifier(max_depth=3, random_state=0).fit(X, np.where(y == 1, "yes", "no"))
    for check in (lambda: R.certify_region(model, X[0], rho=0.05, target=1),
                  lambda: R.certified_radius(model, X[0], target="maybe")):
        with pytest.raises(ValueError, match="target=.* is not one of the model's classes"):
            check()
