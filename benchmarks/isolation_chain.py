"""Isolation-forest benchmark of chapter 5 (Forel et al., App. B.2): one MILP per contamination level vs. one chain.

    python benchmarks/isolation_chain.py --quick                     # COMPAS, 2 factuals, 3 levels
    python benchmarks/isolation_chain.py                             # COMPAS and German-Credit, 5 factuals, 6 levels
    python benchmarks/isolation_chain.py --datasets Phishing --factuals 3 --time-limit 120

The chapter's set-up (``make_simulation``: simulation 0, a forest of 100 trees of depth 4, its factuals, the
flipped prediction as target, the naive threshold 1/2, the weighted l1 distance, MIP gap 1e-4) and its
isolation forests (``fit_isolation_forest`` on the target class's training rows, 50 trees,
``random_state=0``: the simulation's), one per contamination level. Both paths run on the same factuals:

``before``   one :func:`ensemble_counterfactual` per level with that level's isolation forest: the problem
             encoded, compiled and solved once per level (the chapter's path before the chain);
``chained``  one :func:`isolation_forest_counterfactuals` per factual: the forest and one isolation forest
             encoded and compiled once, the inlier threshold a Parameter, the levels solved from the
             loosest up, a looser level's optimum reused where it is an inlier at the next (``reused``).

The table gives per dataset and path: the total solver seconds (``solve_time``, the chapter's timing
field) and the total seconds per counterfactual (``time``: with the encoding, compilation and checks),
the solves run, the points reused, the solves stopped by the time limit, and the largest difference of
objective (weighted l1 distance) between the paths over the cells both solved to optimality.

Guarantees are checked, not assumed: every hard point is re-checked with the forest's own ``predict`` and
its level's isolation forest's ``predict`` (a point that fails raises), and where both paths solved a
level to optimality their objectives must agree within the MIP gap (else it raises).
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from explainopt.chapters.robust_ensembles import CONTAMINATIONS, make_simulation
from explainopt.counterfactuals import ensembles as E
from explainopt.datasets import load_dataset
from explainopt.experiments import atomic_write_bytes, machine

RESULTS = Path(__file__).parent / "results"
PATHS = ("before", "chained")


def solve_factual(path: str, forest, x0, spec, target, levels, *, time_limit: float) -> list:
    """The counterfactuals of `x0` for each isolation forest of `levels` by `path` (module docstring)."""
    common = dict(spec=spec, tau=0.5, target=target, weights=E.feature_weights(spec), time_limit=time_limit)
    if path == "before":
        return [E.ensemble_counterfactual(forest, x0, isolation_forest=iso, **common) for iso in levels]
    return E.isolation_forest_counterfactuals(forest, x0, isolation_forests=levels, **common)


def check(result, forest, isolation_forest) -> None:
    """A hard point must be valid under the forest and an inlier of its level's isolation forest (re-checked)."""
    if result.x is None or result.relaxed:
        return
    x = result.x.reshape(1, -1)
    predicted, inlier = int(forest.predict(x)[0]), int(isolation_forest.predict(x)[0]) == 1
    if predicted != result.target or not result.valid or not inlier or not result.inlier:
        raise AssertionError(f"point for contamination {isolation_forest.contamination}: predicted {predicted} "
                             f"(target {result.target}), inlier {inlier}")


