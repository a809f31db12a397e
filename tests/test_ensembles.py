"""Robust counterfactuals for randomized ensembles (Forel et al.): thresholds, CEs, retraining validity."""

import math
from dataclasses import dataclass

import cvxpy as cp
import numpy as np
import pytest
from scipy import stats

from sklearn.ensemble import IsolationForest, RandomForestClassifier
from sklearn.model_selection import train_test_split

from explainopt.counterfactuals import Counterfactual, CounterfactualResult, nearest_counterfactual
from explainopt.counterfactuals import ensembles as ens
from explainopt.counterfactuals.nearest import counterfactual_problem
from explainopt.datasets import load_dataset
from explainopt.encoders import encode
from explainopt.encoders.trees import cell_distance_bound

# --------------------------------------------------------------------------- p*(N, alpha)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 10, 11, 100, 101, 400])
@pytest.mark.parametrize("alpha", [0.01, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7])
def test_p_star_solves_binomial_cdf_equation_for_odd_and_even_n(n, alpha):
    p = ens.robustness_threshold(n, alpha)
    assert stats.binom.cdf(n / 2, n, p) == pytest.approx(alpha, abs=1e-10)
    # the smallest such p: just below it the c.d.f. is above alpha
    assert stats.binom.cdf(n / 2, n, p - 1e-7) > alpha


def test_p_star_hand_values():
    # N = 1: g(p) = 1 - p; N = 2: g(p) = 1 - p^2; N = 3: g(p) = (1-p)^3 + 3p(1-p)^2 = 1 - 3p^2 + 2p^3
    assert ens.robustness_threshold(1, 0.2) == pytest.approx(0.8)
    assert ens.robustness_threshold(2, 0.19) == pytest.approx(0.9)
    assert ens.robustness_threshold(3, 0.5) == pytest.approx(0.5)
    p = ens.robustness_threshold(3, 0.1)
    assert 1 - 3 * p**2 + 2 * p**3 == pytest.approx(0.1)
    # odd N at alpha = 1/2 recovers the naive threshold (Section 3.1)
    for n in (1, 5, 101):
        assert ens.robustness_threshold(n, 0.5) == pytest.approx(0.5)


