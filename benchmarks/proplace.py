"""PROPLACE benchmark (chapter 4): seconds per counterfactual per data set, and the network encoders by
width and depth, with and without LP bound tightening.

    python benchmarks/proplace.py --quick                   # compas + adult, 3 factuals; widths 10/50, depth 1/2
    python benchmarks/proplace.py --datasets carla/give_me_some_credit --factuals 8 --repeats 3
    python benchmarks/proplace.py --skip-networks --bounds lazy ball   # PROPLACE before / after (issue 12.4)
    python benchmarks/proplace.py --skip-proplace --widths 50 --depths 2 --time-limit 20

PROPLACE: for every data set the chapter's network (book scale: the authors' epochs, 2 + 2 retrained
networks, cached in EXPLAINOPT_CACHE) and its first `--factuals` factuals; ``proplace`` with HiGHS, once
per ``--bounds`` (:data:`OPTIONS`: ``ball``, the default and proplace's defaults; ``lazy``, outer MILPs
with only the binding networks and LP-tightened big-M bounds over the hull, the version before issue
12.4; ``no-submips`` and ``cutoff`` add its levers one by one; ``lp``, every network in every outer
MILP; ``interval``, every network with interval bounds) and `--repeats` times. It prints the median and mean seconds per
counterfactual, the outer (eq. 5) and inner (eq. 6) solver seconds, iterations, outer MILPs, how many
distances equal the first option's, and raises if a counterfactual is not valid by the model's own
predict or not Delta-robust; after the table it lists the distances that differ between the options.

Networks: :func:`explainopt.benchmark.time_instance` (nearest counterfactual of an MLPClassifier on
ionosphere, HiGHS) per width, depth and tightening (``ibp``, ``lp``: :func:`~explainopt.encoders.
networks.network_bounds`, computed once per network and reused by every factual; ``ball``: LP bounds over
the box and the l1 ball around the factual of radius the distance to its nearest training counterfactual,
:func:`~explainopt.encoders.networks.counterfactual_ball`, once per factual, inside the timed call).
"""

import argparse
import time

import pandas as pd

from explainopt.benchmark import network_grid, time_instance
from explainopt.chapters import proplace as CH
from explainopt.counterfactuals.proplace import plausible_vertices, proplace


TOLERANCE = 1e-5  # |difference| of two distances counted as equal

#: The versions of the outer problem compared (:func:`~explainopt.counterfactuals.proplace.proplace`'s options).
BEFORE = dict(ball=False, cutoff=False, sub_mips=True)  # the levers of issue 12.4 off
OPTIONS = {"interval": dict(tighten=False, lazy=False) | BEFORE,  # interval bounds, every network in every MILP
           "lp": dict(tighten=True, lazy=False) | BEFORE,  # LP bounds over the hull, every network
           "lazy": dict(tighten=True, lazy=True) | BEFORE,  # LP bounds, the binding networks (main at 9777e06)
           "no-submips": dict(ball=False, cutoff=False),  # ... and HiGHS without the RINS/RENS sub-MIPs
           "cutoff": dict(ball=False),  # ... and the objective cutoff of the nearest feasible point known
           "ball": dict()}  # ... and LP bounds over the hull and the l1 ball: proplace's defaults


