"""The contract every counterfactual method shares (issue 25): inputs checked once at the boundary with an
error that names the argument, ``target=None`` for the other class with labels of any type, one status
vocabulary, and a lean core. One test per probe of the issue; each either gets a correct answer (checked with
the model's own ``predict``) or a clear error."""

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.neural_network import MLPClassifier

from explainopt import validation as V
from explainopt.counterfactuals import nearest_counterfactual
from explainopt.counterfactuals import baselines as B
from explainopt.counterfactuals import gradient_baselines as GB
from explainopt.counterfactuals.ensembles import ensemble_counterfactual, ensemble_counterfactuals, score_threshold
from explainopt.counterfactuals.proplace import proplace
from explainopt.counterfactuals.rbr import rbr
from explainopt.counterfactuals.regions import robust_region
from explainopt.counterfactuals.roar import roar
from explainopt.datasets import FeatureSpec
from explainopt.featurespace import box_spec, data_spec

COLUMNS = ["age", "income", "debt"]


@pytest.fixture(scope="module")
def raw():
    """Raw-scale data (ages, incomes, debts) with string labels, as a DataFrame."""
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"age": rng.uniform(20, 70, 200), "income": rng.uniform(1e3, 9e3, 200),
                      "debt": rng.uniform(0, 5e3, 200)})
    y = np.where(X["income"] - X["debt"] > 2500, "approved", "denied")
    return X, y


@pytest.fixture(scope="module")
def forest(raw):
    X, y = raw
    return RandomForestClassifier(n_estimators=5, max_depth=3, random_state=0).fit(X, y)


@pytest.fixture(scope="module")
def logistic(raw):
    X, y = raw
    return LogisticRegression(max_iter=5000).fit(X, y)


@pytest.fixture(scope="module")
def unit_net():
    """A ReLU network on [0, 1]^2 with 0/1 labels (the setting of PROPLACE and its baselines)."""
    X = np.array([[0.1, 0.2], [0.2, 0.1], [0.8, 0.9], [0.9, 0.8]] * 10)
    net = MLPClassifier((4,), max_iter=2000, random_state=0).fit(X, [0, 0, 1, 1] * 10)
    return net, X


def _other_class(model, x0, ce):
    """`ce` is a counterfactual of the class other than the model's prediction at x0, by the model's own predict."""
    x0 = np.asarray(x0, float)
    frame = lambda x: pd.DataFrame([x], columns=model.feature_names_in_) if hasattr(model, "feature_names_in_") \
        else np.asarray([x])
    before, after = model.predict(frame(x0))[0], model.predict(frame(ce.x))[0]
    return ce.x is not None and ce.valid and after != before and after == ce.target


# --------------------------------------------------------------------------- target=None, labels of any type

def test_nearest_default_target_flips_the_prediction_whatever_the_labels(forest, raw):
    X, _ = raw
    for i in range(3):
        ce = nearest_counterfactual(forest, X.iloc[i], X=X)
        assert ce.status == "optimal" and isinstance(ce.target, str) and ce.distance > 0
        assert _other_class(forest, X.iloc[i], ce)


def test_a_target_label_not_among_the_classes_is_refused(logistic, raw):
    X, _ = raw
    for bad in (2, -1, "yes", 1):
        with pytest.raises(ValueError, match="target"):
            robust_region(logistic, X.iloc[0], rho=0.05, target=bad, X=X)
    assert V.target_index(logistic, "denied", X.iloc[0].to_numpy()) == 1


# --------------------------------------------------------------------------- x0, bounds, alignment

def test_a_series_in_another_column_order_gives_the_same_answer(forest, raw):
    X, _ = raw
    row = X.iloc[1]
    shuffled = row[["debt", "age", "income"]]
    a = nearest_counterfactual(forest, row.to_numpy(), lower=X.min(), upper=X.max())
    b = nearest_counterfactual(forest, shuffled, lower=X.min()[["income", "debt", "age"]], upper=X.max())
    c = nearest_counterfactual(forest, row.to_frame().T, X=X)
    np.testing.assert_array_equal(a.x, b.x)
    np.testing.assert_array_equal(a.x, c.x)
    with pytest.raises(ValueError, match="x0 does not have the model's features"):
        nearest_counterfactual(forest, row.rename({"age": "years"}), X=X)


def test_raw_scale_factual_outside_the_default_box_is_an_error(logistic, raw):
    X, _ = raw
    with pytest.raises(ValueError, match="x0 lies outside the box"):
        robust_region(logistic, X.iloc[0], rho=0.05)  # the default box is [0, 1]
    region = robust_region(logistic, X.iloc[0], rho=0.05, X=X)
    assert region.status == "optimal" and region.valid and region.target != logistic.predict(X.iloc[[0]])[0]


