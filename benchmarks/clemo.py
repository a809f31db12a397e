"""CLEMO fit benchmark: seconds per fit against the number of knapsack items, per fitting method.

    python benchmarks/clemo.py --quick                 # sizes 5-40, one repeat, SLSQP/L-BFGS capped at 5 s
    python benchmarks/clemo.py                         # three repeats, the primal QP at every size, caps 60 s
    python benchmarks/clemo.py --sizes 40 --methods convex-dual convex-primal --repeats 5

The data of Table 3 of Otto et al.: a generated uncorrelated instance per size (Pisinger's generator,
random_state 0), 1000 samples (seed 42), one BLAS thread (as the chapter runs). Methods: ``lr``, ``dtr``,
``convex`` (fit_clemo's automatic choice), ``convex-dual`` (the dual box QP through the problem's structure),
``convex-primal`` (the QP in the coefficients, modelled and compiled by cvxpy, solved by Clarabel), ``slsqp``
and ``lbfgs`` (capped). For the convex paths the columns split the time into modelling (cvxpy: building the
expression; dual: the samples × samples matrices), cvxpy's compilation and the solver; ``loss / best`` is
each fit's eq.-(10) loss over the lowest convex loss of its size. Writes benchmarks/results/clemo.csv.

Run it against another version of the library (e.g. the branch point, for a before/after table) by putting
that version's ``lib`` first on PYTHONPATH; fields the older code does not report are left empty.
"""

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from explainopt import clemo
from explainopt.experiments import atomic_write_bytes, machine
from explainopt.problems import pisinger_instance

RESULTS = Path(__file__).parent / "results"
METHODS = ("lr", "dtr", "convex", "convex-dual", "convex-primal", "slsqp", "lbfgs")


def fit(data, method: str, lr, time_limit: float):
    """One fit by `method` (LR is the warm start and the source of the λ of every CLEMO fit)."""
    if method == "lr":
        return clemo.fit_lr(data)
    if method == "dtr":
        return clemo.fit_dtr(data)
    if method.startswith("convex"):
        formulation = method.partition("-")[2] or "auto"
        return clemo.fit_clemo(data, method="convex", warm_start=lr, formulation=formulation)
    return clemo.fit_clemo(data, method=method, warm_start=lr, time_limit=time_limit)


def run(sizes, methods, *, repeats: int, n_samples: int, time_limit: float, primal_max: int) -> pd.DataFrame:
    rows = []
    with threadpool_limits(limits=1, user_api="blas"):
        for n in sizes:
            data = clemo.build_dataset(pisinger_instance(n, "uncorrelated", random_state=0), n_samples=n_samples,
                                       random_state=42)
            lr = clemo.fit_lr(data)
            lambdas = clemo.balance_lambdas(lr.terms)
            for method in methods:
                if method == "convex-primal" and n > primal_max:
                    continue
                times, result = [], None
                for _ in range(repeats if method not in ("slsqp", "lbfgs") else 1):
                    start = time.perf_counter()
                    result = fit(data, method, lr, time_limit)
                    times.append(time.perf_counter() - start)
                info = getattr(result, "info", {}) or {}
                rows.append({"items": n, "coefficients": lr.coef.size, "method": method,
                             "solver": result.solver or method, "seconds (min)": min(times),
                             "seconds (median)": float(np.median(times)), "model_s": info.get("model_s"),
                             "compile_s": info.get("compile_s"), "solve_s": info.get("solve_s"),
                             "status": result.status, "iterations": result.n_iter,
                             "loss": clemo.total_loss(result.terms, lambdas), "certified gap": info.get("gap")})
    frame = pd.DataFrame(rows)
    best = frame[frame["method"].str.startswith("convex")].groupby("items")["loss"].min()
    frame["loss / best"] = frame["loss"] / frame["items"].map(best)
    return frame


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="one repeat, SLSQP/L-BFGS capped at 5 s, primal up to 20 items")
    parser.add_argument("--sizes", type=int, nargs="+", default=[5, 10, 20, 40],
                        help="knapsack items (default 5 10 20 40)")
    parser.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    parser.add_argument("--repeats", type=int,
                        help="fits per method and size (default 3; --quick 1); the table shows min and median")
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--time-limit", type=float,
                        help="cap in seconds per SLSQP / L-BFGS fit (default 60; --quick 5)")
    parser.add_argument("--primal-max", type=int,
                        help="largest size for the cvxpy primal QP (default: all; --quick 20)")
    args = parser.parse_args()
    frame = run(args.sizes, args.methods, repeats=args.repeats or (1 if args.quick else 3), n_samples=args.samples,
                time_limit=args.time_limit or (5.0 if args.quick else 60.0),
                primal_max=args.primal_max or (20 if args.quick else max(args.sizes)))
    RESULTS.mkdir(exist_ok=True)
    atomic_write_bytes(RESULTS / "clemo.csv", frame.to_csv(index=False).encode())
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(f"CLEMO fits on {machine()}, {args.samples} samples, one BLAS thread\n")
        print(frame.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
        pivot = frame.pivot_table(index="items", columns="method", values="seconds (min)")
        print("\nseconds per fit (min over repeats):\n" + pivot.to_string(float_format=lambda v: f"{v:.3g}"))


if __name__ == "__main__":
    main()
