"""Does a stored cell reproduce under other numerical code paths? Each cell type of the results store, computed
again under forced code paths, with its largest deviation from the stored result.

    python benchmarks/code_paths.py --quick                  # 1 cell per cell function, small cells only
    python benchmarks/code_paths.py --per-function 3 --max-seconds 30 --chapters 02 04

The code paths (environment variables set before each library loads, in a fresh interpreter each):

- ``pinned``: the project's own (:mod:`explainopt.numerics`: OpenBLAS's SSE3 kernels, MKL's compatible
  path, torch's scalar kernels), NumPy's SIMD as the CPU allows;
- ``pinned-numpy-baseline``: the same, NumPy's SIMD dispatch held to its x86-64-v2 baseline;
- ``blas-pinned-torch-native``: OpenBLAS pinned, torch and MKL on their own choice for this CPU;
- ``native``: every library's own choice for this CPU (``EXPLAINOPT_CODE_PATHS=native``), as an unpinned
  run on this machine would compute.

A cell type is *bitwise* where every path gives the stored numbers exactly, *within tolerance* where they
differ by at most the store's tolerance (``experiments.TOLERANCE``), else *machine-dependent*, or *versions
differ* where a package that shapes the results (``experiments.versions``) is not the one the cells were stored
with: run the check with the stored versions before blaming the processor. Cells that a
limit decided (time, iterations) are not drawn. The draw is seeded (``--seed``).
"""

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
PATHS = {
    "pinned": {},
    "pinned-numpy-baseline": {"NPY_DISABLE_CPU_FEATURES": "X86_V3 X86_V4"},
    "blas-pinned-torch-native": {"EXPLAINOPT_CODE_PATHS": "native", "OPENBLAS_CORETYPE": "Prescott"},
    "native": {"EXPLAINOPT_CODE_PATHS": "native"},
}
WORKER = """
import json, sys, time
from explainopt import experiments  # first: it pins the code paths before NumPy loads its BLAS
from explainopt.numerics import code_paths
import numpy as np

def deviation(a, b):
    if isinstance(a, dict):
        if not isinstance(b, dict) or set(a) != set(b):
            return float("inf")
        return max([deviation(a[k], b[k]) for k in a if not experiments._volatile(k)] or [0.0])
    if isinstance(a, (list, tuple)) and not (a and all(isinstance(v, (int, float)) for v in a)):
        if not isinstance(b, (list, tuple)) or len(a) != len(b):
            return float("inf")
        return max([deviation(x, y) for x, y in zip(a, b)] or [0.0])
    if isinstance(a, (np.ndarray, list, tuple, float, int)) and not isinstance(a, bool):
        x, y = np.asarray(a, float), np.asarray(b, float)
        if x.shape != y.shape:
            return float("inf")
        d = np.abs(x - y)[~(np.isnan(x) & np.isnan(y))]
        return float(d.max()) if d.size else 0.0
    return 0.0 if a == b else float("inf")

for line in sys.stdin:
    job = json.loads(line)
    store = experiments.ResultStore(job["folder"])
    func = experiments.resolve_function(job["function"])
    cell = next(c for c in store.cells(func) if c["key"] == job["key"])
    start = time.perf_counter()
    try:
        again = experiments.stored_form(func(**cell["provenance"]["config"]))
    except Exception as error:  # e.g. a solver this machine lacks: that cell is not checked, the others are
        print(json.dumps({**job, "error": f"{type(error).__name__}: {error}", "code_paths": code_paths()}), flush=True)
        continue
    stored, here = cell["provenance"].get("versions", {}), experiments.versions()
    moved = {k: f"{v} -> {here[k]}" for k, v in stored.items() if k in here and here[k] != v}
    print(json.dumps({**job, "deviation": deviation(cell["result"], again), "seconds": time.perf_counter() - start,
                      "code_paths": code_paths(), "versions": moved}), flush=True)
"""