def test_bounds_and_weights_of_the_wrong_length_or_nan_name_the_argument(forest, raw):
    X, _ = raw
    x0 = X.iloc[0]
    with pytest.raises(ValueError, match="lower"):
        nearest_counterfactual(forest, x0, lower=np.zeros(2), upper=X.max())
    with pytest.raises(ValueError, match="upper"):
        nearest_counterfactual(forest, x0, lower=X.min(), upper=[np.nan, 1.0, 1.0])
    with pytest.raises(ValueError, match="weights"):
        nearest_counterfactual(forest, x0, X=X, weights=[1.0, 1.0])
    with pytest.raises(ValueError, match="lower or the data X|lower= and upper="):
        nearest_counterfactual(forest, x0)


@pytest.mark.parametrize("method", ["rbr", "roar", "proplace", "milp_r", "wachter"])
def test_nan_in_x0_is_named(unit_net, method):
    net, X = unit_net
    x0 = np.array([np.nan, 0.2])
    call = {"rbr": lambda: rbr(net, x0, X), "roar": lambda: roar(net, x0, X, delta_max=0.01),
            "proplace": lambda: proplace(net, x0, X[:3], delta=0.01), "milp_r": lambda: B.milp_r(net, x0, delta=0.01),
            "wachter": lambda: GB.wachter(net, x0)}[method]
    with pytest.raises(ValueError, match="x0 contains NaN"):
        call()


def test_a_fixed_discrete_feature_off_its_grid_is_named(forest):
    X = np.array([[1.0, 0.2], [3.0, 0.8], [2.0, 0.4], [4.0, 0.9]] * 5)
    model = RandomForestClassifier(n_estimators=3, max_depth=2, random_state=0).fit(X, [0, 1, 0, 1] * 5)
    spec = [FeatureSpec("children", kind="discrete", lower=0, upper=5, actionability="fixed"), FeatureSpec("score")]
    with pytest.raises(ValueError, match=r"children.*not an integer.*fixed"):
        nearest_counterfactual(model, [3.5, 0.3], spec)


def test_unfitted_and_unsupported_models_are_named(raw):
    X, _ = raw
    with pytest.raises(ValueError, match="not fitted"):
        robust_region(MLPClassifier(), X.iloc[0], rho=0.1, X=X)
    with pytest.raises(TypeError, match="cannot encode"):
        nearest_counterfactual(object(), X.iloc[0], X=X)


def test_solver_and_its_options_are_checked_before_any_work(forest, raw):
    X, _ = raw
    for kwargs, name in (({"solver": "cplex"}, "solver"), ({"mip_gap": -1}, "mip_gap"), ({"time_limit": -5}, "time_limit"),
                         ({"time_limit": 0}, "time_limit")):
        with pytest.raises(ValueError, match=name):
            nearest_counterfactual(forest, X.iloc[0], X=X, **kwargs)
    with pytest.raises(ValueError, match="solver"):
        robust_region(forest, X.iloc[0], rho=0.1, X=X, solver="cplex")


def test_seeds_are_checked_with_their_name():
    with pytest.raises(ValueError, match="^seed must be"):
        V.check_seed("x", "seed")
    with pytest.raises(ValueError, match="random_state"):
        V.check_seed(-1)
    V.check_seed(np.random.default_rng(0))


def test_a_chapter_refuses_an_unknown_solver_when_it_starts():
    from explainopt.book import start_chapter

    with pytest.raises(ValueError, match="solver='cplex'"):
        start_chapter("06", scale="smoke", solver="cplex")
    with pytest.raises(ValueError, match="seed"):
        start_chapter("06", scale="smoke", seed="x")


# --------------------------------------------------------------------------- networks

def test_torch_activation_other_than_relu_is_refused():
    torch = pytest.importorskip("torch")
    net = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.Sigmoid(), torch.nn.ReLU(), torch.nn.Linear(3, 1))
    with pytest.raises(ValueError, match="unsupported Sigmoid at position 1"):
        nearest_counterfactual(net, [0.5, 0.5], lower=0.0, upper=1.0)
    final = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.ReLU(), torch.nn.Linear(3, 1), torch.nn.Sigmoid())
    assert nearest_counterfactual(final, [0.5, 0.5], lower=0.0, upper=1.0).status in V.STATUSES


def test_class_one_methods_refuse_a_factual_already_of_class_one(unit_net):
    net, X = unit_net
    x1 = X[2]  # predicted class 1
    assert net.predict(x1[None])[0] == 1
    for call in (lambda: proplace(net, x1, X[:3], delta=0.01), lambda: B.milp_r(net, x1, delta=0.01),
                 lambda: rbr(net, x1, X), lambda: roar(net, x1, X, delta_max=0.01)):
        with pytest.raises(ValueError, match="class 1"):
            call()


# --------------------------------------------------------------------------- ensembles

def test_ensemble_takes_a_box_or_data_and_reads_n_from_the_forest(forest, raw):
    X, _ = raw
    ce = ensemble_counterfactual(forest, X.iloc[0], X=X, alpha=0.2)
    assert ce.tau == score_threshold("direct-saa", n_estimators=forest.n_estimators, alpha=0.2)
    assert ce.status == "optimal" and ce.meets_threshold and _other_class(forest, X.iloc[0], ce)
    boxed = ensemble_counterfactual(forest, X.iloc[0], lower=X.min(), upper=X.max(), tau=ce.tau)
    assert boxed.distance <= ce.distance + 1e-6  # the box relaxes data_spec's discrete (integer) columns, if any
    with pytest.raises(ValueError, match="tau= or alpha="):
        ensemble_counterfactual(forest, X.iloc[0], X=X, alpha=0.2, tau=0.6)


