"""Robust regions benchmark (Maragno et al., Algorithm 1): where the time goes, per model and radius.

    python benchmarks/regions.py --quick                       # a few minutes
    python benchmarks/regions.py --configs DT5:0.05 RF5:0.05 RF10:0.05 NN50:0.01 --instances 10
    python benchmarks/regions.py --datasets banknote diabetes --norms linf l2 --rhos 0.01 0.05 --models DT5 RF5
    python benchmarks/regions.py --datasets diabetes --norms linf --configs RF50:0.01 GBM50:0.01 --cell-copies off on
    PYTHONPATH=lib:/path/to/pyomo python benchmarks/regions.py --quick --authors /tmp/robust-CE

For every (dataset, model, norm, rho) and solver (HiGHS, Gurobi) it runs ``robust_region`` on the
first `--instances` rows (the chapter's fitted models and factuals) and prints the mean loop time, the
master solves (iterations), the final scenario count, cvxpy's compile time apart from the solvers'
time (master / adversarial; the master problem kept alive in HiGHS or Gurobi has no compilation), the
converged count and how many fell back from Gurobi for its licence (Gurobi's size-limited pip licence
refuses models over 2000 rows or columns: those problems are solved by HiGHS and counted here).
Every region is certified again (``certify_region``) and a region that fails raises.

``--authors PATH`` points at a checkout of the authors' robust-CE code (not part of this project;
it needs pyomo importable and Gurobi): their ``rce.generate`` runs on the same fitted models and
factuals, and the table adds their mean time, master solves and distance, and the ratios
``authors / ours``. Their reported time excludes their distance-to-border solves, as the paper's
does; ours excludes nothing. Both run from a temporary directory whose ``gurobi.env`` sets
``Threads 1`` (the paper's single-thread comparison); HiGHS's MIP search is single-threaded anyway.
The domain is ``--domain unbounded`` (the authors' setting, default), ``box`` ([0, 1]) or ``wide``
([-1, 2]). For a before/after table run it once more with ``PYTHONPATH`` at an older library (the
options it lacks are left out), or pass ``--before PATH`` (the ``lib`` folder of an older checkout, e.g.
from ``git archive``): the same cells then run once more in a fresh interpreter on that library, and
the table adds its mean times (``before_highs_time``, ...) and ``before/after`` per solver.
"""

import argparse
import contextlib
import io
import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from explainopt import solvers
from explainopt.chapters.robust_regions import fitted_model, paper_data
from explainopt.counterfactuals.regions import certify_region, robust_region

#: --domain: the authors' unbounded variables, the data's box, the box the issue widened to.
DOMAINS = {"unbounded": (None, None), "box": (0.0, 1.0), "wide": (-1.0, 2.0)}
AUTHORS_TYPES = {"LR": "linear", "DT": "cart", "RF": "rf", "GBM": "gbm", "NN": "mlp"}


def configurations(args) -> list[dict]:
    """(dataset, model, norm, rho) cells: the --configs pairs, else the product of the lists."""
    if args.configs:
        pairs = [(c.split(":")[0], float(c.split(":")[1])) for c in args.configs]
    else:
        pairs = [(m, r) for m in args.models for r in args.rhos]
    return [dict(dataset=d, model=m, norm=n, rho=r) for d in args.datasets for n in args.norms for m, r in pairs]


#: The solver argument per benchmarked name: "highs" is the open-source default (HiGHS for every MILP, SCIP
#: for the MISOCP adversarial problems of the l2 ball, which HiGHS cannot solve).
SOLVER_ARGUMENT = {"highs": None}


