"""Encode-and-solve time of nearest counterfactuals against model size (the encoders benchmark).

One instance = one model size, one formulation and one solver; it trains the model on a scaled
registry dataset, then times :func:`~explainopt.counterfactuals.nearest_counterfactual` for a few
factuals under a time limit. ``benchmarks/encoders.py`` runs the full grid of the encoders issue; the
appendix notebook runs a small one.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier
from sklearn.neural_network import MLPClassifier

from . import solvers
from .counterfactuals import nearest_counterfactual
from .datasets import load_dataset
from .encoders import model_predict
from .encoders.networks import counterfactual_ball


DATASET = "robust-ce/ionosphere"  # 34 continuous features, the size the encoders issue measured on
MARGIN = 1e-4  # the logit margin of the counterfactuals (nearest_counterfactual's default)


def tree_grid(n_trees=(10, 50, 100, 500), depths=(3, 5, 8), formulations=("split", "leaf")) -> list[dict]:
    return [{"family": family, "size": n, "depth": d, "option": f}
            for family in ("RF", "GBM") for n in n_trees for d in depths for f in formulations]


def network_grid(widths=(10, 50, 100), layers=(1, 2, 3), tightening=(None, "lp")) -> list[dict]:
    """Networks by width and depth, per big-M tightening: None (interval bounds, "ibp"), "lp" (LP bounds
    over the box) or "ball" (LP bounds over the box and the l1 ball around the factual whose radius is
    the distance to the nearest training point of the target class, :func:`counterfactual_ball`)."""
    return [{"family": "MLP", "size": w, "depth": k, "option": t or "ibp"}
            for w in widths for k in layers for t in tightening]


#: The model of each family in the grids, by (size, depth, random_state).
FAMILIES = {
    "RF": lambda size, depth, seed: RandomForestClassifier(n_estimators=size, max_depth=depth, random_state=seed),
    "GBM": lambda size, depth, seed: GradientBoostingClassifier(n_estimators=size, max_depth=depth, random_state=seed),
    "MLP": lambda size, depth, seed: MLPClassifier((size,) * depth, max_iter=500, random_state=seed),
}


def _model(config: dict, random_state: int):
    if config["family"] not in FAMILIES:
        raise ValueError(f"unknown model family {config['family']!r}: expected one of {list(FAMILIES)}")
    return FAMILIES[config["family"]](config["size"], config["depth"], random_state)


def time_instance(config: dict, *, dataset: str = DATASET, n_factuals: int = 3,
                  solver: str | None = None, time_limit: float = 60.0, random_state: int = 0) -> dict:
    """Mean and max encode-and-solve seconds of `n_factuals` nearest counterfactuals for one config.

    ``refused``: factuals whose model the requested commercial solver refused for its licence's size
    (solved by the open-source solver instead, and timed as such)."""
    ds = load_dataset(dataset).scaled()
    X, y = ds.X.to_numpy(float), ds.y.to_numpy(int)
    model = _model(config, random_state).fit(X, y)
    option = config["option"]
    options = ({"formulation": option} if config["family"] != "MLP"
               else {"tighten": {"ibp": None, "ball": "lp"}.get(option, option)})
    rows = np.random.default_rng(random_state).choice(len(X), n_factuals, replace=False)
    times, statuses, valid, refused = [], [], [], 0
    for i in rows:
        target = 1 - int(model_predict(model, X[i])[0])
        start = time.perf_counter()
        if option == "ball":  # LP bounds over the box and the ball of the nearest training counterfactual
            options["ball"] = counterfactual_ball(model, X[i], X, target=target, margin=MARGIN)
        res = nearest_counterfactual(model, X[i], lower=0, upper=1, target=target, solver=solver,
                                     time_limit=time_limit, margin=MARGIN, **options)
        times.append(time.perf_counter() - start)
        statuses.append(res.detail)
        valid.append(res.valid)
        refused += res.fallback_from is not None
    return {**config, "requested": solver or "auto", "solver": res.solver, "refused": refused, "mean_s": float(np.mean(times)), "max_s": float(np.max(times)),
            "optimal": sum(s == solvers.OPTIMAL for s in statuses), "statuses": ",".join(sorted(set(statuses))),
            "valid": int(sum(valid)),
            "factuals": n_factuals}


def run_benchmark(configs: list[dict], *, solver_names=(None,), **options) -> pd.DataFrame:
    """One row per (config, solver); solvers that are missing or unlicensed here are skipped (None and
    "auto" mean the default). The data are loaded first, so a missing file stops the benchmark at once."""
    load_dataset(options.get("dataset", DATASET))  # fail fast, not once per row
    rows = []
    for name in solver_names:
        if name not in (None, "auto") and not solvers.solver_available(name):
            continue
        rows += [time_instance(config, solver=name, **options) for config in configs]
    return pd.DataFrame(rows)
