"""scikit-learn Pipelines of affine preprocessing before a supported model, encoded in the user's space.

The encoding must equal the pipeline's own output on many points (data rows with categorical columns
at their categories), nearest counterfactuals must be valid by the pipeline's own ``predict`` and, for
linear models, optimal against a closed form (the l1 nearest point across a hyperplane in a box is a
fractional knapsack, category by category); anything but affine preprocessing is refused by name.
"""

import cvxpy as cp
import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import MaxAbsScaler, MinMaxScaler, OneHotEncoder, PolynomialFeatures, StandardScaler
from sklearn.svm import LinearSVC
from sklearn.tree import DecisionTreeClassifier

from explainopt.counterfactuals import nearest_counterfactual
from explainopt.encoders import column_map, encode, model_family, model_output, model_predict
from explainopt.encoders.check import round_trip

CATEGORIES = np.array([0.0, 1.0, 2.0, 5.0])


def raw_data(n=300, seed=0) -> pd.DataFrame:
    """Raw-scale columns (a, c, d) and a categorical column b with codes 0, 1, 2, 5; label from all four."""
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"a": rng.normal(50, 20, n), "b": rng.choice(CATEGORIES, n).astype(int),
                      "c": rng.normal(0, 0.01, n), "d": rng.uniform(-3, 8, n)})
    score = (X.a - 50) / 20 + 100 * X.c + np.where(X.b == 2, 1.5, 0) - np.where(X.b == 5, 1, 0) + 0.3 * X.d - 0.7
    return X, (score + rng.normal(0, 0.5, n) > 0).astype(int).to_numpy()


def mixed_preprocessing():
    return ColumnTransformer([("num", StandardScaler(), ["a", "c"]), ("cat", OneHotEncoder(drop="first"), ["b"])],
                             remainder=MinMaxScaler())


MODELS = {
    "logistic": lambda: LogisticRegression(max_iter=1000),
    "linear_svc": lambda: LinearSVC(),
    "tree": lambda: DecisionTreeClassifier(max_depth=4, random_state=0),
    "forest": lambda: RandomForestClassifier(n_estimators=8, max_depth=4, random_state=0),
    "gbm": lambda: GradientBoostingClassifier(n_estimators=8, max_depth=3, random_state=0),
    "mlp": lambda: MLPClassifier(hidden_layer_sizes=(8, 6), max_iter=2000, random_state=0),
}
PREPROCESSING = {
    "standard": lambda: [StandardScaler()],
    "minmax+maxabs": lambda: [MinMaxScaler(), MaxAbsScaler()],
    "column_transformer": lambda: [mixed_preprocessing()],
    "column_transformer+scaler": lambda: [ColumnTransformer([("cat", OneHotEncoder(), [1])], remainder="passthrough"),
                                          StandardScaler()],
}


def fitted(preprocessing, model, frame=True):
    X, y = raw_data()
    steps = PREPROCESSING[preprocessing]()
    if preprocessing == "column_transformer+scaler" or not frame:
        X = X.to_numpy(float)
    return make_pipeline(*steps, MODELS[model]()).fit(X, y), np.asarray(X, float)


def points(X, n, seed=1):
    """Data rows, midpoints of two rows with the category of the first, and uniform points of the box with
    a random category."""
    rng = np.random.default_rng(seed)
    k = n // 3
    rows = X[rng.choice(len(X), k)]
    mids = (X[rng.choice(len(X), k)] + X[rng.choice(len(X), k)]) / 2
    mids[:, 1] = X[rng.choice(len(X), k), 1]
    uniform = rng.uniform(X.min(axis=0), X.max(axis=0), (n - 2 * k, X.shape[1]))
    uniform[:, 1] = rng.choice(CATEGORIES, n - 2 * k)
    return np.vstack([rows, mids, uniform])


