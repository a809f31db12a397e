"""Nearest counterfactuals through the tree encoders, re-checked with the models' own predict."""

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier
from sklearn.tree import DecisionTreeClassifier

from explainopt.counterfactuals import nearest_counterfactual
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
