"""A dataset's feature spec as constraints: types, bounds, one-hot groups, actionability."""

import cvxpy as cp
import numpy as np
import pytest

from explainopt import solvers
from explainopt.datasets import FeatureSpec
from explainopt.featurespace import box_space, feature_space

SPEC = [
    FeatureSpec("age", kind="discrete", lower=18, upper=90, actionability="increase"),
    FeatureSpec("income", lower=0.0, upper=10.0),
    FeatureSpec("owner", kind="binary", lower=0, upper=1),
    FeatureSpec("red", kind="categorical", group="colour"),
    FeatureSpec("green", kind="categorical", group="colour"),
    FeatureSpec("blue", kind="categorical", group="colour"),
    FeatureSpec("sex", kind="binary", actionability="fixed"),
]
X0 = np.array([30, 2.5, 0, 1, 0, 0, 1])


def _solve(objective):
    space = feature_space(SPEC, X0)
    problem = cp.Problem(cp.Maximize(objective(space.x)), space.constraints)
    assert solvers.solve(problem).status == "optimal"
    return space.x.value


def test_types_groups_and_actionability_shape_the_solutions():
    x = _solve(lambda x: -x[0] + x[1] + x[4] - x[6] + 0.3 * x[2])
    assert x[0] == pytest.approx(30)  # increase-only: cannot go below the factual
    assert x[1] == pytest.approx(10)
    assert x[2] == pytest.approx(1) and x[6] == pytest.approx(1)  # binary up; fixed stays
    assert np.allclose(x[3:6], [0, 1, 0])  # exactly one category


def test_discrete_features_take_integer_values():
    x = _solve(lambda x: -cp.abs(x[0] - 40.4))
    assert x[0] == pytest.approx(40)


def test_fixed_features_need_the_factual_and_empty_specs_are_refused():
    with pytest.raises(ValueError, match="pass the factual x0"):
        feature_space(SPEC)
    with pytest.raises(ValueError, match="spec is empty"):
        feature_space([])


def test_bounds_after_actionability_are_what_encoders_see():
    space = feature_space(SPEC, X0)
    assert space.lower[0] == 30 and space.upper[0] == 90  # increase-only
    assert space.lower[6] == space.upper[6] == 1  # fixed


def test_a_box_space_has_free_continuous_features_within_its_bounds():
    space = box_space([0.0, -1.0], 2.0, 2)
    assert list(space.kinds) == ["continuous", "continuous"] and list(space.upper) == [2.0, 2.0]
    problem = cp.Problem(cp.Maximize(cp.sum(space.x)), space.constraints)
    assert solvers.solve(problem).status == "optimal" and np.allclose(space.x.value, [2.0, 2.0])
    with pytest.raises(ValueError, match="lower= and upper="):
        box_space(None, 1.0, 2)
