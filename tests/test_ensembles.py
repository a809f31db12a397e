"""Robust counterfactuals for randomized ensembles (Forel et al.): thresholds, CEs, retraining validity."""

import math

import numpy as np
import pytest
from scipy import stats

from explainopt.counterfactuals import ensembles as ens

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
        for alpha in ens.ALPHAS:
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


@pytest.fixture(scope="module")
def compas_sim():
    from explainopt.datasets import load_dataset

    data = load_dataset("ensembles/COMPAS").scaled()
    return ens.make_simulation(data, sim=0, n_factuals=5, n_estimators=20, max_depth=3)


def test_simulation_follows_the_protocol(compas_sim):
    s = compas_sim
    assert s.X_factual.shape[0] == 5 and s.X_train.shape[0] == 5278 - 5
    assert s.forest.random_state == 0 and s.retrained.random_state == 40
    assert s.forest.max_depth == 3 and s.forest.max_features == "sqrt"
    w = ens.feature_weights(s.spec)
    assert set(w) <= {0.25, 1.0}


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


def test_simulation_rows_report_retrained_validity_with_intervals():
    rows = ens.simulate(dataset="COMPAS", sim=1, n_estimators=10, max_depth=3, n_factuals=2, alphas=[0.5, 0.1])
    import pandas as pd

    frame = pd.DataFrame(rows)
    assert len(frame) == 2 * 3 and set(frame.method) == {"naive", "direct-saa"}
    hard = frame[~frame["relaxed"]]
    assert len(hard) and hard["valid"].all() and hard["meets_threshold"].all()
    table = ens.validity_table(frame, ["method"])
    assert ((table.low <= table.rate) & (table.rate <= table.high)).all()
    check = ens.check_counts(frame)
    assert int(check["verified by T0"].iloc[0]) == int(check["hard"].iloc[0]) == len(hard)
    assert int(check["relaxed"].iloc[0]) == len(frame) - len(hard)


# --------------------------------------------------------------------------- float32-safe encoding


def _close_threshold_forest(rng):
    """A forest on a feature whose values differ by less than a float32 spacing (as in Spambase)."""
    from sklearn.ensemble import RandomForestClassifier

    base = np.float64(np.float32(0.00576092))
    X = rng.random((400, 3))
    X[:200, 0] = base + rng.integers(-3, 4, 200) * 5e-11  # many values inside one float32 cell
    y = (X[:, 0] > base) ^ (X[:, 1] > 0.5)
    return RandomForestClassifier(n_estimators=15, max_depth=4, random_state=0).fit(X, y.astype(int)), X


def test_float32_centred_forest_is_exactly_equivalent(rng):
    forest, X = _close_threshold_forest(rng)
    centred = ens.float32_centred(forest)
    probe = np.vstack([X, X + rng.normal(scale=1e-9, size=X.shape), rng.random((500, 3))])
    assert np.array_equal(forest.predict_proba(probe), centred.predict_proba(probe))
    # thresholds sit strictly inside a float32 cell, and the original model is untouched
    for est, orig in zip(centred.estimators_, forest.estimators_):
        split = est.tree_.children_left != -1
        t = est.tree_.threshold[split]
        assert np.all(t.astype(np.float32).astype(np.float64) != t)
        assert not np.array_equal(t, orig.tree_.threshold[split]) or not split.any()


def test_isolation_forest_centring_keeps_inlier_decisions(rng):
    from sklearn.ensemble import IsolationForest

    X = rng.random((300, 4))
    iso = IsolationForest(n_estimators=20, contamination=0.2, random_state=0).fit(X)
    probe = rng.random((500, 4))
    assert np.array_equal(iso.predict(probe), ens.float32_centred(iso).predict(probe))


@pytest.mark.slow
def test_spambase_counterfactual_is_valid_under_the_forest_despite_close_thresholds():
    """Regression: without float32 centring the incumbent fails the forest's own predict (score 0.45)."""
    from explainopt.datasets import load_dataset

    data = load_dataset("ensembles/Spambase").scaled()
    sim = ens.make_simulation(data, sim=0, n_factuals=2, n_estimators=100, max_depth=4)
    ce = ens.ensemble_counterfactual(sim.forest, sim.X_factual[0], spec=sim.spec, tau=0.5, time_limit=10)
    assert ce.x is not None and ce.valid and ce.meets_threshold


def test_counterfactuals_on_close_thresholds_are_verified_by_the_forest(rng):
    """Thresholds closer than a float32 spacing and than the solver's tolerances: every returned point
    reaches the score the MILP promised (float32 centring + repair onto the chosen leaves)."""
    from explainopt.datasets import FeatureSpec

    forest, X = _close_threshold_forest(rng)
    spec = [FeatureSpec(name=f"f{j}", kind="continuous", lower=0.0, upper=1.0, actionability="free", group=None)
            for j in range(3)]
    for x0 in X[:3]:
        for tau in (0.5, ens.robustness_threshold(15, 0.2)):
            ce = ens.ensemble_counterfactual(forest, x0, spec=spec, tau=tau)
            assert ce.x is not None
            if not ce.relaxed:
                assert ce.valid and ce.meets_threshold, (ce.score, tau, ce.repaired)
            assert ce.repaired >= 0


def test_simulation_configs_run_benchmarks_on_the_first_size_and_sims_per_size():
    configs = ens.simulation_configs(datasets=["COMPAS", "Spambase"], sims={100: range(3), 400: range(2)},
                                     n_estimators=[100, 400], alphas=[0.5], betas=[0.1], robust_on=["Spambase"],
                                     contaminations=[0.1], lof_weights=[1.0], benchmarks_on=["COMPAS"])
    count = {(c["dataset"], c["n_estimators"]): 0 for c in configs}
    for c in configs:
        count[c["dataset"], c["n_estimators"]] += 1
    assert count == {("COMPAS", 100): 3, ("Spambase", 100): 3, ("COMPAS", 400): 2, ("Spambase", 400): 2}
    first = [c for c in configs if c["n_estimators"] == 100]
    assert all(c["contaminations"] == ([0.1] if c["dataset"] == "COMPAS" else []) for c in first)
    assert all(c["betas"] == ([0.1] if c["dataset"] == "Spambase" else []) for c in first)
    assert all(not c["betas"] and not c["contaminations"] and not c["lof_weights"]
               for c in configs if c["n_estimators"] == 400)
    assert len(ens.simulation_configs(datasets=["COMPAS"], sims=range(4), n_estimators=[100, 400])) == 8
    counted = ens.simulation_configs(datasets=["COMPAS"], sims={100: 3, 400: 1}, first_sim=5, n_estimators=[100, 400])
    assert [(c["n_estimators"], c["sim"]) for c in counted] == [(100, 5), (100, 6), (100, 7), (400, 5)]