def run_ours(cell: dict, name: str, args, instances, cell_copies=None) -> list[dict]:
    """Our robust regions of `cell` on the rows `instances`, each certified again."""
    X, _ = paper_data(cell["dataset"])
    solver = SOLVER_ARGUMENT.get(name, name)
    model = fitted_model(cell["dataset"], cell["model"])
    bounds = DOMAINS[args.domain]
    options = {} if args.cuts is None else {"cuts": args.cuts}  # None: the library's default
    if cell_copies is not None:
        options["cell_copies"] = cell_copies == "on"
    rows = []
    for i in instances:
        region = robust_region(model, X[i], rho=cell["rho"], norm=cell["norm"], lower=bounds[0], upper=bounds[1],
                               solver=solver, time_limit=args.time_limit, **options)
        if region.x is not None:
            cert = certify_region(model, region.x, rho=region.radius, norm=region.norm, target=region.target,
                                  n_samples=2000, solver=solver)
            if not cert.certified:
                raise AssertionError(f"{cell} row {i} {name}: region not certified: {cert}")
        mp_compile = sum(getattr(h, "master_compile_time", math.nan) for h in region.history)
        compile_time = getattr(region, "compile_time", math.nan)
        rows.append(dict(time=region.time, iterations=region.iterations,
                         scenarios=getattr(region, "scenarios", region.iterations),
                         master_compile=mp_compile, master_solve=region.master_time - mp_compile,
                         ap_compile=compile_time - mp_compile,
                         ap_solve=region.adversarial_time - (compile_time - mp_compile),
                         converged=region.converged, fallback=region.fallback_from is not None,
                         distance=region.distance))
    return rows


def summary(rows: list[dict]) -> dict:
    """Mean times and counts over the rows of one cell, with every distance."""
    frame = pd.DataFrame(rows)
    out = {k: float(frame[k].mean()) for k in ("time", "iterations", "scenarios", "master_compile", "master_solve",
                                                "ap_compile", "ap_solve")}
    out.update(converged=int(frame["converged"].sum()), fallback=int(frame["fallback"].sum()),
               distances=frame["distance"].round(5).tolist())
    return out


def authors_type(name: str) -> str:
    return next(t for prefix, t in AUTHORS_TYPES.items() if name.startswith(prefix))


def run_authors(cell: dict, args, workdir: Path) -> dict:
    """The authors' rce.generate on our fitted model and factuals (their code, run as it is)."""
    sys.path.insert(0, str(Path(args.authors).resolve()))
    import rce  # noqa: PLC0415 (the authors' package, only with --authors)

    X, y = paper_data(cell["dataset"])
    columns = [f"f{j}" for j in range(X.shape[1])]
    frame_x, frame_y = pd.DataFrame(X, columns=columns), pd.Series(y, name="Outcome")
    model = fitted_model(cell["dataset"], cell["model"])
    clf_type = authors_type(cell["model"])
    rows = []
    for i in range(args.instances):
        u = frame_x.iloc[[i]]
        with contextlib.redirect_stdout(io.StringIO()):
            _, iterations, comp_time, solution, _ = rce.generate(
                model, frame_x, frame_y, str(workdir / f"{cell['dataset']}-{cell['model']}"), clf_type, "binary", u,
                columns, [], [], {}, [], [], [], cell["rho"], unc_type=cell["norm"], iterative=clf_type != "linear",
                time_limit=args.time_limit)
        x = None if solution is None else np.asarray(solution, dtype=float).ravel()
        rows.append(dict(time=comp_time, iterations=iterations + 1,
                         distance=math.nan if x is None else float(np.abs(x - X[i]).sum())))
    frame = pd.DataFrame(rows)
    return dict(time=float(frame["time"].mean()), iterations=float(frame["iterations"].mean()),
                distances=frame["distance"].round(5).tolist())


def timed(row: dict) -> list[str]:
    """The solver variants of our own timed in `row` (``highs``, ``highs[copies on]``, ...)."""
    return [k[:-len("_time")] for k in row if k.endswith("_time") and not k.startswith(("authors", "before"))]


