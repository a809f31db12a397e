"""Encoders benchmark: nearest-counterfactual encode-and-solve time against model size.

    python benchmarks/encoders.py                # the full grid of the encoders issue (hours on 2 cores)
    python benchmarks/encoders.py --quick        # a few minutes
    python benchmarks/encoders.py --solvers highs gurobi
    python benchmarks/encoders.py --trees 10 100 --depths 3 8 --widths 10 --layers 1 2

Writes benchmarks/results/encoders.csv and encoders.png (tree formulations side by side, networks with
and without LP bound tightening).
"""

import argparse
from pathlib import Path

import matplotlib.pyplot as plt
import seaborn as sns

from explainopt.benchmark import network_grid, run_benchmark, tree_grid
from explainopt.experiments import atomic_write_bytes

RESULTS = Path(__file__).parent / "results"


def grid(args) -> list[dict]:
    """The configurations: the issue's full grid, the quick one, or the sizes named on the command line."""
    trees = args.trees or ([10, 50] if args.quick else [10, 50, 100, 500])
    depths = args.depths or ([3, 5] if args.quick else [3, 5, 8])
    widths = args.widths or ([10, 50] if args.quick else [10, 50, 100])
    layers = args.layers or ([1, 2] if args.quick else [1, 2, 3])
    return tree_grid(trees, depths) + network_grid(widths, layers)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small grid (10/50 trees, depth 3/5; width 10/50)")
    parser.add_argument("--solvers", nargs="+", default=["highs", "gurobi"])
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--factuals", type=int, default=3)
    parser.add_argument("--trees", type=int, nargs="+", help="ensemble sizes (default 10 50 100 500)")
    parser.add_argument("--depths", type=int, nargs="+", help="tree depths (default 3 5 8)")
    parser.add_argument("--widths", type=int, nargs="+", help="hidden widths (default 10 50 100)")
    parser.add_argument("--layers", type=int, nargs="+", help="hidden layers (default 1 2 3)")
    args = parser.parse_args()
    configs = grid(args)
    frame = run_benchmark(configs, solver_names=args.solvers, time_limit=args.time_limit, n_factuals=args.factuals)
    RESULTS.mkdir(exist_ok=True)
    atomic_write_bytes(RESULTS / "encoders.csv", frame.to_csv(index=False).encode())
    print(frame.to_string(index=False))
    if "mean_s" not in frame:
        raise SystemExit("no instance was timed: see the error column above")
    plot = sns.relplot(data=frame, x="size", y="mean_s", hue="option", style="solver", col="family",
                       row="depth", kind="line", marker="o", facet_kws={"sharex": False})
    plot.set(xscale="log", yscale="log", xlabel="trees / hidden width", ylabel="seconds per counterfactual")
    plot.savefig(RESULTS / "encoders.png", dpi=120)
    plt.close("all")


if __name__ == "__main__":
    main()