def draw(chapters, per_function: int, max_seconds: float, seed: int) -> list[dict]:
    """Up to `per_function` current cells of each cell function, no longer than `max_seconds` when stored."""
    from explainopt.experiments import ResultStore, limited

    rng, jobs = np.random.default_rng(seed), []
    for folder in sorted((ROOT / "results" / "paper").iterdir()):
        if not folder.is_dir() or (chapters and folder.name not in chapters):
            continue
        store = ResultStore(folder)
        for func in store.functions():
            cells = [c for c in store.cells(func)
                     if c["provenance"]["wall_time_s"] <= max_seconds and not limited(c["result"])]
            for i in rng.permutation(len(cells))[:per_function]:
                jobs.append({"folder": str(folder), "chapter": folder.name, "function": cells[i]["provenance"]["function"],
                             "key": cells[i]["key"]})
    return jobs


def run(jobs: list[dict], environment: dict) -> list[dict]:
    from explainopt.numerics import CODE_PATHS

    unset = {"NPY_DISABLE_CPU_FEATURES", "EXPLAINOPT_CODE_PATHS", *CODE_PATHS}
    env = {k: v for k, v in os.environ.items() if k not in unset}
    out = subprocess.run([sys.executable, "-c", WORKER], input="".join(json.dumps(j) + "\n" for j in jobs),
                         env={**env, **environment}, capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(f"the worker stopped (exit {out.returncode}):\n{out.stderr[-3000:]}")
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chapters", nargs="+", help="chapter numbers (default: all)")
    parser.add_argument("--per-function", type=int, default=2)
    parser.add_argument("--max-seconds", type=float, default=30.0, help="largest stored wall time of a drawn cell")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--paths", nargs="+", default=list(PATHS), choices=list(PATHS))
    parser.add_argument("--quick", action="store_true", help="1 cell per function, at most 10 s each")
    args = parser.parse_args(argv)
    if args.quick:
        args.per_function, args.max_seconds = 1, 10.0
    jobs = draw(args.chapters, args.per_function, args.max_seconds, args.seed)
    if not jobs:
        print(f"no stored cell of at most {args.max_seconds:g} s to draw (raise --max-seconds)")
        return 0
    rows = []
    for name in args.paths:
        for result in run(jobs, PATHS[name]):
            rows.append({"path": name, "chapter": result["chapter"], "function": result["function"].rpartition(".")[2],
                         "deviation": result.get("deviation", np.nan), "error": result.get("error"),
                         "blas": ", ".join(result["code_paths"]["blas"]), "seconds": result.get("seconds"),
                         "versions": "; ".join(f"{k} {v}" for k, v in sorted(result.get("versions", {}).items()))})
    table = pd.DataFrame(rows)
    print(summary(table, args.paths).to_string(float_format=lambda v: f"{v:.1e}"))
    for error, cells in table.dropna(subset=["error"]).groupby("error"):
        print(f"\nnot checked, {len(cells)} cell(s) of {', '.join(sorted(set(cells['function'])))}: {error}")
    print("\nBLAS kernels per path:", table.groupby("path")["blas"].first().to_dict())
    return 0


def summary(table: pd.DataFrame, paths: list[str]) -> pd.DataFrame:
    """Largest deviation per cell function and path, the cells checked, the package versions that differ
    from those the cells were stored with, and the verdict; a function none of whose cells could be computed
    here (an error in every one) reads *not checked*, and one that deviates beyond the tolerance under other
    versions reads *versions differ*: the deviation is not the processor's until it recurs with the stored
    versions (scipy 1.18.1's knapsack cells of chapter 3 deviated by 8.0 on a lent machine; with 1.17.1, as
    stored, by 2.3e-13)."""
    from explainopt.experiments import TOLERANCE

    groups = ["chapter", "function"]
    out = table.groupby([*groups, "path"])["deviation"].max().unstack("path").reindex(columns=paths)
    out["cells"] = table[table["error"].isna()].groupby(groups).size().reindex(out.index, fill_value=0) // len(paths)
    versions = table.get("versions", pd.Series("", index=table.index)).fillna("")
    out["versions"] = versions.groupby([table[g] for g in groups]).agg(
        lambda v: "; ".join(sorted({x for x in v if x})) or "as stored").reindex(out.index)
    worst = out[paths].max(axis=1)
    out["verdict"] = np.select([out["cells"] == 0, worst == 0, worst <= TOLERANCE, out["versions"] != "as stored"],
                               ["not checked", "bitwise", "within tolerance", "versions differ"], "machine-dependent")
    return out


if __name__ == "__main__":
    sys.exit(main())
