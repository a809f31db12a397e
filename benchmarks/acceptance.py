"""Held-out acceptance of the counterfactual contract (issue 25), on data and models the project does not use.

The breast-cancer data as a pandas DataFrame (raw scales, string labels "benign"/"malignant"), a
RandomForestClassifier, a LogisticRegression and an MLPClassifier fitted on it, and every counterfactual
method on a few rows. Each call must give a counterfactual of the other class (checked here with the model's
own ``predict``) or a ValueError/TypeError that names the problem; anything else (a silent wrong answer, a
raw error from deep inside a library) is reported as FAIL and makes the script exit with status 1.

    python benchmarks/acceptance.py [--rows 0 20 40] [--time-limit 60]
"""

from __future__ import annotations

import argparse
import time

import explainopt  # noqa: F401  (pins the numerical code paths first)
import numpy as np
import pandas as pd
from sklearn.datasets import load_breast_cancer
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.neural_network import MLPClassifier

from explainopt.counterfactuals import nearest_counterfactual
from explainopt.counterfactuals import baselines, gradient_baselines
from explainopt.counterfactuals.ensembles import ensemble_counterfactual
from explainopt.counterfactuals.proplace import proplace
from explainopt.counterfactuals.proto import proto_r
from explainopt.counterfactuals.rbr import rbr
from explainopt.counterfactuals.regions import robust_region
from explainopt.counterfactuals.roar import roar
from explainopt.validation import STATUSES


def models(X, y) -> dict:
    return {"forest": RandomForestClassifier(n_estimators=5, max_depth=3, random_state=0).fit(X, y),
            "logistic": LogisticRegression(max_iter=10_000).fit(X, y),
            "network": MLPClassifier((4,), max_iter=500, random_state=0).fit(X, y)}


def methods(model, X, time_limit) -> dict:
    return {
        "nearest": lambda x0: nearest_counterfactual(model, x0, X=X, time_limit=time_limit),
        "robust_region": lambda x0: robust_region(model, x0, rho=0.01, X=X, time_limit=time_limit),
        "ensemble": lambda x0: ensemble_counterfactual(model, x0, X=X, alpha=0.2, time_limit=time_limit),
        "proplace": lambda x0: proplace(model, x0, X.iloc[:5], delta=0.01, time_limit=time_limit),
        "milp_r": lambda x0: baselines.milp_r(model, x0, delta=0.01, time_limit=time_limit),
        "robx": lambda x0: baselines.robx(model, x0, X, K=100),
        "wachter": lambda x0: gradient_baselines.wachter(model, x0),
        "roar_style": lambda x0: gradient_baselines.roar_style(model, x0, delta=0.01),
        "proto_r": lambda x0: proto_r(model, x0, X, delta=0.01),
        "rbr": lambda x0: rbr(model, x0, X),
        "roar": lambda x0: roar(model, x0, X, delta_max=0.01, n_samples=500),
    }


def outcome(model, x0, call) -> tuple[str, str]:
    """('ok' | 'refused' | 'FAIL', what happened)."""
    try:
        ce = call(x0)
    except (ValueError, TypeError) as error:
        return "refused", f"{type(error).__name__}: {error}"
    except Exception as error:  # a raw error from inside a library: a defect
        return "FAIL", f"raw {type(error).__name__}: {error}"
    if ce.status not in STATUSES:
        return "FAIL", f"status {ce.status!r} outside the vocabulary"
    if ce.x is None:
        return ("ok" if ce.status in ("infeasible", "not_found", "error", "limit") else "FAIL"), f"no x ({ce.status})"
    before = model.predict(x0.to_frame().T)[0]
    after = model.predict(pd.DataFrame([ce.x], columns=x0.index))[0]
    flipped = after != before and ce.valid
    if ce.status in ("optimal", "feasible") and not flipped:
        return "FAIL", f"status {ce.status} but the model says {after!r} (factual {before!r})"
    return "ok", f"{ce.status} ({ce.detail}): {before} -> {after}, distance {ce.distance:.4g}, {ce.solver}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[0, 20])
    parser.add_argument("--time-limit", type=float, default=60.0)
    args = parser.parse_args(argv)
    data = load_breast_cancer(as_frame=True)
    X = data.frame[data.feature_names]
    y = np.where(data.target == 1, "benign", "malignant")
    failures = 0
    for model_name, model in models(X, y).items():
        for method_name, call in methods(model, X, args.time_limit).items():
            for i in args.rows:
                start = time.perf_counter()
                verdict, what = outcome(model, X.iloc[i], call)
                failures += verdict == "FAIL"
                print(f"{verdict:8s} {model_name:9s} {method_name:14s} row {i:3d} {time.perf_counter() - start:6.1f} s  "
                      f"{what[:150]}", flush=True)
    print(f"{failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
