"""Nearest counterfactuals through the tree encoders, re-checked with the models' own predict, and the
parts other counterfactual methods build on."""

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier
from sklearn.tree import DecisionTreeClassifier

from explainopt.counterfactuals import Counterfactual, nearest_counterfactual
from explainopt.counterfactuals.nearest import counterfactual_problem, distance
from explainopt.datasets import FeatureSpec

X, Y = make_classification(200, 4, n_informative=3, n_redundant=0, random_state=0)
LO, HI = X.min(0), X.max(0)


@pytest.mark.parametrize("model", [
    DecisionTreeClassifier(max_depth=4, random_state=0),
    RandomForestClassifier(n_estimators=5, max_depth=3, random_state=0),
    GradientBoostingClassifier(n_estimators=10, max_depth=2, random_state=0),
], ids=["tree", "forest", "gbm"])
@pytest.mark.parametrize("formulation", ["split", "leaf"])
def test_counterfactuals_are_valid_and_outputs_agree(model, formulation):
    model.fit(X, Y)
    for i in range(20):
        target = 1 - int(model.predict(X[i:i + 1])[0])
        res = nearest_counterfactual(model, X[i], lower=LO, upper=HI, target=target, formulation=formulation)
        assert res.status == "optimal" and res.valid
        assert abs(res.model_output - res.encoded_output) <= 1e-6 * (1 + abs(res.model_output))


def test_infeasible_request_returns_status_not_exception():
    model = DecisionTreeClassifier(max_depth=3, random_state=0).fit(X, Y)
    i = int(np.flatnonzero(model.predict(X) == 0)[0])
    spec = [FeatureSpec(f"f{j}", lower=LO[j], upper=HI[j], actionability="fixed") for j in range(4)]
    res = nearest_counterfactual(model, X[i], spec=spec, target=1)
    assert res.status == "infeasible" and res.x is None and not res.valid


def test_bad_factual_raises():
    model = DecisionTreeClassifier(max_depth=2).fit(X, Y)
    with pytest.raises(ValueError, match="NaN"):
        nearest_counterfactual(model, np.r_[np.nan, 0, 0, 0], lower=LO, upper=HI)
    with pytest.raises(ValueError, match="4 features"):
        nearest_counterfactual(model, np.zeros(3), lower=LO, upper=HI)
    with pytest.raises(ValueError, match="not fitted"):
        nearest_counterfactual(DecisionTreeClassifier(), np.zeros(4), lower=LO, upper=HI)


def test_weighted_distances_weight_each_feature_and_refuse_negative_weights():
    diff, w = np.array([1.0, -2.0, 0.5]), np.array([1.0, 0.25, 2.0])
    assert distance(diff, "l1", w).value == pytest.approx(1.0 + 0.5 + 1.0)
    assert distance(diff, "l2", w).value == pytest.approx(np.sqrt(1.0 + 0.25 + 1.0))
    assert distance(diff, "linf", w).value == pytest.approx(1.0)
    assert distance(diff, "l1").value == pytest.approx(3.5)
    with pytest.raises(ValueError, match="non-negative"):
        distance(diff, "l1", -w)
    with pytest.raises(ValueError, match="norm"):
        distance(diff, "l3")


def test_the_parts_compose_into_the_nearest_counterfactual():
    model = RandomForestClassifier(n_estimators=5, max_depth=3, random_state=0).fit(X, Y)
    target = 1 - int(model.predict(X[:1])[0])
    weights = np.array([1.0, 0.5, 0.25, 1.0])
    problem = counterfactual_problem(model, X[0], lower=LO, upper=HI, weights=weights)
    assert problem.encodings == [problem.encoding] and problem.space.x is problem.x
    solution = problem.solve(problem.distance, problem.encoding.predicts(target))
    fields = problem.checked(solution, target=target, started=0.0)
    res = nearest_counterfactual(model, X[0], lower=LO, upper=HI, weights=weights, target=target)
    assert isinstance(res, Counterfactual) and res.valid and fields["valid"]
    assert res.distance == pytest.approx(fields["distance"]) == pytest.approx(solution.result.objective)
    assert res.distance == pytest.approx(problem.distance_at(res.x))
    assert res.time >= res.solve_time >= 0 and res.repaired == 0 and res.fallback_from is None


def test_a_second_model_on_the_same_features_constrains_the_counterfactual():
    model = DecisionTreeClassifier(max_depth=3, random_state=0).fit(X, Y)
    i = int(np.flatnonzero(model.predict(X) == 0)[0])
    problem = counterfactual_problem(model, X[i], lower=LO, upper=HI)
    second = DecisionTreeClassifier(max_depth=2, random_state=1).fit(X, X[:, 0] > 0)
    assert second.predict(X[i:i + 1])[0] == 0
    other = problem.encode(second)
    solution = problem.solve(problem.distance, problem.encoding.predicts(1) + other.predicts(1))
    assert len(problem.encodings) == 2 and solution.x is not None
    assert model.predict(solution.x[None])[0] == 1 and second.predict(solution.x[None])[0] == 1
