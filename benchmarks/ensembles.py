"""Ensemble counterfactuals benchmark (Forel et al., chapter 5): naive vs. Direct-SAA time per dataset.

    python benchmarks/ensembles.py --quick                  # every dataset, 2 factuals, alphas 0.5 and 0.1
    python benchmarks/ensembles.py --datasets COMPAS German-Credit --factuals 5 --repeats 3
    python benchmarks/ensembles.py --quick --modes separate # the per-alpha path alone (e.g. on an old lib)

The chapter's set-up (``make_simulation``: simulation 0, a forest of 100 trees of depth 4, its factuals,
the flipped prediction as target, the weighted l1 distance, MIP gap 1e-4, the time limit per MILP). For
each factual, the naive threshold 1/2 and the Direct-SAA thresholds ``p*(100, alpha)`` are solved by each
mode:

``separate``  one :func:`ensemble_counterfactual` per threshold: a problem built and compiled per alpha
              (the chapter's path before :func:`ensemble_counterfactuals`; with an older ``lib`` first on
              PYTHONPATH it runs that version);
``chained``   one :func:`ensemble_counterfactuals` call per factual: the problem built and compiled once,
              the thresholds solved in increasing order with warm starts, and a lower threshold's point
              reused where it is provably optimal (``reused``);
``no-reuse``  ``chained`` without the reuse (compile once and warm starts only);
``no-bounds`` ``chained`` without the distance bounds from the split binaries (``cell_bounds=False``);
``no-start``  ``chained`` without the MIP start pushed from the lower threshold's point (``mip_start=False``);
``before``    ``chained`` without either (the problem and solves of ``ensemble_counterfactuals`` before
              them: compile once, cvxpy's warm start, reuse).

Columns per dataset and mode: mean naive and Direct-SAA ``solve_time`` (the solver's own seconds: the
chapter's App. C.2 table) and their ratio; the same ratio on process CPU seconds inside the solver calls
(``cpu ratio``: steadier on a shared machine) and on the whole time per counterfactual (``time ratio``:
with the encoding and compilation); Direct-SAA points reused; solves stopped by the time limit. With
``--repeats`` > 1 the modes alternate and every number is the median over repeats.

Guarantees are checked, not assumed: every point found is re-checked with the forest's own ``predict``
(a hard point that fails raises), and where two modes both solved a threshold to optimality their
objectives must agree within the MIP gap (else it raises).
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from explainopt import solvers
from explainopt.chapters.robust_ensembles import make_simulation
from explainopt.counterfactuals import ensembles as E
from explainopt.datasets import ENSEMBLE_DATASETS, load_dataset
from explainopt.experiments import atomic_write_bytes, machine

RESULTS = Path(__file__).parent / "results"
MODES = ("separate", "chained", "no-reuse", "no-bounds", "no-start", "before")
LEVERS = {"no-bounds": dict(cell_bounds=False), "no-start": dict(mip_start=False),
          "before": dict(cell_bounds=False, mip_start=False)}
HAS_CHAINED = hasattr(E, "ensemble_counterfactuals")

_solve = solvers.solve
_cpu = {"seconds": 0.0}


def _timed_solve(problem, **kwargs):
    """solvers.solve, adding the process CPU seconds of the call to ``_cpu``."""
    started = time.process_time()
    try:
        return _solve(problem, **kwargs)
    finally:
        _cpu["seconds"] += time.process_time() - started


solvers.solve = _timed_solve  # the counterfactual modules call solvers.solve through the module


def _tau_cpu(results, cpu_by_tau):
    return [cpu_by_tau.get(r.tau, 0.0) for r in results]


def solve_factual(mode: str, forest, x0, spec, taus, *, time_limit: float):
    """The counterfactuals of `x0` for `taus` by `mode`, and the solver CPU seconds of each."""
    target = 1 - int(forest.predict(x0.reshape(1, -1))[0])
    common = dict(spec=spec, target=target, weights=E.feature_weights(spec), time_limit=time_limit)
    if mode == "separate":
        results, cpu = [], []
        for tau in taus:
            _cpu["seconds"] = 0.0
            results.append(E.ensemble_counterfactual(forest, x0, tau=tau, **common))
            cpu.append(_cpu["seconds"])
        return results, cpu
    if not HAS_CHAINED:
        raise SystemExit(f"mode {mode} needs ensemble_counterfactuals (this lib has none); use --modes separate")
    # CPU per threshold: the chained solves run in increasing order of tau, one or two calls each
    cpu_by_tau, order = {}, sorted(set(taus))
    calls = []

    def recording(problem, **kwargs):
        started = time.process_time()
        try:
            return _solve(problem, **kwargs)
        finally:
            tau = next((p.value for p in problem.parameters() if p.name() == "tau"), None)
            calls.append((float(tau), time.process_time() - started))

    solvers.solve = recording
    try:
        results = E.ensemble_counterfactuals(forest, x0, taus=taus, reuse=mode != "no-reuse", **common,
                                             **LEVERS.get(mode, {}))  # older libs lack these keywords
    finally:
        solvers.solve = _timed_solve
    for tau, seconds in calls:
        cpu_by_tau[tau] = cpu_by_tau.get(tau, 0.0) + seconds
    assert set(cpu_by_tau) <= set(order)
    return results, _tau_cpu(results, cpu_by_tau)


def check(result, forest):
    """A hard point must be valid under the forest's own predict (re-checked here)."""
    if result.x is None or result.relaxed:
        return
    predicted = int(forest.predict(result.x.reshape(1, -1))[0])
    if predicted != result.target or not result.valid:
        raise AssertionError(f"point for tau={result.tau} predicted {predicted}, target {result.target}")


