"""How far is the runner's estimate for a configuration it has never computed from what it costs? For every grid
that declares ``cost_by``, each configuration with stored cells is priced as if it had none: its own cells hidden,
:func:`explainopt.book.borrowed_cost` on the others. The plan and the status page's *still to compute* price the
configurations with no stored cell this way ("borrowed").

    python benchmarks/cost_estimates.py                          # every chapter store of the paper scale
    python benchmarks/cost_estimates.py --chapters 02 --hide model norm   # as if a model had no cell at its norm
    python benchmarks/cost_estimates.py --chapters 02 --cost-by model norm dataset rho   # another back-off order

``--hide`` hides, for each configuration, every cell that shares its values of these keys (default: its own
cells only), as the store lacks them where a whole group was never computed (chapter 2: a model's l2 cells).

Per grid: the configurations priced, the share whose borrowed estimate is within 2x and 3x of their own (the
median wall time of their stored cells), the median factor between the two, and the grid's cells of those
configurations priced both ways (core-hours). Reads the store only; computes nothing.
"""

import argparse

import explainopt  # noqa: F401  (before NumPy: the pinned numerical code paths)
import numpy as np
import pandas as pd

from explainopt import book, chapters


def leave_out(grid: book.Grid, store, cost_by: tuple[str, ...], hide: tuple[str, ...] = ()) -> pd.DataFrame:
    """Per configuration with stored cells: its own cost (median wall time), the cost borrowed from the cells
    left when its own are hidden (with `hide`: every cell sharing its values of those keys), and its cells in the
    grid."""
    stored = book.stored_times(grid, store)
    keys = [book.configuration(c) for c, _ in stored]
    in_grid = pd.Series([book.configuration(c) for c in grid.configs]).value_counts()
    rows = []
    for key in dict.fromkeys(keys):
        own = [s for k, (_, s) in zip(keys, stored) if k == key]
        config = next(c for k, (c, _) in zip(keys, stored) if k == key)
        others = [(c, s) for k, (c, s) in zip(keys, stored)
                  if k != key and not (hide and all(c.get(h) == config.get(h) for h in hide))]
        rows.append({"configuration": key, "own_s": float(np.median(own)),
                     "borrowed_s": book.borrowed_cost(config, others, cost_by), "cells": int(in_grid.get(key, 0))})
    return pd.DataFrame(rows, columns=["configuration", "own_s", "borrowed_s", "cells"])


def summary(priced: pd.DataFrame) -> dict:
    """Accuracy of the borrowed estimates of one grid (configurations nothing could be borrowed for left out)."""
    priced = priced.dropna(subset=["borrowed_s"])
    factor = np.exp(np.abs(np.log(priced["own_s"] / priced["borrowed_s"])))
    return {"configurations": len(priced), "within_2x": float((factor <= 2).mean()),
            "within_3x": float((factor <= 3).mean()), "median_factor": float(factor.median()),
            "own_core_hours": float((priced["own_s"] * priced["cells"]).sum() / 3600),
            "borrowed_core_hours": float((priced["borrowed_s"] * priced["cells"]).sum() / 3600)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chapters", nargs="*", help="chapter numbers (default: every chapter)")
    parser.add_argument("--scale", default="paper")
    parser.add_argument("--cost-by", nargs="*", help="price by these keys instead of the grid's own cost_by")
    parser.add_argument("--hide", nargs="*", default=[], help="hide every cell sharing these keys' values")
    parser.add_argument("--quick", action="store_true", help="as without it (`make benchmarks`): seconds anyway")
    args = parser.parse_args()
    rows = []
    for chapter in args.chapters or sorted(p.name for p in (book.RESULTS / args.scale).iterdir() if p.is_dir()):
        module = chapters.module(chapter)
        store = book.chapter_cache(chapter, args.scale)
        for name, grid in module.grids(chapters.settings(module.SCALES, args.scale)).items():
            if grid.cost_by:
                cost_by = tuple(args.cost_by or grid.cost_by)
                rows.append({"chapter": chapter, "grid": name, "cost_by": ", ".join(cost_by),
                             **summary(leave_out(grid, store, cost_by, tuple(args.hide)))})
    with pd.option_context("display.width", 200, "display.float_format", "{:.2f}".format):
        print(pd.DataFrame(rows).to_string(index=False) if rows else "no grid declares cost_by")


if __name__ == "__main__":
    main()