def add_before(rows: list, lib: str) -> None:
    """Run this script's cells on the library under `lib` (a fresh interpreter, without --authors) and
    add its mean times and the before/after ratios to `rows`."""
    argv, given = [], iter(sys.argv[1:])
    for a in given:
        if a in ("--before", "--authors", "--json"):
            next(given, None)  # and its value
        else:
            argv.append(a)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "before.json"
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(lib).resolve()), os.environ.get("PYTHONPATH", "")]))
        subprocess.run([sys.executable, str(Path(__file__).resolve()), *argv, "--json", str(out)], env=env, check=True,
                       stdout=subprocess.DEVNULL)
        before = json.loads(out.read_text())
    for row, old in zip(rows, before):
        for key in set(timed(old)) & set(timed(row)):
            row[f"before_{key}_time"] = old[f"{key}_time"]
            row[f"before/after {key}"] = old[f"{key}_time"] / max(row[f"{key}_time"], 1e-9)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="banknote, DT5/RF5/NN10, rho 0.05, l-inf, 3 rows")
    parser.add_argument("--datasets", nargs="+", default=["banknote", "diabetes"])
    parser.add_argument("--models", nargs="+", default=["DT3", "DT5", "DT10", "RF5", "RF10", "GBM5", "GBM10",
                                                          "NN10", "NN50"])
    parser.add_argument("--rhos", type=float, nargs="+", default=[0.01, 0.05])
    parser.add_argument("--norms", nargs="+", default=["linf", "l2"])
    parser.add_argument("--configs", nargs="+", help="model:rho pairs instead of --models x --rhos")
    parser.add_argument("--instances", type=int, default=10)
    parser.add_argument("--solvers", nargs="+", default=["highs", "gurobi"])
    parser.add_argument("--domain", choices=sorted(DOMAINS), default="unbounded")
    parser.add_argument("--cuts", type=int, help="scenarios added per iteration (1: the paper's; default: "
                        "the library's, also for a library version without the option)")
    parser.add_argument("--cell-copies", nargs="+", choices=["on", "off"], help="with l-inf trees, also add each "
                        "iteration's worst scenario as a copy of the model beside its cell row (default: the "
                        "library's); both: the two run side by side, row by row")
    parser.add_argument("--time-limit", type=float, default=300.0)
    parser.add_argument("--authors", help="a checkout of the authors' robust-CE code (with pyomo importable)")
    parser.add_argument("--json", help="write the rows here as JSON")
    parser.add_argument("--before", help="the lib folder of an older library to run the same cells on too")
    args = parser.parse_args()
    if args.quick:
        args.datasets, args.norms, args.instances = ["banknote"], ["linf"], min(args.instances, 3)
        args.configs = args.configs or ["DT5:0.05", "RF5:0.05", "NN10:0.05"]
    solver_names = [s for s in args.solvers if solvers.solver_available(s)]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        (workdir / "gurobi.env").write_text("Threads 1\nOutputFlag 0\n")
        here = os.getcwd()
        os.chdir(workdir)
        try:
            for cell in configurations(args):
                row = dict(cell)
                variants = [(name, mode) for name in solver_names for mode in args.cell_copies or [None]]
                found = {v: [] for v in variants}
                for i in range(args.instances):  # the variants interleaved row by row: alike machine load
                    for name, mode in variants:
                        found[name, mode] += run_ours(cell, name, args, [i], mode)
                for (name, mode), rows_of in found.items():
                    key = name if mode is None else f"{name}[copies {mode}]"
                    row.update({f"{key}_{k}": v for k, v in summary(rows_of).items()})
                    print(f"{cell} {key}: {row[f'{key}_time']:.1f} s per region, {row[f'{key}_iterations']:.1f} "
                          f"iterations, distances {row[f'{key}_distances']}", file=sys.stderr, flush=True)
                if args.authors:
                    theirs = run_authors(cell, args, workdir)
                    row.update({f"authors_{k}": v for k, v in theirs.items()})
                    for key in timed(row):
                        row[f"authors/{key}"] = theirs["time"] / max(row[f"{key}_time"], 1e-9)
                rows.append(row)
        finally:
            os.chdir(here)
    if args.before:
        add_before(rows, args.before)
    frame = pd.DataFrame(rows)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    shown = [c for c in frame.columns if not c.endswith("distances")]
    with pd.option_context("display.width", 250, "display.max_columns", 60, "display.precision", 3):
        print(frame[shown].to_string(index=False))
    print(f"\ndomain {args.domain}, cuts {args.cuts}, {args.instances} rows per cell, time limit {args.time_limit} s; "
          "times are mean seconds per region (compile: cvxpy; solve: the solver's own)")


if __name__ == "__main__":
    main()