def test_p_star_matches_a_fine_bisection_not_a_grid():
    for n, alpha in [(100, 0.05), (100, 0.2), (401, 0.01)]:
        lo, hi = 0.0, 1.0
        for _ in range(200):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if stats.binom.cdf(n // 2, n, mid) > alpha else (lo, mid)
        assert ens.robustness_threshold(n, alpha) == pytest.approx(hi, abs=1e-12)


def test_p_star_increases_with_the_robustness_target():  # Proposition 3.3
    for n in (1, 4, 25, 100, 101):
        values = [ens.robustness_threshold(n, a) for a in (0.5, 0.4, 0.3, 0.2, 0.1, 0.05, 0.01)]
        assert np.all(np.diff(values) > 0)


def test_p_star_decreases_with_n_within_odd_and_even_and_odd_below_even():  # Lemma 3.4
    for alpha in (0.01, 0.1, 0.3, 0.5):
        odd = [ens.robustness_threshold(n, alpha) for n in range(1, 402, 2)]
        even = [ens.robustness_threshold(n, alpha) for n in range(2, 402, 2)]
        assert np.all(np.diff(odd) <= 1e-12) and np.all(np.diff(even) <= 1e-12)
        for m in range(1, 200):  # (c): p*_{2m+1} <= p*_{2m}, any alpha
            assert ens.robustness_threshold(2 * m + 1, alpha) <= ens.robustness_threshold(2 * m, alpha) + 1e-12
    assert ens.robustness_threshold(3, 0.8) <= ens.robustness_threshold(2, 0.8)


def test_majority_probability_reaches_the_target_at_p_star():
    for n, alpha in [(5, 0.1), (100, 0.05), (101, 0.3)]:
        p = ens.robustness_threshold(n, alpha)
        assert ens.ensemble_majority_probability(n, p) == pytest.approx(1 - alpha)


# --------------------------------------------------------------------------- Robust-SAA (eq. 8)


def test_robust_saa_follows_equation_8_by_hand():
    n, alpha, beta = 100, 0.2, 0.05
    p = ens.robustness_threshold(n, alpha)
    rho_ac = (n * p + 2) / (n + 4)
    expected = p + 1.6448536269514722 * math.sqrt(rho_ac * (1 - rho_ac) / n)
    assert ens.robust_saa_threshold(n, alpha, beta) == pytest.approx(expected)


@pytest.mark.parametrize("form", ["paper", "code"])
def test_robust_saa_is_above_direct_saa_and_more_conservative_for_smaller_beta(form):
    for n in (100, 101, 400):
        for alpha in (0.5, 0.4, 0.3, 0.2, 0.15, 0.1, 0.05, 0.01):
            direct = ens.robustness_threshold(n, alpha)
            r10 = ens.robust_saa_threshold(n, alpha, 0.1, form=form)
            r05 = ens.robust_saa_threshold(n, alpha, 0.05, form=form)
            assert direct < r10 <= r05 <= 1.0


def test_code_form_lower_bound_equals_p_star():
    n, alpha, beta = 100, 0.1, 0.1
    rho = ens.robust_saa_threshold(n, alpha, beta, form="code")
    p_ac = (n * rho + 2) / (n + 4)
    assert p_ac - stats.norm.ppf(1 - beta) * math.sqrt(p_ac * (1 - p_ac) / n) == pytest.approx(
        ens.robustness_threshold(n, alpha), abs=1e-9)


def test_thresholds_reject_bad_inputs():
    with pytest.raises(ValueError, match="alpha"):
        ens.robustness_threshold(10, 1.5)
    with pytest.raises(ValueError, match="n_estimators"):
        ens.robustness_threshold(0, 0.1)
    with pytest.raises(ValueError, match="beta"):
        ens.robust_saa_threshold(10, 0.1, 0.0)
    with pytest.raises(ValueError, match="method"):
        ens.score_threshold("magic", n_estimators=10)


# --------------------------------------------------------------------------- validity intervals


def test_binomial_interval_is_clopper_pearson_and_contains_the_rate():
    est = ens.binomial_interval(17, 100)
    assert est.rate == pytest.approx(0.17)
    assert est.low == pytest.approx(stats.beta.ppf(0.025, 17, 84))
    assert est.high == pytest.approx(stats.beta.ppf(0.975, 18, 83))
    assert ens.binomial_interval(0, 10).low == 0.0 and ens.binomial_interval(10, 10).high == 1.0


def test_binomial_interval_covers_the_true_rate_about_95_percent(rng):
    n, p = 60, 0.7
    draws = rng.binomial(n, p, size=400)
    covered = [ens.binomial_interval(int(k), n).low <= p <= ens.binomial_interval(int(k), n).high for k in draws]
    assert np.mean(covered) >= 0.93


# --------------------------------------------------------------------------- data, forests and CEs


@dataclass
class Forest:
    """A forest with its training rows, factuals and feature spec (the set-up of Section 5)."""

    forest: RandomForestClassifier
    X_train: np.ndarray
    y_train: np.ndarray
    X_factual: np.ndarray
    spec: list


def _forest(name, *, n_estimators, max_depth, n_factuals=5):
    data = load_dataset(f"ensembles/{name}").scaled()
    X_train, X_factual, y_train, _ = train_test_split(data.X.to_numpy(float), data.y.to_numpy(int),
                                                      test_size=n_factuals, random_state=0)
    forest = RandomForestClassifier(n_estimators=n_estimators, max_depth=max_depth, max_features="sqrt",
                                    random_state=0).fit(X_train, y_train)
    return Forest(forest, X_train, y_train, X_factual, list(data.spec))


@pytest.fixture(scope="module")
def compas_sim():
    return _forest("COMPAS", n_estimators=20, max_depth=3)


def test_feature_weights_are_one_on_continuous_and_a_quarter_elsewhere(compas_sim):
    w = ens.feature_weights(compas_sim.spec)
    assert set(w) <= {0.25, 1.0}
    assert all((wj == 1.0) == (f.kind == "continuous") for wj, f in zip(w, compas_sim.spec))


def test_lof_candidates_are_the_nearest_target_points_with_positive_densities(compas_sim, rng):
    s = compas_sim
    w = ens.feature_weights(s.spec)
    X_t = s.X_train[s.y_train == 1]
    lof = ens.lof_candidates(X_t, s.X_factual[0], weights=w, n_candidates=10)
    assert lof.points.shape == (10, s.X_train.shape[1])
    d_all = np.sort(ens.weighted_l1(np.unique(X_t, axis=0), s.X_factual[0], w))
    assert np.allclose(np.sort(ens.weighted_l1(lof.points, s.X_factual[0], w)), d_all[:10])
    assert np.all(lof.delta > 0) and np.allclose(lof.lrd * lof.delta, 1)


def _ce(sim, i, **kw):
    return ens.ensemble_counterfactual(sim.forest, sim.X_factual[i], spec=sim.spec, **kw)


def test_naive_and_direct_saa_counterfactuals_are_valid_under_the_forest_itself(compas_sim):
    s = compas_sim
    for i in range(3):
        target = 1 - int(s.forest.predict(s.X_factual[i:i + 1])[0])
        previous = -1.0
        for alpha in (0.5, 0.2, 0.05):
            tau = ens.robustness_threshold(s.forest.n_estimators, alpha)
            ce = _ce(s, i, tau=tau)
            assert ce.status == "optimal" and ce.target == target
            proba = s.forest.predict_proba(ce.x.reshape(1, -1))[0, target]
            if ce.relaxed:  # tau unreachable under the actionability constraints: slack makes up the rest
                assert ce.relaxation > 0 and proba >= tau - ce.relaxation - 1e-6
            else:
                assert ce.valid and proba >= tau and ce.meets_threshold
            assert ce.distance >= previous - 1e-6  # a higher threshold never gets closer
            previous = ce.distance
            fixed = [j for j, f in enumerate(s.spec) if f.actionability == "fixed"]
            assert np.allclose(ce.x[fixed], s.X_factual[i][fixed])
            inc = [j for j, f in enumerate(s.spec) if f.actionability == "increase"]
            assert np.all(ce.x[inc] >= s.X_factual[i][inc] - 1e-7)


def test_robust_saa_is_at_least_as_far_as_direct_saa(compas_sim):
    s = compas_sim
    n = s.forest.n_estimators
    direct = _ce(s, 0, tau=ens.robustness_threshold(n, 0.2))
    robust = _ce(s, 0, tau=ens.robust_saa_threshold(n, 0.2, 0.05))
    assert robust.tau > direct.tau
    if not robust.relaxed:  # relaxed problems minimize the penalized slack first, not the distance
        assert robust.distance >= direct.distance - 1e-6 and robust.valid and robust.meets_threshold


def test_an_unreachable_threshold_is_relaxed_and_reported(compas_sim):
    s = compas_sim
    ce = _ce(s, 0, tau=1.0)  # score 1 needs every tree's leaf to be pure: infeasible here
    if ce.relaxed:
        assert ce.relaxation > 0 and not ce.meets_threshold and ce.x is not None
    else:  # the forest can reach 1: then the point must really score 1
        assert ce.meets_threshold


def test_isolation_forest_constraint_gives_inliers(compas_sim):
    s = compas_sim
    target = 1 - int(s.forest.predict(s.X_factual[:1])[0])
    iso = ens.fit_isolation_forest(s.X_train[s.y_train == target], contamination=0.2, n_estimators=10)
    ce = _ce(s, 0, tau=0.5, isolation_forest=iso)
    assert ce.valid and (ce.relaxed or ce.inlier)


def test_lof_penalty_never_shortens_the_counterfactual(compas_sim):
    s = compas_sim
    w = ens.feature_weights(s.spec)
    target = 1 - int(s.forest.predict(s.X_factual[:1])[0])
    lof = ens.lof_candidates(s.X_train[s.forest.predict(s.X_train) == target], s.X_factual[0], weights=w)
    plain = _ce(s, 0)
    with_lof = _ce(s, 0, lof=lof, lof_weight=10.0)
    assert with_lof.valid and with_lof.distance >= plain.distance - 1e-6


def test_the_ensemble_counterfactual_is_the_nearest_counterfactual_with_a_score_threshold(compas_sim):
    """Same feature space, distance, encoding and repair: without a relaxation, plausibility model or
    penalty the two methods solve the same problem."""
    s = compas_sim
    weights = ens.feature_weights(s.spec)
    tau, compared = ens.robustness_threshold(s.forest.n_estimators, 0.5), 0
    for i in range(3):
        target = 1 - int(s.forest.predict(s.X_factual[i:i + 1])[0])
        ce = _ce(s, i, tau=tau)
        near = nearest_counterfactual(s.forest, s.X_factual[i], s.spec, weights=weights, target=target,
                                      threshold=tau if target == 1 else 1 - tau, margin=1e-5, mip_gap=1e-4)
        assert isinstance(ce, Counterfactual) and isinstance(ce, CounterfactualResult)
        if ce.relaxed:  # tau unreachable under the actionability constraints: the hard problems are infeasible
            assert near.status == "infeasible"
            continue
        assert ce.distance == pytest.approx(near.distance, abs=1e-6) and ce.valid == near.valid
        assert ce.score == pytest.approx(ce.model_output if target == 1 else 1 - ce.model_output)
        assert ce.time >= ce.solve_time and ce.solver == near.solver
        compared += 1
    assert compared


# --------------------------------------------------------------------------- several thresholds, one problem


def _thresholds(n):
    """Naive, Direct-SAA at four tolerances, one Robust-SAA and an unreachable one, unsorted, with a repeat."""
    return [ens.robustness_threshold(n, 0.1), 0.5, ens.robustness_threshold(n, 0.5), 1.0,
            ens.robustness_threshold(n, 0.3), ens.robust_saa_threshold(n, 0.1, 0.05),
            ens.robustness_threshold(n, 0.01), 0.5]


def _assert_same_optimum(chained, alone, tau, target, forest):
    assert chained.tau == alone.tau == tau and chained.target == alone.target == target
    assert chained.status == alone.status and chained.relaxed == alone.relaxed
    if alone.x is None:
        assert chained.x is None
        return
    proba = forest.predict_proba(chained.x.reshape(1, -1))[0, target]
    assert chained.score == pytest.approx(proba, abs=1e-12)  # the forest's own score, not the MILP's
    assert chained.valid == (int(forest.predict(chained.x.reshape(1, -1))[0]) == target)
    if chained.relaxed:  # the penalized objective is what both minimized
        penalty = 5000.0 * len(chained.x)
        assert chained.distance + penalty * chained.relaxation == pytest.approx(
            alone.distance + penalty * alone.relaxation, rel=2e-4, abs=1e-6)
        return
    # both solved to optimality within the MIP gap 1e-4: the same optimum
    assert chained.distance == pytest.approx(alone.distance, rel=2e-4, abs=1e-6)
    assert chained.valid and chained.meets_threshold and proba >= tau


@pytest.mark.parametrize("reuse", [True, False])
def test_one_problem_for_several_thresholds_has_the_optima_of_separate_solves(compas_sim, reuse):
    """ensemble_counterfactuals builds the problem once with tau a cvxpy Parameter, warm-starts, and
    (reuse) returns a lower threshold's point where it is optimal; each objective equals a separate solve."""
    s = compas_sim
    taus = _thresholds(s.forest.n_estimators)
    n_reused = 0
    for i in range(3):
        target = 1 - int(s.forest.predict(s.X_factual[i:i + 1])[0])
        chained = ens.ensemble_counterfactuals(s.forest, s.X_factual[i], spec=s.spec, taus=taus, reuse=reuse)
        assert len(chained) == len(taus)
        for tau, ce in zip(taus, chained):
            _assert_same_optimum(ce, _ce(s, i, tau=tau), tau, target, s.forest)
            n_reused += ce.reused
            if ce.reused:  # no solve: the lower threshold's point, proven optimal there, meets this one
                assert ce.solve_time == 0.0 and not ce.relaxed and ce.score >= tau + 1e-5
        assert chained[1].distance == chained[7].distance  # the repeated threshold: one answer
    assert (n_reused > 0) == reuse


def test_several_thresholds_on_larger_forests_keep_the_optima():
    """Larger fixed instances: 30 trees of depth 3 on German-Credit, naive and Direct-SAA."""
    sim = _forest("German-Credit", n_estimators=30, max_depth=3, n_factuals=2)
    n = sim.forest.n_estimators
    taus = [0.5] + [ens.robustness_threshold(n, a) for a in (0.5, 0.3, 0.1)]
    for i in range(2):
        target = 1 - int(sim.forest.predict(sim.X_factual[i:i + 1])[0])
        chained = ens.ensemble_counterfactuals(sim.forest, sim.X_factual[i], spec=sim.spec, taus=taus)
        for tau, ce in zip(taus, chained):
            _assert_same_optimum(ce, _ce(sim, i, tau=tau), tau, target, sim.forest)


def test_several_thresholds_with_a_plausibility_model_keep_the_optima(compas_sim):
    s = compas_sim
    target = 1 - int(s.forest.predict(s.X_factual[:1])[0])
    iso = ens.fit_isolation_forest(s.X_train[s.y_train == target], contamination=0.2, n_estimators=10)
    taus = [0.5, ens.robustness_threshold(s.forest.n_estimators, 0.2)]
    chained = ens.ensemble_counterfactuals(s.forest, s.X_factual[0], spec=s.spec, taus=taus, isolation_forest=iso)
    for tau, ce in zip(taus, chained):
        alone = _ce(s, 0, tau=tau, isolation_forest=iso)
        _assert_same_optimum(ce, alone, tau, target, s.forest)
        assert ce.inlier == alone.inlier


CONTAMINATIONS = (0.2, 0.05, 0.5, 0.1)  # unsorted: the results follow the order given


def _isolation_levels(sim, target, contaminations=CONTAMINATIONS, random_state=0):
    X_target = sim.X_train[sim.y_train == target]
    return X_target, [ens.fit_isolation_forest(X_target, contamination=c, n_estimators=10, random_state=random_state)
                      for c in contaminations]


def test_isolation_forests_of_several_contaminations_differ_only_in_offset(compas_sim):
    """scikit-learn's contamination sets offset_ alone, the contamination percentile of the training scores:
    the trees, and so score_samples, are the same for every level (what the chained levels rely on)."""
    X_target, levels = _isolation_levels(compas_sim, 1)
    first = levels[0]
    for c, iso in zip(CONTAMINATIONS, levels):
        assert iso.max_samples_ == first.max_samples_ and len(iso.estimators_) == len(first.estimators_)
        for a, b, fa, fb in zip(first.estimators_, iso.estimators_, first.estimators_features_,
                                iso.estimators_features_):
            assert np.array_equal(fa, fb)
            for k in ("feature", "threshold", "children_left", "children_right", "n_node_samples", "value"):
                assert np.array_equal(getattr(a.tree_, k), getattr(b.tree_, k)), k
        scores = iso.score_samples(X_target)
        assert np.array_equal(scores, first.score_samples(X_target))
        assert iso.offset_ == np.percentile(scores, 100 * c)
        assert np.array_equal(iso.predict(X_target) == 1, scores >= iso.offset_)
    assert len({iso.offset_ for iso in levels}) == len(levels)


def test_chained_contamination_levels_have_the_optima_of_separate_solves(compas_sim):
    """isolation_forest_counterfactuals encodes one isolation forest with its inlier threshold a Parameter,
    solves the levels from the loosest up and reuses an optimum that is an inlier at the next level; every
    objective equals a separate solve with that level's isolation forest, every point is re-checked with
    the forest and its level's isolation forest."""
    s = compas_sim
    n_reused = n_solved = 0
    for i in range(4):
        target = 1 - int(s.forest.predict(s.X_factual[i:i + 1])[0])
        _, levels = _isolation_levels(s, target)
        chained = ens.isolation_forest_counterfactuals(s.forest, s.X_factual[i], spec=s.spec, isolation_forests=levels)
        assert len(chained) == len(levels)
        for iso, ce in zip(levels, chained):
            alone = _ce(s, i, tau=0.5, isolation_forest=iso)
            _assert_same_optimum(ce, alone, 0.5, target, s.forest)
            if ce.x is not None:
                assert ce.inlier == (int(iso.predict(ce.x.reshape(1, -1))[0]) == 1)
                assert ce.relaxed or ce.inlier
            if ce.reused:  # no solve: a looser level's optimum, an inlier at this one
                assert ce.solve_time == 0.0 and ce.inlier and not ce.relaxed
            n_reused += ce.reused
            n_solved += not ce.reused
        strictest = int(np.argmax(CONTAMINATIONS))
        assert all(ce.distance <= chained[strictest].distance + 1e-6 for ce in chained if not ce.relaxed)
    assert n_reused and n_solved  # both paths of the chain ran on these instances


def test_contamination_levels_need_the_same_trees(compas_sim):
    s = compas_sim
    target = 1 - int(s.forest.predict(s.X_factual[:1])[0])
    _, levels = _isolation_levels(s, target, (0.1, 0.2))
    _, other = _isolation_levels(s, target, (0.3,), random_state=1)
    with pytest.raises(ValueError, match="offset_"):
        ens.isolation_forest_counterfactuals(s.forest, s.X_factual[0], spec=s.spec, isolation_forests=levels + other)
    with pytest.raises(TypeError, match="IsolationForest"):
        ens.isolation_forest_counterfactuals(s.forest, s.X_factual[0], spec=s.spec, isolation_forests=[s.forest])
    with pytest.raises(ValueError, match="empty"):
        ens.isolation_forest_counterfactuals(s.forest, s.X_factual[0], spec=s.spec, isolation_forests=[])


def test_bad_inputs_are_refused(compas_sim):
    s = compas_sim
    with pytest.raises(ValueError, match="tau"):
        _ce(s, 0, tau=1.5)
    with pytest.raises(ValueError, match="tau"):
        ens.ensemble_counterfactuals(s.forest, s.X_factual[0], spec=s.spec, taus=[0.5, -0.1])
    with pytest.raises(ValueError, match="target"):
        _ce(s, 0, target=2)
    with pytest.raises(ValueError, match="features"):
        ens.ensemble_counterfactual(s.forest, s.X_factual[0][:-1], spec=s.spec)


# --------------------------------------------------------------------------- distance bounds from the splits


def test_cell_distance_bound_is_the_distance_to_the_chosen_cell_and_never_above_the_distance(compas_sim, rng):
    """At every integer point of the split binaries (from a point x) the bound is the distance from x0 to
    the cell of x: never above |x - x0|, and equal to it where x is x0 projected onto that cell."""
    s = compas_sim
    x = cp.Variable(s.X_train.shape[1])
    enc = encode(s.forest, x, lower=np.zeros(x.size), upper=np.ones(x.size))
    feat, thr, eps = enc.variables["split_keys"]
    x0 = s.X_factual[0]
    features, bound = cell_distance_bound(enc, x0)
    assert set(features) == set(feat)
    for point in np.r_[s.X_train[:20], rng.uniform(size=(20, x.size))]:
        point32 = point.astype(np.float32).astype(float)
        enc.variables["split"].value = (point32[feat] <= thr).astype(float)
        cell_lo, cell_hi = np.zeros(x.size), np.ones(x.size)  # the cell of the point, margins included
        for f, t, e, left in zip(feat, thr, eps, point32[feat] <= thr):
            cell_lo[f], cell_hi[f] = (cell_lo[f], min(cell_hi[f], t - e)) if left else (max(cell_lo[f], t + e),
                                                                                       cell_hi[f])
        nearest = np.clip(x0, cell_lo, cell_hi)
        assert bound.value == pytest.approx(np.abs(nearest - x0)[features], abs=1e-12)
        inside = np.clip(point, cell_lo, cell_hi)  # the point itself, up to the margins
        assert np.all(bound.value <= np.abs(inside - x0)[features] + 1e-12)


@pytest.mark.parametrize("levers", [dict(cell_bounds=True, mip_start=False), dict(cell_bounds=False, mip_start=True),
                                    dict(cell_bounds=True, mip_start=True)])
@pytest.mark.parametrize("i", range(3))
def test_distance_bounds_and_mip_starts_keep_the_optima_of_the_plain_formulation(compas_sim, i, levers):
    """cell_bounds adds valid rows only and mip_start an incumbent only: every threshold's optimum equals
    the plain formulation's, and every point is checked with the forest's own predict."""
    s = compas_sim
    taus = [0.5] + [ens.robustness_threshold(s.forest.n_estimators, a) for a in (0.5, 0.3, 0.1, 0.01)]
    target = 1 - int(s.forest.predict(s.X_factual[i:i + 1])[0])
    common = dict(spec=s.spec, taus=taus, reuse=False)
    faster = ens.ensemble_counterfactuals(s.forest, s.X_factual[i], **levers, **common)
    plain = ens.ensemble_counterfactuals(s.forest, s.X_factual[i], cell_bounds=False, mip_start=False, **common)
    for tau, ce, alone in zip(taus, faster, plain):
        _assert_same_optimum(ce, alone, tau, target, s.forest)


def test_a_lower_thresholds_point_is_pushed_to_a_point_of_the_feature_space_meeting_a_higher_one(compas_sim):
    """The MIP start: from the naive counterfactual, a point whose forest score meets the higher goal,
    inside the bounds, with every one-hot group still one-hot and immutable features unchanged."""
    s = compas_sim
    problem = counterfactual_problem(s.forest, s.X_factual[0], s.spec, weights=ens.feature_weights(s.spec))
    target = 1 - int(s.forest.predict(s.X_factual[:1])[0])
    naive = _ce(s, 0, tau=0.5)
    goal = naive.score + 0.05
    point = ens._pushed_further(s.forest, naive.x, goal=goal, class_index=target, x0=problem.x0,
                                weights=ens.feature_weights(s.spec), space=problem.space, spec=s.spec,
                                cuts=ens._cut_points(problem.encoding, problem.space.kinds))
    assert point is not None
    assert s.forest.predict_proba(point.reshape(1, -1))[0, target] >= goal
    assert np.all((problem.space.lower <= point) & (point <= problem.space.upper))
    for group in {f.group for f in s.spec if f.group is not None}:
        assert point[[j for j, f in enumerate(s.spec) if f.group == group]].sum() == 1
    impossible = ens._pushed_further(s.forest, naive.x, goal=1.1, class_index=target, x0=problem.x0,
                                     weights=ens.feature_weights(s.spec), space=problem.space, spec=s.spec,
                                     cuts=ens._cut_points(problem.encoding, problem.space.kinds))
    assert impossible is None


# --------------------------------------------------------------------------- float32-safe encoding


@pytest.mark.slow
def test_spambase_counterfactual_is_valid_under_the_forest_despite_close_thresholds():
    """Regression: without float32 centring the incumbent fails the forest's own predict (score 0.45)."""
    sim = _forest("Spambase", n_estimators=100, max_depth=4, n_factuals=2)
    ce = ens.ensemble_counterfactual(sim.forest, sim.X_factual[0], spec=sim.spec, tau=0.5, time_limit=10)
    assert ce.x is not None and ce.valid and ce.meets_threshold


def test_a_forest_fitted_on_a_dataframe_is_fed_its_feature_names_and_answers_as_on_arrays():
    """scikit-learn warns "X does not have valid feature names" when a model fitted on a DataFrame is given
    arrays: the method feeds the forest (and the isolation forest) what they were fitted with, and its
    answers are those of the same forest fitted on the bare array."""
    import warnings

    import pandas as pd

    rng = np.random.default_rng(3)
    X = pd.DataFrame(rng.uniform(size=(120, 3)), columns=["income", "debt", "age"])
    y = (X["income"] - X["debt"] + 0.2 * rng.normal(size=120) > 0).astype(int)
    named = RandomForestClassifier(n_estimators=9, max_depth=3, random_state=0).fit(X, y)
    bare = RandomForestClassifier(n_estimators=9, max_depth=3, random_state=0).fit(X.to_numpy(), y)
    iso_named = IsolationForest(n_estimators=4, contamination=0.1, random_state=0).fit(X[y == 1])
    iso_bare = IsolationForest(n_estimators=4, contamination=0.1, random_state=0).fit(X[y == 1].to_numpy())
    x0 = X.iloc[int(np.flatnonzero(named.predict(X) == 0)[0])]
    taus = [0.5, 0.7, 0.9]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = ens.ensemble_counterfactuals(named, x0, X=X, taus=taus, isolation_forest=iso_named)
    want = ens.ensemble_counterfactuals(bare, x0.to_numpy(), X=X.to_numpy(), taus=taus, isolation_forest=iso_bare)
    assert any(ce.x is not None for ce in got)
    for a, b in zip(got, want):
        assert (a.status, a.valid, a.score, a.meets_threshold, a.inlier) == (b.status, b.valid, b.score,
                                                                              b.meets_threshold, b.inlier)
        np.testing.assert_array_equal(a.x, b.x)