def run(args) -> pd.DataFrame:
    rows = []
    for name in args.datasets:
        data = load_dataset(f"ensembles/{name}").scaled()
        sim = make_simulation(data, sim=0, n_factuals=args.factuals, n_estimators=args.trees, max_depth=args.depth)
        for i, x0 in enumerate(sim.X_factual):
            target = 1 - int(sim.forest.predict(x0.reshape(1, -1))[0])
            X_target = sim.X_train[sim.y_train == target]
            levels = [E.fit_isolation_forest(X_target, contamination=c, random_state=0) for c in args.contaminations]
            for path in (PATHS if i % 2 == 0 else PATHS[::-1]):  # alternate to share the load
                started = time.perf_counter()
                results = solve_factual(path, sim.forest, x0, sim.spec, target, levels, time_limit=args.time_limit)
                for c, iso, ce in zip(args.contaminations, levels, results):
                    check(ce, sim.forest, iso)
                    rows.append(dict(dataset=name, factual=i, path=path, contamination=c, status=ce.detail,
                                     relaxed=ce.relaxed, reused=ce.reused, distance=ce.distance,
                                     solve_time=ce.solve_time, time=ce.time))
                print(f"{name} factual {i} {path}: {time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True)
    return pd.DataFrame(rows)


def objective_differences(frame, *, gap: float = 2e-4) -> pd.Series:
    """Per dataset, the largest |objective difference| between the paths over the cells both solved to
    optimality (hard problems); raises where it exceeds the MIP gap."""
    hard = frame[(frame.status == "optimal") & ~frame.relaxed]
    both = hard.pivot_table(index=["dataset", "factual", "contamination"], columns="path", values="distance").dropna()
    diff = (both["before"] - both["chained"]).abs()
    limit = gap * np.maximum(1.0, both.max(axis=1)) + 1e-6
    if (diff > limit).any():
        raise AssertionError(f"optima differ between the paths:\n{both[diff > limit]}")
    return diff.groupby(level="dataset").agg(["max", "size"])


def summary(frame) -> pd.DataFrame:
    """Per dataset, each path's totals side by side, and the chained/before ratios (module docstring)."""
    differences = objective_differences(frame)
    out = []
    for name, g in frame.groupby("dataset", sort=False):
        by = {path: g[g.path == path] for path in PATHS}
        out.append({"dataset": name, "cells": len(by["before"]),
                    "solve s before": by["before"].solve_time.sum(), "solve s chained": by["chained"].solve_time.sum(),
                    "time s before": by["before"].time.sum(), "time s chained": by["chained"].time.sum(),
                    "solves before": int((~by["before"].reused).sum()), "solves chained": int((~by["chained"].reused).sum()),
                    "reused": int(by["chained"].reused.sum()),
                    "at limit": f"{int((by['before'].status == 'time_limit').sum())}/"
                                f"{int((by['chained'].status == 'time_limit').sum())}",
                    "max |obj diff|": differences.loc[name, "max"] if name in differences.index else float("nan"),
                    "both optimal": int(differences.loc[name, "size"]) if name in differences.index else 0})
    table = pd.DataFrame(out)
    table["solve ratio"] = table["solve s chained"] / table["solve s before"]
    table["time ratio"] = table["time s chained"] / table["time s before"]
    return table


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="COMPAS, 2 factuals, contaminations 0.05 0.3 0.5, "
                        "time limit 20 s")
    parser.add_argument("--datasets", nargs="+", default=["COMPAS", "German-Credit"])
    parser.add_argument("--factuals", type=int, default=5)
    parser.add_argument("--contaminations", type=float, nargs="+", default=list(CONTAMINATIONS))
    parser.add_argument("--trees", type=int, default=100)
    parser.add_argument("--depth", type=int, default=4)
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--csv", default=str(RESULTS / "isolation_chain.csv"), help="the rows, one per counterfactual")
    args = parser.parse_args()
    if args.quick:
        args.datasets, args.factuals = ["COMPAS"], min(args.factuals, 2)
        args.contaminations, args.time_limit = [0.05, 0.3, 0.5], min(args.time_limit, 20.0)
    frame = run(args)
    table = summary(frame)
    Path(args.csv).parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(Path(args.csv), frame.to_csv(index=False).encode())
    with pd.option_context("display.width", 250, "display.max_columns", 20, "display.precision", 3):
        print(table.to_string(index=False))
    print(f"\n{machine()}; {args.factuals} factuals per dataset, contaminations {args.contaminations}, {args.trees} "
          f"trees of depth {args.depth}, isolation forests of 50 trees, time limit {args.time_limit} s per MILP; "
          f"solve s: the solver's own seconds, time s: the whole counterfactual; rows in {args.csv}")


if __name__ == "__main__":
    main()