def test_gradient_boosting_tau_is_refused_not_applied_to_the_logit(raw):
    X, y = raw
    gbm = GradientBoostingClassifier(n_estimators=5, max_depth=2, random_state=0).fit(X, y)
    with pytest.raises(TypeError, match="soft vote"):
        ensemble_counterfactuals(gbm, X.iloc[0], X=X, taus=[0.8])


def test_box_and_data_specs():
    assert box_spec(2) == [FeatureSpec("x0"), FeatureSpec("x1")]
    spec = data_spec(pd.DataFrame({"a": [0.0, 1.0], "b": [2.0, 7.0], "c": [0.5, 0.25]}))
    assert [(f.name, f.kind, f.lower, f.upper) for f in spec] == [
        ("a", "binary", 0.0, 1.0), ("b", "discrete", 2.0, 7.0), ("c", "continuous", 0.25, 0.5)]


# --------------------------------------------------------------------------- statuses

def test_robust_region_never_says_found_with_status_infeasible(forest, raw):
    X, _ = raw
    region = robust_region(forest, X.iloc[0], rho=1e5, X=X, time_limit=60)
    assert region.status == "infeasible" and region.x is None and not region.found and not region.valid


def test_one_status_vocabulary(unit_net, forest, raw):
    net, Xu = unit_net
    X, _ = raw
    results = [nearest_counterfactual(forest, X.iloc[0], X=X), robust_region(forest, X.iloc[0], rho=1.0, X=X),
               ensemble_counterfactual(forest, X.iloc[0], X=X), proplace(net, Xu[0], Xu[:3], delta=0.01),
               B.milp_r(net, Xu[0], delta=0.01), GB.wachter(net, Xu[0]), rbr(net, Xu[0], Xu)]
    for res in results:
        assert res.status in V.STATUSES and res.status == V.status_of(res.detail)
        if res.status in ("optimal", "feasible"):
            assert res.x is not None and res.valid
        if res.status in ("infeasible", "not_found", "error"):
            assert res.x is None
        if res.x is not None:
            assert res.distance > 0 and res.time > 0 and isinstance(res.solver, str)
    assert results[3].distance == pytest.approx(np.abs(results[3].x - Xu[0]).sum())  # l1, not divided by d
    with pytest.raises(ValueError, match="unknown method status"):
        V.status_of("converged-ish")


# --------------------------------------------------------------------------- lean core

def test_the_core_does_not_import_torch():
    code = ("import sys, explainopt.counterfactuals, explainopt.counterfactuals.regions, "
            "explainopt.counterfactuals.ensembles, explainopt.counterfactuals.proplace, explainopt.encoders; "
            "print(sorted(m for m in ('torch', 'pooch', 'matplotlib', 'jupyter_book', 'papermill') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


# --------------------------------------------------------------------------- held-out acceptance

@pytest.fixture(scope="module")
def cancer():
    from sklearn.datasets import load_breast_cancer

    data = load_breast_cancer(as_frame=True)
    X = data.frame[data.feature_names]
    y = np.where(data.target == 1, "benign", "malignant")
    return X, y


@pytest.mark.parametrize("model_name", ["forest", "logistic", "network"])
def test_held_out_models_get_a_valid_counterfactual_or_a_clear_error(cancer, model_name):
    """Breast-cancer DataFrame (raw scales, string labels): every method on two rows gives a counterfactual
    of the other class (the model's own predict) or a ValueError/TypeError naming the problem."""
    X, y = cancer
    model = {"forest": lambda: RandomForestClassifier(n_estimators=5, max_depth=3, random_state=0),
             "logistic": lambda: LogisticRegression(solver="liblinear"),
             "network": lambda: MLPClassifier((4,), max_iter=500, random_state=0)}[model_name]().fit(X, y)
    methods = {
        "nearest": lambda x0: nearest_counterfactual(model, x0, X=X, time_limit=60),
        "region": lambda x0: robust_region(model, x0, rho=0.01, X=X, time_limit=60),
        "ensemble": lambda x0: ensemble_counterfactual(model, x0, X=X, alpha=0.2, time_limit=60),
        "proplace": lambda x0: proplace(model, x0, X.iloc[:5], delta=0.01),
        "wachter": lambda x0: GB.wachter(model, x0),
        "rbr": lambda x0: rbr(model, x0, X),
    }
    for name, method in methods.items():
        for i in (0, 20):
            try:
                ce = method(X.iloc[i])
            except (ValueError, TypeError) as error:
                assert any(word in str(error) for word in ("x0 lies outside", "model:", "forest:",
                                                           "counterfactuals of class 1")), (name, error)
                continue
            assert ce.status in V.STATUSES
            if ce.status in ("optimal", "feasible"):
                assert _other_class(model, X.iloc[i], ce), (name, i)
            else:
                assert ce.status == "limit" and not (ce.x is not None and not ce.valid and ce.status == "optimal")
