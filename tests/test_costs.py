"""The costs module: l1, normalised l1, group-aware sparsity and the LOF scorer, against values by hand."""

import numpy as np
import pytest
from sklearn.neighbors import LocalOutlierFactor

from explainopt.chapters import robustness_benchmark
from explainopt.counterfactuals import costs, ensembles
from explainopt.counterfactuals.costs import LofScorer, l1, l1_distance, sparsity


def test_l1_and_normalised_l1():
    assert l1([1.0, 0.0, 2.0], [0.0, 0.5, 2.0]) == 1.5
    assert l1_distance([1.0, 0.0, 2.0], [0.0, 0.5, 2.0]) == 0.5
    assert l1_distance([1, 0], [0, 0]) == 0.5
    assert l1(np.array([[0.25, 0.75]]), [0.0, 0.0]) == 1.0  # a row counts as a point


def test_sparsity_counts_the_features_moved_by_more_than_the_tolerance():
    assert sparsity([0.1, 0.2, 0.3], [0.1, 0.25, 0.3], tol=1e-4) == 1
    assert sparsity([0.1, 0.2, 0.3], [0.1, 0.2 + 1e-6, 0.3], tol=1e-4) == 0
    assert sparsity([0.1, 0.2, 0.3], [0.1, 0.2 + 1e-6, 0.3], tol=1e-7) == 1
    with pytest.raises(TypeError):
        sparsity([0.1], [0.2])  # the tolerance is always explicit
    with pytest.raises(ValueError, match="NaN"):
        sparsity([np.nan], [0.2], tol=1e-4)


def test_sparsity_counts_a_one_hot_group_once():
    x0 = [0.0, 1.0, 0.0, 0.5, 1.0, 0.0, 0.2]
    x = [1.0, 0.0, 0.0, 0.5, 0.0, 1.0, 0.3]
    groups = ["g", "g", "g", None, "h", "h", None]
    assert sparsity(x, x0, tol=1e-6) == 5  # g twice, h twice, the last feature
    assert sparsity(x, x0, tol=1e-6, groups=groups) == 3  # g, h, the last feature
    assert sparsity(x0, x0, tol=1e-6, groups=groups) == 0
    with pytest.raises(ValueError, match="groups"):
        sparsity(x, x0, tol=1e-6, groups=groups[:-1])


def test_each_caller_keeps_its_tolerance():
    assert ensembles.CHANGE_TOLERANCE == 1e-6  # chapter 5's n_changed, as before the costs module
    assert robustness_benchmark.SPARSITY_TOLERANCE == 1e-4  # chapter 6's sparsity column


def test_lof_scorer_is_the_10_lof_of_the_target_points():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 2))
    points = np.array([[0.0, 0.0], [6.0, 6.0]])
    scores = LofScorer(X)(points)
    expected = -LocalOutlierFactor(n_neighbors=10, novelty=True).fit(X).score_samples(points)
    np.testing.assert_array_equal(scores, expected)
    assert scores[0] < 1.5 < scores[1]
    assert LofScorer(X)(points[0]).shape == (1,)  # one point as a row


def test_the_costs_live_in_one_module():
    from explainopt.counterfactuals import proplace, robustness
    assert proplace.LofScorer is costs.LofScorer and proplace.l1_distance is costs.l1_distance
    assert robustness_benchmark.sparsity is costs.sparsity and robustness_benchmark.l1_distance is costs.l1_distance
    assert not hasattr(robustness, "sparsity")