def run(args) -> pd.DataFrame:
    rows = []
    taus = [0.5] + [E.score_threshold("direct-saa", n_estimators=args.trees, alpha=a) for a in args.alphas]
    methods = ["naive"] + [f"direct-saa {a}" for a in args.alphas]
    for name in args.datasets:
        data = load_dataset(f"ensembles/{name}").scaled()
        sim = make_simulation(data, sim=0, n_factuals=args.factuals, n_estimators=args.trees, max_depth=args.depth)
        for repeat in range(args.repeats):
            modes = args.modes if repeat % 2 == 0 else args.modes[::-1]  # alternate to share the load
            for i, x0 in enumerate(sim.X_factual):
                for mode in modes:
                    started = time.perf_counter()
                    results, cpu = solve_factual(mode, sim.forest, x0, sim.spec, taus, time_limit=args.time_limit)
                    for method, tau, ce, seconds in zip(methods, taus, results, cpu):
                        check(ce, sim.forest)
                        rows.append(dict(dataset=name, repeat=repeat, factual=i, mode=mode, method=method, tau=tau,
                                         status=getattr(ce, "detail", None) or ce.status, relaxed=ce.relaxed, reused=getattr(ce, "reused", False),
                                         distance=ce.distance, solve_time=ce.solve_time, cpu=seconds, time=ce.time))
                    print(f"{name} repeat {repeat} factual {i} {mode}: {time.perf_counter() - started:.1f} s",
                          file=sys.stderr, flush=True)
    return pd.DataFrame(rows)


def check_optima(frame, *, gap: float = 2e-4):
    """Where two modes solved one (dataset, factual, tau) to optimality, their objectives agree."""
    hard = frame[(frame.status == "optimal") & ~frame.relaxed]
    for key, g in hard.groupby(["dataset", "factual", "tau"]):
        d = g["distance"].to_numpy(float)
        if d.max() - d.min() > gap * max(1.0, d.max()) + 1e-6:
            raise AssertionError(f"{key}: optima differ across modes/repeats: {sorted(set(np.round(d, 6)))}")
    return len(hard.groupby(["dataset", "factual", "tau"]))


def summary(frame) -> pd.DataFrame:
    """Per dataset and mode, the medians over repeats of the means over factuals (module docstring)."""
    out = []
    direct = frame.method.str.startswith("direct")
    frame = frame.assign(kind=np.where(direct, "direct", "naive"))
    for (name, mode), g in frame.groupby(["dataset", "mode"], sort=False):
        per_repeat = []
        for _, r in g.groupby("repeat"):
            ok = r[r.status.isin(["optimal", "time_limit"])]
            m = ok.groupby("kind")[["solve_time", "cpu", "time"]].mean()
            if not {"naive", "direct"} <= set(m.index):
                continue
            naive, saa = m.loc["naive"], m.loc["direct"]
            per_repeat.append(dict(naive=naive["solve_time"], direct=saa["solve_time"],
                                   ratio=saa["solve_time"] / naive["solve_time"], cpu_ratio=saa["cpu"] / naive["cpu"],
                                   time_ratio=saa["time"] / naive["time"],
                                   reused=int(r[r.kind == "direct"]["reused"].sum()),
                                   at_limit=int((r.status == "time_limit").sum())))
        if not per_repeat:
            continue
        p = pd.DataFrame(per_repeat).median()
        out.append({"dataset": name, "mode": mode, "naive s": p["naive"], "direct-saa s": p["direct"],
                    "ratio": p["ratio"], "cpu ratio": p["cpu_ratio"], "time ratio": p["time_ratio"],
                    "reused": f"{int(p['reused'])}/{int((g[g.repeat == 0].kind == 'direct').sum())}",
                    "at limit": int(p["at_limit"]), "repeats": len(per_repeat)})
    return pd.DataFrame(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="every dataset, 2 factuals, alphas 0.5 and 0.1, "
                        "time limit 20 s, one repeat")
    parser.add_argument("--datasets", nargs="+", default=list(ENSEMBLE_DATASETS))
    parser.add_argument("--factuals", type=int, default=5)
    parser.add_argument("--alphas", type=float, nargs="+", default=[0.5, 0.3, 0.1, 0.01])
    parser.add_argument("--trees", type=int, default=100)
    parser.add_argument("--depth", type=int, default=4)
    parser.add_argument("--modes", nargs="+", choices=MODES, default=["separate", "chained"])
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--time-limit", type=float, default=20.0)
    parser.add_argument("--csv", default=str(RESULTS / "ensembles.csv"), help="the rows, one per counterfactual")
    args = parser.parse_args()
    if args.quick:
        args.factuals, args.alphas, args.time_limit = min(args.factuals, 2), [0.5, 0.1], min(args.time_limit, 20.0)
    frame = run(args)
    compared = check_optima(frame)
    Path(args.csv).parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(Path(args.csv), frame.to_csv(index=False).encode())
    with pd.option_context("display.width", 200, "display.max_columns", 20, "display.precision", 3):
        print(summary(frame).to_string(index=False))
    print(f"\n{machine()}; {args.factuals} factuals per dataset, alphas {args.alphas}, {args.trees} trees of depth "
          f"{args.depth}, time limit {args.time_limit} s per MILP; ratio = mean Direct-SAA / mean naive seconds "
          f"(solve: the solver's own; cpu: process CPU in the solver calls; time: the whole counterfactual); "
          f"{compared} optimal (factual, threshold) cells, each the same optimum in every mode; rows in {args.csv}")


if __name__ == "__main__":
    main()