@pytest.mark.parametrize("model", sorted(MODELS))
@pytest.mark.parametrize("preprocessing", sorted(PREPROCESSING))
def test_encoding_equals_the_pipelines_own_output(preprocessing, model):
    pipeline, X = fitted(preprocessing, model)
    lower, upper = X.min(axis=0), X.max(axis=0)
    tree = model in ("tree", "forest", "gbm")
    frame = round_trip(pipeline, points(X, 60), lower=lower, upper=upper, half_width=1e-4 if tree else 0.0)
    assert (frame.status == "optimal").all(), frame.status.value_counts()
    assert frame.relative_error.max() < 1e-6
    assert frame.within_bounds.all()
    P = points(X, 30, seed=2)  # the output compared is the pipeline's own decision_function / predict_proba
    frame_P = pd.DataFrame(P, columns=pipeline.feature_names_in_) if hasattr(pipeline, "feature_names_in_") else P
    out = model_output(pipeline, P)
    if model in ("tree", "forest"):
        np.testing.assert_allclose(out, pipeline.predict_proba(frame_P)[:, 1], rtol=1e-12)
    elif model == "mlp":  # the encoded output is the logit
        np.testing.assert_allclose(1 / (1 + np.exp(-out)), pipeline.predict_proba(frame_P)[:, 1], rtol=1e-9)
    else:
        np.testing.assert_allclose(out, pipeline.decision_function(frame_P), rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(model_predict(pipeline, P), pipeline.predict(frame_P))
    assert model_family(pipeline) == "pipeline"


def test_the_column_map_is_the_fitted_preprocessing():
    pipeline, X = fitted("column_transformer", "logistic")
    columns = column_map(pipeline)
    P = points(X, 50)
    Z = pipeline[:-1].transform(pd.DataFrame(P, columns=pipeline.feature_names_in_))
    G = np.where(np.isnan(columns.category), P[:, columns.source], P[:, columns.source] == columns.category)
    np.testing.assert_allclose(columns.scale * G + columns.offset, Z, atol=1e-12)
    assert set(columns.categories) == {1}


def closed_form_l1(w, b, x0, lower, upper, target, margin):
    """min ||x - x0||_1 in the box s.t. sign * (w x + b) >= margin: move the features of largest |w_j|
    first, each as far as its bound (a fractional knapsack); inf where the box does not allow it."""
    sign = 1.0 if target == 1 else -1.0
    need = margin - sign * (w @ x0 + b)
    if need <= 0:
        return 0.0
    total = 0.0
    for j in np.argsort(-np.abs(w)):
        room = (upper[j] - x0[j]) if sign * w[j] > 0 else (x0[j] - lower[j])
        gain = abs(w[j]) * room
        if gain >= need:
            return total + need / abs(w[j])
        total, need = total + room, need - gain
    return np.inf


def test_nearest_counterfactual_of_a_scaled_logistic_regression_is_valid_and_optimal():
    pipeline, X = fitted("standard", "logistic", frame=False)
    scaler, model = pipeline[0], pipeline[-1]
    w = model.coef_[0] / scaler.scale_  # the decision function in the user's space
    b = model.intercept_[0] - w @ scaler.mean_
    lower, upper = X.min(axis=0), X.max(axis=0)
    for x0 in X[:8]:
        target = 1 - int(pipeline.predict(x0[None])[0])
        result = nearest_counterfactual(pipeline, x0, lower=lower, upper=upper, target=target)
        assert result.status == "optimal"
        assert result.valid and pipeline.predict(result.x[None])[0] == target
        assert result.distance == pytest.approx(np.abs(result.x - x0).sum(), abs=1e-9)  # in the user's space
        expected = closed_form_l1(w, b, x0, lower, upper, target, margin=1e-4)
        assert result.distance == pytest.approx(expected, rel=1e-6, abs=1e-7)


def test_nearest_counterfactual_with_a_one_hot_column_is_optimal_over_its_categories():
    X, y = raw_data()
    X = X.to_numpy(float)
    pipeline = make_pipeline(ColumnTransformer([("cat", OneHotEncoder(), [1])], remainder=StandardScaler()),
                             LogisticRegression(max_iter=1000)).fit(X, y)
    lower, upper = X.min(axis=0), X.max(axis=0)
    columns = column_map(pipeline)
    coef, intercept = pipeline[-1].coef_[0], pipeline[-1].intercept_[0]
    for x0 in X[:6]:
        target = 1 - int(pipeline.predict(x0[None])[0])
        result = nearest_counterfactual(pipeline, x0, lower=lower, upper=upper, target=target)
        assert result.valid and pipeline.predict(result.x[None])[0] == target
        assert result.x[1] in CATEGORIES
        best = np.inf
        for v in CATEGORIES:  # with the category fixed, the model is linear in the other features
            indicator = ~np.isnan(columns.category)
            fixed = columns.offset[indicator] + columns.scale[indicator] * (v == columns.category[indicator])
            free = np.flatnonzero(~indicator)
            w = np.zeros(X.shape[1])
            w[columns.source[free]] = coef[free] * columns.scale[free]
            b = intercept + coef[indicator] @ fixed + coef[free] @ columns.offset[free]
            x = x0.copy()
            x[1] = v
            best = min(best, abs(v - x0[1]) + closed_form_l1(w, b, x, lower, upper, target, margin=1e-4))
        assert result.distance == pytest.approx(best, rel=1e-6, abs=1e-7)


def test_nearest_counterfactual_of_a_scaled_network_is_valid_in_the_users_space():
    pipeline, X = fitted("standard", "mlp", frame=False)
    lower, upper = X.min(axis=0), X.max(axis=0)
    for x0 in X[:4]:
        target = 1 - int(pipeline.predict(x0[None])[0])
        result = nearest_counterfactual(pipeline, x0, lower=lower, upper=upper, target=target)
        assert result.status == "optimal"
        assert result.valid and pipeline.predict(result.x[None])[0] == target
        assert result.distance == pytest.approx(np.abs(result.x - x0).sum(), abs=1e-9)
        assert result.model_output == pytest.approx(result.encoded_output, abs=1e-6)
        # optimality implies: no point of the segment from x0 nearer than the counterfactual is of the target
        towards = x0 + np.linspace(0, 0.9, 100)[:, None] * (result.x - x0)
        assert (model_predict(pipeline, towards) != target).all()


def test_a_pipeline_counterfactual_with_a_forest_reaches_the_class_by_the_pipelines_predict():
    pipeline, X = fitted("column_transformer", "forest")
    lower, upper = X.min(axis=0), X.max(axis=0)
    for x0 in X[:4]:
        target = 1 - int(model_predict(pipeline, x0)[0])
        result = nearest_counterfactual(pipeline, x0, lower=lower, upper=upper, target=target)
        frame = pd.DataFrame(result.x[None], columns=pipeline.feature_names_in_)
        assert result.valid and pipeline.predict(frame)[0] == target
        assert result.x[1] in CATEGORIES


@pytest.mark.parametrize("step, name", [(PolynomialFeatures(), "polynomialfeatures"),
                                        (SimpleImputer(), "simpleimputer"),
                                        (MinMaxScaler(clip=True), "minmaxscaler")])
def test_an_unsupported_step_is_refused_by_name(step, name):
    X, y = raw_data()
    pipeline = make_pipeline(step, LogisticRegression(max_iter=1000)).fit(X.to_numpy(float), y)
    with pytest.raises(TypeError, match=f"unsupported step '{name}'"):
        encode(pipeline, cp.Variable(4), lower=X.min(), upper=X.max())


def test_unsupported_steps_inside_a_column_transformer_and_string_categories_are_refused():
    X, y = raw_data()
    inner = ColumnTransformer([("poly", PolynomialFeatures(), ["a"])], remainder="passthrough")
    pipeline = make_pipeline(inner, LogisticRegression(max_iter=1000)).fit(X, y)
    with pytest.raises(TypeError, match="unsupported step 'columntransformer/poly'"):
        encode(pipeline, cp.Variable(4))
    X["b"] = X["b"].map({0: "x", 1: "y", 2: "z", 5: "w"})
    strings = make_pipeline(ColumnTransformer([("cat", OneHotEncoder(), ["b"])], remainder="passthrough"),
                            LogisticRegression(max_iter=1000)).fit(X, y)
    with pytest.raises(TypeError, match="encode them as numbers"):
        encode(strings, cp.Variable(4))
    unfitted = Pipeline([("scale", StandardScaler()), ("model", LogisticRegression())])
    with pytest.raises(ValueError, match="not fitted"):
        encode(unfitted, cp.Variable(4))