def run_proplace(dataset: str, args) -> list[dict]:
    prep = CH.prepare(dataset, None, 2, 2, "local")
    neighbours = CH.robust_neighbours(dataset, None, 2, 2, "local")
    delta = CH.DELTAS[dataset]
    rows, distances = [], {}
    for i in CH.factual_indices(prep, args.factuals):
        x0 = CH.factuals(prep)[i]
        V = plausible_vertices(x0, neighbours.query(x0, CH.K_NEIGHBOURS.get(dataset, 20)))
        for bounds in args.bounds:
            for rep in range(args.repeats):
                start = time.perf_counter()
                r = proplace(prep["model"], x0, V, delta=delta, solver="highs", time_limit=args.time_limit,
                             **OPTIONS[bounds])
                seconds = time.perf_counter() - start
                if r.x is not None and not (r.valid and r.delta_valid):
                    raise AssertionError(f"{dataset} factual {i} ({bounds}): not valid / not Delta-robust: {r}")
                ref = distances.setdefault(i, r.distance)  # the first option's distance on this factual
                equal = ref is not None and r.distance is not None and abs(ref - r.distance) <= TOLERANCE
                rows.append(dict(dataset=CH.short(dataset), factual=int(i), bounds=bounds, repeat=rep, seconds=seconds,
                                 outer=r.outer_time, inner=r.inner_time, iterations=r.iterations,
                                 outer_solves=r.outer_solves, status=r.status, distance=r.distance,
                                 solved=r.status in ("optimal", "certified"), equal=equal))
                print(f"  {CH.short(dataset)} {i} {bounds}: {seconds:.2f} s, {r.iterations} iterations, {r.status}, "
                      f"distance {r.distance}", flush=True)
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="compas and adult, 3 factuals, widths 10/50, depths 1/2")
    parser.add_argument("--datasets", nargs="+", help="default: the chapter's four (quick: compas, adult)")
    parser.add_argument("--factuals", type=int, default=None, help="factuals per data set (default 8, quick 3)")
    parser.add_argument("--repeats", type=int, default=1, help="runs per factual (the machine may be contended)")
    parser.add_argument("--bounds", nargs="+", default=["ball"], choices=list(OPTIONS))
    parser.add_argument("--time-limit", type=float, default=None, help="seconds per MILP (default: none)")
    parser.add_argument("--widths", type=int, nargs="+", help="hidden widths (default 10 50 100; quick 10 50)")
    parser.add_argument("--depths", type=int, nargs="+", help="hidden layers (default 1 2 3; quick 1 2)")
    parser.add_argument("--tightening", nargs="+", default=["ibp", "lp", "ball"], choices=["ibp", "lp", "ball"],
                        help="network big-M bounds (default all three)")
    parser.add_argument("--skip-proplace", action="store_true")
    parser.add_argument("--skip-networks", action="store_true")
    args = parser.parse_args()
    args.factuals = args.factuals or (3 if args.quick else 8)
    datasets = args.datasets or (["carla/compas", "carla/adult"] if args.quick else CH.DATASETS)
    if not args.skip_proplace:
        frame = pd.DataFrame([row for ds in datasets for row in run_proplace(ds, args)])
        table = frame.groupby(["dataset", "bounds"], sort=False).agg(
            median_s=("seconds", "median"), mean_s=("seconds", "mean"), max_s=("seconds", "max"),
            outer_s=("outer", "mean"), inner_s=("inner", "mean"), iterations=("iterations", "mean"),
            outer_solves=("outer_solves", "mean"),
            runs=("seconds", "size"), distance=("distance", "mean"), equal=("equal", "sum"))
        print("\nPROPLACE, seconds per counterfactual (HiGHS; equal: distances equal to the first option's)\n"
              + table.round(3).to_string())
        differ = frame[frame["solved"] & ~frame["equal"]]
        if len(differ):  # each outer optimum is kept (tests), but l1 optima tie: Algorithm 1 may take another path
            print(f"\nDistances that differ from the first option's by more than {TOLERANCE:g} (Algorithm 1 follows "
                  f"the solver's choice among tied optima of eq. 5 and 6):\n{differ.to_string()}")
    if not args.skip_networks:
        widths = args.widths or ([10, 50] if args.quick else [10, 50, 100])
        depths = args.depths or ([1, 2] if args.quick else [1, 2, 3])
        limit = args.time_limit or 60.0
        tightening = [None if t == "ibp" else t for t in args.tightening]
        rows = [time_instance(c, solver="highs", time_limit=limit, n_factuals=3)
                for c in network_grid(widths, depths, tightening)]
        table = pd.DataFrame(rows)[["size", "depth", "option", "mean_s", "max_s", "optimal", "valid", "factuals"]]
        print(f"\nNetwork encoders, nearest counterfactual on ionosphere (HiGHS, {limit:g} s limit)\n"
              + table.rename(columns={"size": "width", "option": "bounds"}).round(3).to_string(index=False))


if __name__ == "__main__":
    main()
