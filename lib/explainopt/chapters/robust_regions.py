"""Chapter 2, regions of robust counterfactual explanations (Maragno et al., 2024): the paper's protocol.

The experiments of the paper, re-run on the algorithm of :mod:`explainopt.counterfactuals.regions`:

* data and models as in the authors' code (:func:`paper_data`, :func:`paper_model`, :func:`fitted_model`):
  the whole frame min-max scaled, no train/test split, the models fitted on every row; the factuals drawn
  at random with the seed, as the paper says (:func:`factual_indices`; the authors' code takes the first
  rows);
* one cell of Tables 1-2 (:func:`region_instance`: Algorithm 1 for one factual, then the independent
  certificate), of Table 3 (:func:`baseline_instance`: our region against Dominguez-Olmedo et al.'s
  Algorithm 1, :mod:`explainopt.counterfactuals.adversarial_recourse`) and of the heuristic comparison
  (:func:`single_leaf_instance`: the single-leaf heuristic of eqs. 36-39 on the same factual);
* the grids of :data:`SCALES` (:func:`grids`: what the notebook runs through its ``ChapterRun`` and what
  ``python -m explainopt.book run --scale paper --budget ...`` fills into ``results/paper/02``), also
  callable without a run (``run_*``);
* the tables beside the paper's numbers (transcribed in ``data/robust_regions_*.csv``):
  :func:`compare_with_paper` (Tables 1-2), :func:`table3`, :func:`accuracy_table` (Table 4), and
  :func:`single_leaf_table` (the heuristic against Algorithm 1, for which the paper gives no numbers);
* the checks behind each of the paper's claims (``claim_*``, all of them by :func:`claims`), which
  read *not run* when their data are missing;
* the figures: Figures 2 and 6 (:func:`tree_run`, a cell per tree, :func:`figure_tree_iterations`), Figure 5
  (:func:`figure_single_leaf`), Figure 7 (:func:`figure_convergence`), with captions computed from the run,
  and the interactive figure of the regions as the radius moves (:func:`path_region`, a cell per method and
  radius, assembled by :func:`region_path`; :func:`plot_region_slider`). Their cells are grids like the
  tables', so the paper scale renders them from the results store.
"""

from __future__ import annotations

import functools
import inspect
import math

import numpy as np
import pandas as pd
from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.neural_network import MLPClassifier
from sklearn.tree import DecisionTreeClassifier

from ..counterfactuals.adversarial_recourse import adversarial_recourse
from ..counterfactuals.regions import certify_region, robust_region, single_leaf_region, tree_boxes
from ..datasets import load_dataset
from ..encoders import model_predict
from ..experiments import Grid, cache_dir, run_grid
from ..reporting import Claim, every, missing
from ..verdicts import SIGN_TEST_LEVEL, ClaimBook, beside, share_of_matched_pairs, sign_test
from . import paper_table, solver_key

CHAPTER = "02"
DATASETS = ("banknote", "diabetes", "ionosphere")
#: The models of the paper (Tables 1-2 and 4, in order).
PAPER_MODELS = ("LR", "DT3", "DT5", "DT10", "RF5", "RF10", "RF20", "RF50", "RF100",
                "GBM5", "GBM10", "GBM20", "GBM50", "GBM100", "NN10", "NN10-10-10", "NN50", "NN100")
#: Table 3's (dataset, network) pairs.
TABLE3_PAIRS = [("banknote", "NN50"), ("diabetes", "NN50"), ("ionosphere", "NN10"), ("ionosphere", "NN50")]

#: The grids of the three scales. datasets/models/rhos/norms/instances/time_limit: Tables 1-2 (the
#: reader may override them); table3: Table 3's pairs, radii, instances, the baseline's rounds (outer
#: iterations; the authors' code: 100) and our time limit; figure7: the models of Figure 7 and the time limit of both figures; slider_rhos: the radii of
#: the interactive figure (and of Figure 5).
SCALES = {
    "smoke": dict(datasets=["banknote", "diabetes"], models=["LR", "DT3", "RF5", "GBM5", "NN10"], rhos=[0.05],
                  norms=["linf", "l2"], instances=1, time_limit=4,
                  table3=dict(pairs=[("banknote", "NN10")], rhos=[0.1], instances=1, rounds=20, time_limit=10),
                  figure7=["DT10", "RF5", "GBM5", "NN10"], figure_time_limit=4, slider_rhos=[0.02, 0.05, 0.1]),
    # book: every family, both radii and norms, 2 factuals, 8 s per instance (about 10 minutes on 2 cores);
    # the largest ensembles (RF20+, GBM20+) and networks (NN10-10-10, NN100) are left to the paper scale
    "book": dict(datasets=list(DATASETS), models=["LR", "DT3", "DT10", "RF5", "RF10", "GBM5", "GBM10", "NN10", "NN50"],
                 rhos=[0.01, 0.05], norms=["linf", "l2"], instances=2, time_limit=8,
                 table3=dict(pairs=TABLE3_PAIRS, rhos=[0.1, 0.2], instances=2, rounds=100, time_limit=30),
                 figure7=["DT10", "RF10", "GBM10", "NN50"], figure_time_limit=15,
                 slider_rhos=[0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15]),
    # paper: the full grid of Tables 1-3 with the paper's 1000 s limit
    "paper": dict(datasets=list(DATASETS), models=list(PAPER_MODELS), rhos=[0.01, 0.05], norms=["linf", "l2"],
                  instances=20, time_limit=1000,
                  table3=dict(pairs=TABLE3_PAIRS, rhos=[0.1, 0.2], instances=10, rounds=100, time_limit=1000),
                  figure7=["DT10", "RF50", "GBM50", "NN100"], figure_time_limit=1000,
                  slider_rhos=[0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15]),
}


# =========================================================================== data and models

def paper_data(dataset: str) -> tuple[np.ndarray, np.ndarray]:
    """The authors' data: the whole frame min-max scaled to [0, 1] (no split; the 0/1 outcome is
    unchanged by scaling). Returns (X, y)."""
    if dataset not in DATASETS:
        raise ValueError(f"dataset={dataset!r}: expected one of {DATASETS}")
    data = load_dataset(f"robust-ce/{dataset}").scaled()
    return data.X.to_numpy(float), data.y.to_numpy(int)


def paper_model(name: str, *, random_state: int = 0):
    """An unfitted model of the paper's grid by name (``LR``, ``DT10``, ``RF50``, ``GBM20``, ``NN10-10-10``):
    logistic regression; CART of the given depth; random forests of depth-3 trees; gradient boosting of
    depth-2 trees with learning rate 1; ReLU MLPs (max_iter 10000) -- as in the authors' code."""
    if name == "LR":
        return LogisticRegression(random_state=random_state)
    for prefix, make in (
        ("DT", lambda k: DecisionTreeClassifier(max_depth=k, random_state=random_state)),
        ("RF", lambda k: RandomForestClassifier(n_estimators=k, max_depth=3, random_state=random_state)),
        ("GBM", lambda k: GradientBoostingClassifier(n_estimators=k, max_depth=2, learning_rate=1.0,
                                                     random_state=random_state)),
    ):
        if name.startswith(prefix) and name[len(prefix):].isdigit():
            return make(int(name[len(prefix):]))
    if name.startswith("NN"):
        sizes = tuple(int(k) for k in name[2:].split("-"))
        return MLPClassifier(hidden_layer_sizes=sizes, max_iter=10_000, random_state=random_state)
    raise ValueError(f"model={name!r}: expected one of {PAPER_MODELS} (or another size of the same kinds)")


@functools.lru_cache(maxsize=32)
def fitted_model(dataset: str, model: str, random_state: int = 0):
    """The paper's model fitted on the whole scaled dataset (cached per process)."""
    X, y = paper_data(dataset)
    return paper_model(model, random_state=random_state).fit(X, y)


def model_accuracy(*, dataset: str, model: str, random_state: int = 0, test_size: float = 0.2) -> dict:
    """Training accuracy of the model used (fitted on all rows) and, to mirror Table 4's test column,
    the test accuracy of the same model refitted on a stratified 80/20 split."""
    X, y = paper_data(dataset)
    full = fitted_model(dataset, model, random_state)
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=test_size, stratify=y, random_state=random_state)
    split = paper_model(model, random_state=random_state).fit(X_tr, y_tr)
    return {"dataset": dataset, "model": model, "train": float((full.predict(X) == y).mean()),
            "test": float((split.predict(X_te) == y_te).mean())}


def factual_indices(dataset: str, n: int, *, random_state: int = 0) -> list[int]:
    """The factuals of the paper ("20 factual instances randomly selected from the dataset"): the rows of
    a seeded random permutation of `dataset`, first `n` of them. A prefix of a larger draw with the same
    seed (the smoke scale's factuals are among the book's, the book's among the paper's). The authors'
    code takes the first rows instead (see the chapter)."""
    X, _ = paper_data(dataset)
    if not (isinstance(n, (int, np.integer)) and 0 <= n <= len(X)):
        raise ValueError(f"n={n!r}: expected an integer from 0 to the {len(X)} rows of {dataset}")
    return [int(i) for i in np.random.default_rng(random_state).permutation(len(X))[:n]]


def two_feature_tree(depth: int, *, random_state: int = 0):
    """The decision tree of Figures 2, 5 and 6: CART of the given depth on the first two banknote features
    (variance, skewness), scaled. Returns (X2, y, tree)."""
    X, y = paper_data("banknote")
    X2 = X[:, :2]
    return X2, y, paper_model(f"DT{depth}", random_state=random_state).fit(X2, y)


# =========================================================================== one cell of each grid

def region_instance(*, dataset: str, model: str, norm: str, rho: float, index: int, time_limit: float = 1000.0,
                    max_iterations: int = 200, objective: str = "l1", solver=None, random_state: int = 0,
                    n_samples: int = 10_000, track_radius: bool = False) -> dict:
    """One cell of Tables 1-2: Algorithm 1 for factual row `index` (target: the other predicted class),
    then the independent certificate (sampled with ``random_state + index``). A flat dict."""
    X, _ = paper_data(dataset)
    clf = fitted_model(dataset, model, random_state)
    region = robust_region(clf, X[index], rho=rho, norm=norm, lower=0.0, upper=1.0, objective=objective,
                           time_limit=time_limit, max_iterations=max_iterations, solver=solver,
                           track_radius=track_radius)
    cert = None if region.x is None else certify_region(
        clf, region.x, rho=region.radius, norm=region.norm, target=region.target, n_samples=n_samples,
        random_state=random_state + index, solver=solver)
    return {
        "dataset": dataset, "model": model, "norm": norm, "rho": rho, "index": index,
        "status": region.detail, "converged": region.converged, "early_stop": region.early_stop,
        "iterations": region.iterations, "time": region.time, "master_time": region.master_time,
        "adversarial_time": region.adversarial_time, "distance": region.distance, "rho_bar": region.rho_bar,
        "solver": region.solver, "fallback_from": region.fallback_from,
        "x": None if region.x is None else region.x.tolist(), "x0": X[index].tolist(), "target": region.target,
        "has_region": region.x is not None,  # False: the time limit hit inside the first master problem
        "certified": bool(cert and cert.certified), "certified_radius": cert.radius if cert else math.nan,
        "certificate_ap_value": cert.ap_value if cert else math.nan,
        "samples": cert.n_samples if cert else 0, "sample_violations": cert.n_violations if cert else -1,
        "history": [{"iteration": h.iteration, "distance": h.distance, "ap_value": h.ap_value, "radius": h.radius}
                    for h in region.history],
    }


def baseline_instance(*, dataset: str, model: str, rho: float, index: int, time_limit: float = 1000.0,
                      solver=None, random_state: int = 0, n_samples: int = 10_000, rounds: int = 100) -> dict:
    """One row of Table 3: our region (l2 ball) and Dominguez-Olmedo et al.'s Algorithm 1 (their code's
    hyperparameters; `rounds`: its outer iterations, 100 in their code) for the same factual, both checked
    exactly (AP at rho + samples) and for validity with the model's own prediction."""
    X, _ = paper_data(dataset)
    clf = fitted_model(dataset, model, random_state)
    ours = region_instance(dataset=dataset, model=model, norm="l2", rho=rho, index=index, time_limit=time_limit,
                           solver=solver, random_state=random_state, n_samples=n_samples)
    theirs = adversarial_recourse(clf, X[index], rho=rho, target=ours["target"], rounds=rounds)
    cert = certify_region(clf, theirs.x, rho=rho, norm="l2", target=ours["target"], n_samples=n_samples,
                          random_state=random_state + index, solver=solver)
    return {
        "dataset": dataset, "model": model, "rho": rho, "index": index,
        "ours_robust": bool(ours["certified"] and ours["converged"]),
        "ours_valid": bool(ours["x"] is not None and model_predict(clf, ours["x"])[0] == ours["target"]),
        "ours_distance": ours["distance"], "ours_time": ours["time"], "ours_status": ours["status"],
        "ours_rho_bar": ours["rho_bar"], "solver": ours["solver"], "fallback_from": ours["fallback_from"],
        "baseline_robust": bool(cert.certified), "baseline_valid": theirs.valid,
        "baseline_robust_by_attack": theirs.robust_by_attack, "baseline_distance": theirs.distance,
        "baseline_time": theirs.time, "baseline_ap_value": cert.ap_value,
        "baseline_sample_violations": cert.n_violations,
    }


def single_leaf_instance(*, dataset: str, model: str, norm: str, rho: float, index: int, solver=None,
                         random_state: int = 0, n_samples: int = 10_000) -> dict:
    """One cell of the heuristic comparison (Section 3.1, Figure 5): the single-leaf heuristic of eqs.
    36-39 (:func:`explainopt.counterfactuals.regions.single_leaf_region`) for a decision tree and the factual
    of :func:`region_instance` with the same keys, certified the same way."""
    X, _ = paper_data(dataset)
    clf = fitted_model(dataset, model, random_state)
    region = single_leaf_region(clf, X[index], rho=rho, norm=norm, lower=0.0, upper=1.0, objective="l1")
    cert = None if region.x is None else certify_region(
        clf, region.x, rho=rho, norm=norm, target=region.target, n_samples=n_samples,
        random_state=random_state + index, solver=solver)
    return {"dataset": dataset, "model": model, "norm": norm, "rho": rho, "index": index,
            "heuristic_status": region.detail, "heuristic_distance": region.distance,
            "heuristic_time": region.time, "heuristic_certified": bool(cert and cert.certified)}


# =========================================================================== the grids of a scale

def tree_models(models) -> list[str]:
    """The single decision trees among model names (``DT3``, ``DT10``): the models of the heuristic."""
    return [m for m in models if m.startswith("DT") and m[2:].isdigit()]


def _instance_major(configs: list[dict], rank: dict) -> list[int]:
    """Indices of `configs` with every configuration's first factual first, then every second factual...
    (`rank`: row index -> its place in the draw, per dataset), so a budgeted run fills every table row early."""
    return sorted(range(len(configs)), key=lambda k: (rank[configs[k]["dataset"]][configs[k]["index"]], k))


#: The claims each grid decides (what a budgeted run prints in its plan).
GRID_CLAIMS = {"accuracies": ["Table 4's accuracies"],
               "single_leaf": ["the single-leaf heuristic is faster but may be non-optimal"],
               "figure2": ["iterations grow with model complexity (Figures 2 and 6)"],
               "region_path": ["the single-leaf heuristic (Figure 5)"],
               "figure7": ["Figure 7: monotone distance, non-monotone robustness"],
               "table3": ["the gradient baseline is often not robust, sometimes invalid; ours robust and valid"],
               "regions": ["regions are robust", "time and iterations grow with model complexity",
                           "l2 converges slower than l-inf", "a smaller radius is faster", "the paper's times"]}


def grids(S: dict, *, seed: int = 0, solver: str | None = "auto", n_samples: int = 10_000) -> dict[str, Grid]:
    """The chapter's grids at settings `S` (a row of :data:`SCALES`), in the order a budgeted run fills them:
    the smaller grids first, the 4320 cells of Tables 1-2 (paper scale) last.

    ``accuracies`` (:func:`model_accuracy`, Table 4), ``single_leaf`` (:func:`single_leaf_instance`: the
    heuristic for the decision-tree cells of ``regions``, closed form), ``figure2`` (:func:`tree_run`: Figures
    2 and 6, one cell per tree depth of :data:`FIGURE2_DEPTHS`, the first drawn banknote factual),
    ``region_path`` (:func:`path_region`: the interactive figure and Figure 5, one cell per method and radius
    of ``slider_rhos``), ``figure7`` (:func:`region_instance`
    with the radius of every master solution, the first drawn diabetes factual, box of radius 0.05),
    ``table3`` (:func:`baseline_instance`) and ``regions`` (:func:`region_instance`: Tables 1-2, every norm,
    radius, model, dataset and drawn factual). Cells come factual-major (every configuration's first
    factual, then every second one...), so each row of the tables gets a first estimate before any row
    gets its twentieth.
    `seed` draws the factuals (:func:`factual_indices`) and is the models' random_state; `solver` "auto"
    (or None) leaves the choice to :func:`explainopt.solvers.solve`.
    """
    solver = solver_key(solver)
    datasets = sorted({*S["datasets"], *(d for d, _ in S["table3"]["pairs"]), "diabetes"})
    n_draw = max(S["instances"], S["table3"]["instances"], 1)
    drawn = {d: factual_indices(d, n_draw, random_state=seed) for d in datasets}
    rank = {d: {i: k for k, i in enumerate(rows)} for d, rows in drawn.items()}

    def cells(models):
        return [dict(dataset=d, model=m, norm=nm, rho=r, index=i)
                for nm in S["norms"] for r in S["rhos"] for m in models for d in S["datasets"]
                for i in drawn[d][:S["instances"]]]

    regions = [dict(c, time_limit=S["time_limit"], solver=solver, random_state=seed, n_samples=n_samples)
               for c in cells(S["models"])]
    single = [dict(c, solver=solver, random_state=seed, n_samples=n_samples) for c in cells(tree_models(S["models"]))]
    t3 = S["table3"]
    table3 = [dict(dataset=d, model=m, rho=r, index=i, time_limit=t3["time_limit"], solver=solver,
                   random_state=seed, n_samples=n_samples, rounds=t3["rounds"])
              for d, m in t3["pairs"] for r in t3["rhos"] for i in drawn[d][:t3["instances"]]]
    figure7 = [dict(dataset="diabetes", model=m, norm="linf", rho=0.05, index=drawn["diabetes"][0], solver=solver,
                    random_state=seed, time_limit=S["figure_time_limit"], n_samples=n_samples, track_radius=True)
               for m in S["figure7"]]
    accuracies = [dict(dataset=d, model=m, random_state=seed) for d in S["datasets"] for m in S["models"]]
    first = factual_indices("banknote", 1, random_state=seed)[0]
    figure2 = [dict(depth=depth, index=first, rho=0.05, time_limit=S["figure_time_limit"], solver=solver,
                    random_state=seed) for depth in FIGURE2_DEPTHS]
    path = [dict(method=m, rho=r, index=first, depth=PATH_DEPTH, random_state=seed, solver=solver,
                 time_limit=S["figure_time_limit"], n_samples=PATH_SAMPLES) for m in PATH_METHODS for r in S["slider_rhos"]]
    return {"accuracies": Grid(model_accuracy, accuracies, order=list(range(len(accuracies)))),
            "single_leaf": Grid(single_leaf_instance, single, order=_instance_major(single, rank)),
            "figure2": Grid(tree_run, figure2, order=list(range(len(figure2)))),
            "region_path": Grid(path_region, path, order=list(range(len(path)))),
            "figure7": Grid(region_instance, figure7, order=list(range(len(figure7)))),
            "table3": Grid(baseline_instance, table3, order=_instance_major(table3, rank)),
            # The radius moves a region's cost most (the large ensembles hit the time limit at ρ = 0.05 only),
            # the norm least: a configuration never computed borrows from its twin at the other norm first.
            "regions": Grid(region_instance, regions, order=_instance_major(regions, rank),
                            cost_by=("model", "rho", "dataset", "norm"))}


#: The decision trees of Figures 2 and 6 (depth 3, and the overfitted depth 10).
FIGURE2_DEPTHS = (3, 10)


def rows(results) -> list[dict]:
    """The computed cells of a grid's results (a cell not yet in the paper-scale store comes back None)."""
    return [r for r in results if r is not None]


def frame_of(results) -> pd.DataFrame:
    """A grid's computed cells as a DataFrame (:func:`rows`)."""
    return pd.DataFrame(rows(results))


def _run(name: str, settings: dict, *, solver, random_state, n_samples, n_jobs) -> list:
    grid = grids(settings, seed=random_state, solver=solver, n_samples=n_samples)[name]
    return run_grid(grid.func, grid.configs, cache=cache_dir(CHAPTER), n_jobs=n_jobs, description=name)


def run_accuracies(settings: dict, *, random_state: int = 0, n_jobs: int = 1) -> list[dict]:
    """:func:`model_accuracy` for every dataset and model of `settings` (Table 4), cached in the chapter's
    folder (the notebook runs the same grid through its :class:`~explainopt.book.ChapterRun`)."""
    return _run("accuracies", settings, solver=None, random_state=random_state, n_samples=0, n_jobs=n_jobs)


def run_regions(settings: dict, *, solver=None, random_state: int = 0, n_samples: int = 10_000,
                n_jobs: int = 1) -> pd.DataFrame:
    """Tables 1-2: the ``regions`` grid of :func:`grids` as a frame (one row per instance)."""
    return frame_of(_run("regions", settings, solver=solver, random_state=random_state, n_samples=n_samples,
                         n_jobs=n_jobs))


def run_convergence(settings: dict, *, solver=None, random_state: int = 0, n_samples: int = 10_000,
                    n_jobs: int = 1) -> list[dict]:
    """Figure 7: the ``figure7`` grid of :func:`grids` (every master solution's certified radius, the first
    drawn diabetes factual, box of radius 0.05)."""
    return rows(_run("figure7", settings, solver=solver, random_state=random_state, n_samples=n_samples,
                     n_jobs=n_jobs))


def run_single_leaf(settings: dict, *, solver=None, random_state: int = 0, n_samples: int = 10_000,
                    n_jobs: int = 1) -> pd.DataFrame:
    """The heuristic comparison: the ``single_leaf`` grid of :func:`grids` (the cells of :func:`run_regions`
    whose model is a decision tree; none: an empty frame)."""
    return frame_of(_run("single_leaf", settings, solver=solver, random_state=random_state, n_samples=n_samples,
                         n_jobs=n_jobs))


# =========================================================================== tables

def instances_note(frame: pd.DataFrame) -> str:
    """One sentence counting the instances, regions, certificates, sampled points and early stops."""
    if frame.empty:
        return "No instance ran."
    returned = frame[frame["has_region"]]
    return (f"{len(frame)} instances, {len(returned)} regions returned ({len(frame) - len(returned)} time limits "
            f"inside the first master problem), {returned['certified'].sum()} certified, "
            f"{frame['sample_violations'].clip(lower=0).sum()} adverse points among {frame['samples'].sum()} "
            f"samples, {frame['early_stop'].sum()} early stops, solvers: {sorted(set(frame['solver']))}")


def uncertified_regions(frame: pd.DataFrame) -> pd.DataFrame:
    """The returned regions whose independent certificate failed (the table should be empty)."""
    columns = ["dataset", "model", "norm", "rho", "index", "status", "rho_bar", "certificate_ap_value",
               "sample_violations"]
    if frame.empty:
        return pd.DataFrame(columns=columns)
    return frame[frame["has_region"] & ~frame["certified"]][columns]


def _se(values) -> float:
    return values.std(ddof=1) / math.sqrt(len(values)) if len(values) > 1 else math.nan


SUMMARY_COLUMNS = ["norm", "rho", "model", "dataset", "n", "time", "time_se", "iterations", "iterations_se",
                   "early_stops", "rho_bar", "certified", "time_all", "iterations_all"]


def summary_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Tables 1-2 from instance rows: mean time and iterations (standard errors) over the instances
    that converged (as the paper), the number of early stops and their mean rho-bar, and certification."""
    if frame.empty:
        return pd.DataFrame({c: pd.Series(dtype=object if c in ("norm", "model", "dataset") else float)
                             for c in SUMMARY_COLUMNS})
    rows = []
    for key, g in frame.groupby(["norm", "rho", "model", "dataset"], sort=False):
        done = g[g["converged"]]
        stops = g[g["early_stop"]]
        rows.append(dict(zip(["norm", "rho", "model", "dataset"], key), **{
            "n": len(g), "time": done["time"].mean(), "time_se": _se(done["time"]),
            "iterations": done["iterations"].mean(), "iterations_se": _se(done["iterations"]),
            "early_stops": len(stops), "rho_bar": stops["rho_bar"].mean() if len(stops) else math.nan,
            "certified": int(g["certified"].sum()),
            "time_all": g["time"].mean(), "iterations_all": g["iterations"].mean(),
        }))
    return pd.DataFrame(rows)


def paper_tables() -> pd.DataFrame:
    """Tables 1 (linf) and 2 (l2) of the paper: mean time (s.e.), mean iterations (s.e.), early stops and
    their mean rho-bar, per norm, rho, model and dataset (NaN where the paper prints a dash)."""
    return paper_table("robust_regions_tables_1_2")


def _mean_se(mean, se) -> str:
    if mean != mean:  # NaN
        return "–"
    return f"{mean:.2f} ({se:.2f})" if se == se else f"{mean:.2f} (–)"


def _stops(n, rho_bar) -> str:
    return "–" if not n else f"{int(n)} (ρ̄={rho_bar:.3f})"


def compare_with_paper(summary: pd.DataFrame, *, norm: str) -> pd.DataFrame:
    """Table 1 (``linf``) or 2 (``l2``): ours and the paper's time, iterations and early stops side by side,
    with the time ratio ours/paper, for the configurations that ran."""
    merged = summary[summary["norm"] == norm].merge(paper_tables(), on=["norm", "rho", "model", "dataset"],
                                                      how="left", suffixes=("", "_paper"))
    out = pd.DataFrame({
        "ρ": merged["rho"], "model": merged["model"], "dataset": merged["dataset"], "n": merged["n"],
        "time (s) ours": [_mean_se(m, s) for m, s in zip(merged["time"], merged["time_se"])],
        "time (s) paper": [_mean_se(m, s) for m, s in zip(merged["time_paper"], merged["time_se_paper"])],
        "ratio": merged["time"] / merged["time_paper"],   # unrounded: 02-times compares it with 3 (the view formats)
        "iterations ours": [_mean_se(m, s) for m, s in zip(merged["iterations"], merged["iterations_se"])],
        "iterations paper": [_mean_se(m, s) for m, s in zip(merged["iterations_paper"], merged["iterations_se_paper"])],
        "early stops ours": [_stops(n, r) for n, r in zip(merged["early_stops"], merged["rho_bar"])],
        "early stops paper": [_stops(n, r) for n, r in zip(merged["early_stops_paper"], merged["rho_bar_paper"])],
        "certified": [f"{c}/{n}" for c, n in zip(merged["certified"], merged["n"])],
    })
    return out.set_index(["ρ", "model", "dataset"])


def table3(frame: pd.DataFrame) -> pd.DataFrame:
    """Table 3: % robust (certified exactly at rho) and % valid, the gradient baseline vs. Algorithm 1,
    ours beside the paper's."""
    paper = {(row.dataset, row.model, row.rho): (row.baseline_robust, row.baseline_valid, row.ours_robust,
                                                  row.ours_valid)
             for row in paper_table("robust_regions_table_3").itertuples()}
    rows = []
    for (d, m, r), g in frame.groupby(["dataset", "model", "rho"], sort=False) if not frame.empty else []:
        p = paper.get((d, m, r), (math.nan,) * 4)
        rows.append({"dataset": d, "model": m, "ρ": r, "n": len(g),
                     "baseline robust %": 100 * g["baseline_robust"].mean(), "paper": p[0],
                     "baseline valid %": 100 * g["baseline_valid"].mean(), "paper ": p[1],
                     "ours robust %": 100 * g["ours_robust"].mean(), "paper  ": p[2],
                     "ours valid %": 100 * g["ours_valid"].mean(), "paper   ": p[3]})
    return pd.DataFrame(rows).set_index(["dataset", "model", "ρ"]) if rows else pd.DataFrame()


def accuracy_table(rows) -> pd.DataFrame:
    """Our accuracies (from :func:`model_accuracy` rows) beside Table 4 of the paper."""
    ours = pd.DataFrame(list(rows), columns=["dataset", "model", "train", "test"])
    paper = paper_table("robust_regions_table_4").rename(columns={"train": "paper train", "test": "paper test"})
    ours = ours.merge(paper, on=["dataset", "model"], how="left")
    return ours.set_index(["dataset", "model"])[["train", "paper train", "test", "paper test"]].unstack(0)


KEYS = ["dataset", "model", "norm", "rho", "index"]
#: How much farther than Algorithm 1's a heuristic counterfactual must be to count as "farther", and how
#: much closer it may be without contradicting eqs. 36-39 (the master problem's MIP gap and the margins
#: of the split encodings: the l1 distances agree to this absolute tolerance when both are optimal).
DISTANCE_TOLERANCE = 1e-3


def single_leaf_comparison(frame: pd.DataFrame, heuristic: pd.DataFrame) -> pd.DataFrame:
    """Per factual: Algorithm 1 (the rows of `frame` that converged, an exact optimum) beside the
    single-leaf heuristic (`heuristic`, from :func:`run_single_leaf`) on the same keys: distances, times,
    whether the heuristic is farther (by more than :data:`DISTANCE_TOLERANCE`) or closer (which eqs. 36-39
    forbid: its feasible set lies inside Algorithm 1's) and certified."""
    columns = KEYS + ["exact_distance", "heuristic_distance", "exact_time", "heuristic_time", "exact_iterations",
                      "farther", "closer", "heuristic_certified"]
    if frame.empty or heuristic.empty:
        return pd.DataFrame(columns=columns)
    exact = frame[frame["converged"]].rename(columns={"distance": "exact_distance", "time": "exact_time",
                                                      "iterations": "exact_iterations"})
    both = exact[KEYS + ["exact_distance", "exact_time", "exact_iterations"]].merge(
        heuristic[heuristic["heuristic_status"] == "converged"], on=KEYS)
    both["farther"] = both["heuristic_distance"] > both["exact_distance"] + DISTANCE_TOLERANCE
    both["closer"] = both["heuristic_distance"] < both["exact_distance"] - DISTANCE_TOLERANCE
    return both[columns].reset_index(drop=True)


def single_leaf_table(comparison: pd.DataFrame) -> pd.DataFrame:
    """Figure 5 in numbers, per model, norm and radius: mean l1 distance of Algorithm 1 and of the
    single-leaf heuristic, how often the heuristic is farther, median times and the speed-up. The paper
    gives no numbers for the heuristic, only that it is faster and may be non-optimal (Section 3.1)."""
    rows = []
    for (m, nm, r), g in comparison.groupby(["model", "norm", "rho"], sort=False):
        rows.append({"model": m, "norm": nm, "ρ": r, "n": len(g),
                     "distance exact": g["exact_distance"].mean(), "distance heuristic": g["heuristic_distance"].mean(),
                     "heuristic farther": f"{int(g['farther'].sum())}/{len(g)}",
                     "time exact (s)": g["exact_time"].median(), "time heuristic (s)": g["heuristic_time"].median(),
                     "speed-up": g["exact_time"].median() / max(g["heuristic_time"].median(), 1e-9),
                     "certified": f"{int(g['heuristic_certified'].sum())}/{len(g)}",
                     "paper": "faster, may be non-optimal (no numbers)"})
    return pd.DataFrame(rows).set_index(["model", "norm", "ρ"]) if rows else pd.DataFrame()


# =========================================================================== the paper's trends

TRENDS = ("complexity_ratio", "features_ratio", "l2_slower", "small_rho_faster", "iterations_ratio")
#: Fewest matched configurations (both sides of a comparison computed) behind a share of :func:`trend_checks`.
MIN_MATCHED = 3


def matched_share(wide: pd.DataFrame, better, worse, stopped: pd.DataFrame | None = None) -> tuple[float, int, int, int]:
    """Share of the rows of `wide` where column `better` is below column `worse`, over the rows that have
    both (a configuration with one side missing is no evidence either way) and are decisive; how many those
    are (the share is NaN below :data:`MIN_MATCHED`); how many ties (equal values) and how many undecided
    rows were left out. `stopped` (same shape, optional): whether a side holds an early stop, whose value
    (iterations cut short by the time limit) is only a lower bound; a row whose smaller side holds one is
    undecided (audit 28b D1: a book-scale l-inf stop after 1 iteration beat l2's 2 to convergence)."""
    rows = pd.DataFrame({"a": wide[better], "b": wide[worse]}).dropna()
    stop_a, stop_b = ((stopped[c].reindex(rows.index).fillna(0) > 0).to_numpy() if stopped is not None
                      else np.zeros(len(rows), bool) for c in (better, worse))
    a, b = rows["a"].to_numpy(float), rows["b"].to_numpy(float)
    tie = np.isclose(a, b)
    undecided = ~tie & (((a < b) & stop_a) | ((b < a) & stop_b))
    decisive = ~tie & ~undecided
    share, n = share_of_matched_pairs(a[decisive], b[decisive], MIN_MATCHED, better=np.less)
    return share, n, int(tie.sum()), int(undecided.sum())


#: The two settings a matched-configuration share compares, per setting varied (better first).
MATCHED_SETTINGS = {"norm": ("linf", "l2"), "rho": (0.01, 0.05)}

#: Per setting varied, the prefix of its counts in :func:`trend_checks` (``l2_pairs``, ...) and its share's name.
MATCHED_KEYS = {"norm": ("l2", "l2_slower"), "rho": ("rho", "small_rho_faster")}


def matched_instances(frame: pd.DataFrame, across: str) -> pd.DataFrame:
    """The instance rows of `frame` computed at both settings of `across` (:data:`MATCHED_SETTINGS`) for the
    same data set, model, other setting and factual: the instances a matched-configuration share compares, so
    that both means are over the same factuals (audit 20a J1: a partly filled store paired means over
    different ones)."""
    if frame.empty:
        return frame
    keys = [k for k in KEYS if k != across]
    rows = frame[frame[across].isin(MATCHED_SETTINGS[across])]
    return rows[rows.groupby(keys)[across].transform("nunique") == 2] if len(rows) else rows


def iterations_split(ratios, stopped) -> str:
    """How the iteration ratios of 02-iterations-complexity fall around 1, and how many of those below 1 compare
    a configuration with an early stop, whose iterations the time limit cut short (audit 26c D3: at the book
    scale one ratio decides the median)."""
    ratios, stopped = np.asarray(ratios, dtype=float), np.asarray(stopped, dtype=bool)
    below = ratios < 1
    text = (f"{int((ratios > 1).sum())} of the {len(ratios)} ratios above 1, {int((ratios == 1).sum())} equal, "
            f"{int(below.sum())} below")
    cut = int((below & stopped).sum())
    return text + (f" ({cut} of them with an early stop, whose iterations the time limit cuts short)" if cut else "")


def trend_checks(summary: pd.DataFrame, frame: pd.DataFrame | None = None) -> dict:
    """The paper's qualitative claims as numbers computed from a summary (:func:`summary_table`); NaN
    where the summary lacks the configurations a number compares.

    complexity_ratio: median over (dataset, norm, rho, family) of mean time of the largest model over
    the smallest; iterations_ratio: the same ratio of mean iterations (iterations_split: how those ratios fall
    around 1, :func:`iterations_split`); largest_models: the largest model
    of each family those ratios compared; features_ratio: median over (model,
    norm, rho) of mean time on ionosphere (34 features)
    over banknote (4); l2_slower / small_rho_faster: share of matched configurations (both computed:
    :func:`matched_share`, their number in l2_pairs / rho_pairs, the ties left out in l2_ties / rho_ties,
    the pairs left undecided by an early stop in l2_undecided / rho_undecided) where l2 needs more
    iterations than linf / rho=0.01 fewer than rho=0.05 (mean iterations over all instances; with the
    instance rows `frame`, over the factuals computed at both settings, :func:`matched_instances`);
    l2_slower_time / small_rho_faster_time (and _time_pairs): the same share by mean wall time, every matched
    pair counted. Iterations decide: no machine or load changes those of a converged instance, while the
    store's cells come from several machines, and 79 cells stored at both scales (the same factual,
    iterations and distance) took times a median 2.3x apart, up to 9.2x (audit 28)."""
    out = {**dict.fromkeys(TRENDS, math.nan), "largest_models": []}
    for prefix, share in MATCHED_KEYS.values():
        out.update({f"{prefix}_pairs": 0, f"{prefix}_ties": 0, f"{prefix}_undecided": 0, f"{share}_time": math.nan,
                    f"{share}_time_pairs": 0})
    if summary.empty:
        return out
    s = summary.copy()
    s["family"] = s["model"].str.extract(r"^([A-Z]+)")[0]
    s["size"] = s["model"].map(lambda m: PAPER_MODELS.index(m) if m in PAPER_MODELS else -1)
    s["t"] = s["time_all"]
    ratios, iterations, stopped, largest = [], [], [], set()
    for _, g in s[s["family"] != "LR"].groupby(["dataset", "norm", "rho", "family"]):
        if g["size"].nunique() > 1:
            g = g.sort_values("size")
            ratios.append(g["t"].iloc[-1] / g["t"].iloc[0])
            iterations.append(g["iterations_all"].iloc[-1] / g["iterations_all"].iloc[0])
            stopped.append("early_stops" in g and g["early_stops"].iloc[[0, -1]].sum() > 0)
            largest.add(g["model"].iloc[-1])
    if ratios:
        out["complexity_ratio"] = float(pd.Series(ratios).median())
        out["iterations_ratio"] = float(pd.Series(iterations).median())
        out["iterations_split"] = iterations_split(iterations, stopped)
        out["largest_models"] = sorted(largest)
    feat = []
    for _, g in s.groupby(["model", "norm", "rho"]):
        by = g.set_index("dataset")["t"]
        if {"ionosphere", "banknote"} <= set(by.index):
            feat.append(by["ionosphere"] / by["banknote"])
    if feat:
        out["features_ratio"] = float(pd.Series(feat).median())
    for across, (prefix, share) in MATCHED_KEYS.items():
        matched = s if frame is None else summary_table(matched_instances(frame, across))
        if len(matched) and set(MATCHED_SETTINGS[across]) <= set(matched[across]):
            index = [k for k in ("model", "dataset", "norm", "rho") if k != across]
            wide = {v: matched.pivot_table(index=index, columns=across, values=v)
                    for v in ("iterations_all", "time_all", "early_stops")}
            out[share], out[f"{prefix}_pairs"], out[f"{prefix}_ties"], out[f"{prefix}_undecided"] = matched_share(
                wide["iterations_all"], *MATCHED_SETTINGS[across], stopped=wide["early_stops"])
            better, worse = (wide["time_all"][setting] for setting in MATCHED_SETTINGS[across])
            out[f"{share}_time"], out[f"{share}_time_pairs"] = share_of_matched_pairs(better, worse, MIN_MATCHED)
    return out


# =========================================================================== the claims

#: The chapter's claims, declared in one place: id, check, wording and evidence rule (data/robust_regions_claims.csv).
CLAIMS = ClaimBook(CHAPTER, paper_table("robust_regions_claims"))


def _samples(n: int) -> str:
    return f"{n:,}".replace(",", " ")


#: A certified radius below this (an early stop's ρ̄) is a region in name only: the margins of the encodings are 1e-5.
TINY_RHO_BAR = 1e-4


def claim_regions_certified(frame: pd.DataFrame) -> Claim:
    """Every region the loop returns passes the independent certificate (at rho, or rho-bar after an
    early stop)."""
    returned = frame[frame["has_region"]] if not frame.empty else frame
    n = len(returned)
    certified = int(returned["certified"].sum()) if n else 0
    converged = int(returned["converged"].sum()) if n else 0
    points = f"{_samples(int(returned['samples'].max()))} samples" if n else "sampled points"
    why = f"AP re-solved exactly + {points} classified by model.predict, per region"
    if certified < n:
        why += f"; {n - certified} of the {n} regions failed it (the table of uncertified regions lists them)"
    stopped = returned[~returned["converged"].astype(bool)] if n else returned
    empty = int((pd.to_numeric(stopped["rho_bar"], errors="coerce") < TINY_RHO_BAR).sum()) if len(stopped) else 0
    if empty:   # a certificate at a radius of round-off checks little more than the centre (audit 49 ch2 F7)
        why += (f"; {empty} of the {len(stopped)} early stops certified a ρ̄ below {TINY_RHO_BAR:g}, little more than "
                "its centre")
    return CLAIMS.claim("02-regions-certified", ours=f"{certified}/{n} returned regions certified ({converged} at ρ, the early stops at ρ̄)",
                 holds=every(returned["certified"]) if n else None, why=why, evidence=n)


def paper_summary(summary: pd.DataFrame) -> pd.DataFrame:
    """The paper's Tables 1-2 as a :func:`summary_table` of the configurations `summary` holds (its converged
    means stand for the means over all instances, which the paper does not print): what :func:`trend_checks`
    reads on the paper's own numbers for the models, data sets, norms and radii of a run."""
    keys = ["norm", "rho", "model", "dataset"]
    paper = paper_tables().assign(time_all=lambda t: t["time"], iterations_all=lambda t: t["iterations"])
    return paper.merge(summary[keys], on=keys) if not summary.empty else summary


def smaller_models(largest: list[str]) -> str:
    """The deviation of a model-size comparison whose largest models (`largest`, one per family) are smaller
    than the paper's largest of their family; "" when none is."""
    paper = {family: max((m for m in PAPER_MODELS if m.startswith(family)), key=PAPER_MODELS.index)
             for family in ("DT", "RF", "GBM", "NN")}
    smaller = [m for m in largest if m in PAPER_MODELS
               and PAPER_MODELS.index(m) < PAPER_MODELS.index(paper[m.rstrip("0123456789-")])]
    return (f"smaller models than the paper's: the largest compared are {', '.join(smaller)}, the paper's "
            f"{', '.join(paper[m.rstrip('0123456789-')] for m in smaller)}") if smaller else ""


def _size_deviation(checks: dict, paper_holds: bool | None) -> str:
    """The smaller models as the deviation behind a failed model-size claim, only where the paper's own
    Tables 1-2 on the same configurations (`paper_holds`, None: not known) do not show the claim either:
    where they show it, the smaller models do not explain our numbers."""
    return "" if paper_holds else smaller_models(checks.get("largest_models", []))


def claim_complexity(checks: dict, paper: dict | None = None) -> Claim:
    """Time grows more with model size than with the number of features (:func:`trend_checks`); `paper`: the
    same checks on the paper's own numbers for the run's configurations (:func:`paper_summary`)."""
    size, features = checks["complexity_ratio"], checks["features_ratio"]
    theirs = None if paper is None or missing(paper["complexity_ratio"], paper["features_ratio"]) else \
        paper["complexity_ratio"] > paper["features_ratio"]
    return CLAIMS.claim("02-complexity", ours=f"median ratio {beside(size, '.1f', (size + features) / 2)} (model size) vs "
                                                   f"{beside(features, '.1f', (size + features) / 2)} (features)",
                 holds=None if missing(size, features) else size > features,
                 deviation=_size_deviation(checks, theirs),
                 why="; ".join(filter(None, (
                     "needs two sizes of a model family and both ionosphere and banknote in the run"
                     if missing(size, features) else "",
                     "" if theirs is None else f"the paper's own Tables 1-2 on these configurations: "
                                               f"{paper['complexity_ratio']:.1f} vs {paper['features_ratio']:.1f}"))))


def claim_iterations_complexity(checks: dict, paper: dict | None = None) -> Claim:
    """Iterations grow with model complexity: the median ratio of mean iterations, largest over smallest
    model of each family (:func:`trend_checks`), is above 1; `paper`: the same checks on the paper's own
    numbers for the run's configurations (:func:`paper_summary`)."""
    ratio = checks["iterations_ratio"]
    theirs = None if paper is None or missing(paper["iterations_ratio"]) else paper["iterations_ratio"] > 1
    return CLAIMS.claim("02-iterations-complexity", ours=f"median ratio {beside(ratio, '.2f', 1.0)} of mean iterations, largest/smallest model per family",
                 holds=None if missing(ratio) else ratio > 1, deviation=_size_deviation(checks, theirs),
                 why="needs two sizes of a family (e.g. DT3 and DT10) in the run; LR needs no iterations"
                     + (f"; {checks['iterations_split']}" if checks.get("iterations_split") else "")
                     + ("" if theirs is None else f"; the paper's own Tables 1-2 on these configurations: "
                                                  f"{paper['iterations_ratio']:.2f}"))


def claim_l2_slower(checks: dict) -> Claim:
    """Ball uncertainty takes longer than box uncertainty in most matched configurations."""
    return _matched_claim("02-l2-slower", checks, "norm", "l2 needs more iterations", "l2 slower", "at both norms")


def claim_small_rho_faster(checks: dict) -> Claim:
    """rho = 0.01 is faster than rho = 0.05 in most matched configurations."""
    return _matched_claim("02-small-rho-faster", checks, "rho", "ρ = 0.01 needs fewer iterations", "ρ = 0.01 faster",
                          "at both radii")


def _matched_claim(claim_id: str, checks: dict, across: str, what: str, by_time: str, matched: str) -> Claim:
    """A claim that holds where `what` is true in more than half of the matched configurations whose mean
    iterations differ (:func:`trend_checks`, the setting varied `across`: its pairs, ties and undecided
    pairs, :data:`MATCHED_KEYS`), significantly so (a one-sided sign test at :data:`SIGN_TEST_LEVEL`: 3 of 3
    is p = 0.125, audit 49 ch2 F5), and fails on a significant share the other way; the wall-time share
    beside it."""
    prefix, share_key = MATCHED_KEYS[across]
    share, pairs, ties = checks[share_key], checks[f"{prefix}_pairs"], checks.get(f"{prefix}_ties", 0)
    undecided = checks.get(f"{prefix}_undecided", 0)
    time_share, time_pairs = checks.get(f"{share_key}_time", math.nan), checks.get(f"{share_key}_time_pairs", 0)
    left_out = f"{ties} equal" + (f", {undecided} undecided by an early stop" if undecided else "")
    wins = 0 if missing(share) else round(share * pairs)
    p, p_other = sign_test(wins, pairs - wins), sign_test(pairs - wins, wins)
    holds = None if missing(share) else True if p <= SIGN_TEST_LEVEL else False if p_other <= SIGN_TEST_LEVEL else None
    return CLAIMS.claim(claim_id, ours=f"{what} in {_share_text(share, 0.5)} of {pairs} matched configurations with "
                                       f"unequal iterations ({left_out}, left out"
                                       + (f"; sign test p = {beside(p, '.2g', SIGN_TEST_LEVEL)})" if pairs else ")"),
                        holds=holds, evidence=pairs, minimum=MIN_MATCHED,
                        neither_way=holds is None and not missing(share) and pairs >= MIN_MATCHED,
                        why=f"by wall time, which the machine and its load move, {by_time} in "
                            f"{_share_text(time_share, 0.5)} of {time_pairs} matched configurations computed {matched}"
                            + (f"; {undecided} undecided: the side with fewer iterations holds an instance stopped at "
                               f"the time limit, whose iterations are only a lower bound" if undecided else ""))


def _percent(frame: pd.DataFrame, column: str) -> float:
    return float(100 * frame[column].mean()) if not frame.empty else math.nan


#: Fewest Table 3 counterfactuals a rate claim on them needs (fewer: *not run*): half the paper's 80
#: (8 rows of 10). At 40 one counterfactual moves a rate by 2.5 points, at 7 by 14.
MIN_TABLE3 = 40


def _share_text(share: float, bound: float) -> str:
    """A share in percent, printed on its side of the claim's `bound` (:func:`~explainopt.verdicts.beside`),
    or "n/a" when there is none."""
    return "n/a" if missing(share) else beside(share, ".0%", bound)


def distance_ratio_text(frame3: pd.DataFrame) -> str:
    """How far the baseline's counterfactuals lie from the factual against ours (l1 both): the median and
    range of their ratio over the rows where the baseline found a valid one and ours a robust one (a point our
    time limit stopped is not robust yet, and short of the robust one's distance), in words ("" where none)."""
    if frame3.empty or not {"ours_distance", "baseline_distance"} <= set(frame3):
        return ""
    both = frame3[(frame3["ours_distance"] > 0) & frame3["baseline_distance"].notna()
                  & frame3["baseline_valid"].astype(bool) & frame3["ours_robust"].astype(bool)]
    ratio = both["baseline_distance"] / both["ours_distance"]
    if ratio.empty:
        return ""
    return (f"the baseline's counterfactuals lie a median {ratio.median():.1f}× as far from the factual as ours "
            f"(l1, {ratio.min():.1f}× to {ratio.max():.1f}× over the {len(ratio)} rows where the baseline found a valid one "
            "and ours a robust one)")


def claim_baseline_not_robust(frame3: pd.DataFrame) -> Claim:
    """At least a fifth of the gradient baseline's counterfactuals are not certified robust (on at least
    :data:`MIN_TABLE3`). The reason adds how far its points lie against ours (:func:`distance_ratio_text`):
    a point farther from the factual can clear the uncertainty ball more often."""
    not_robust = 100 - _percent(frame3, "baseline_robust")
    why = "'often' read as at least 20% of its counterfactuals not certified robust"
    if not frame3.empty:   # an invalid point is no robust one: how many of the valid ones fall short (audit 49 ch2 F2)
        valid = frame3[frame3["baseline_valid"].astype(bool)]
        why += (f"; {int((~valid['baseline_robust'].astype(bool)).sum())} of its {len(valid)} valid counterfactuals "
                "are not certified robust")
    return CLAIMS.claim("02-baseline-not-robust", ours=f"{_share_text(not_robust / 100, 0.2)} not robust ({len(frame3)} counterfactuals)",
                        holds=None if missing(not_robust) else not_robust >= 20, evidence=len(frame3),
                        minimum=MIN_TABLE3, why="; ".join(filter(None, [why, distance_ratio_text(frame3)])))


def claim_baseline_invalid(frame3: pd.DataFrame) -> Claim:
    """Some of the gradient baseline's counterfactuals are invalid (on at least :data:`MIN_TABLE3`): one invalid
    counterfactual decides it below that number, since no further one can bring the share back to 0. *Partly*
    where none is invalid on the rows where the paper saw invalid ones (ionosphere NN10), only elsewhere
    (audit 49 ch2 F1: a pooled share read invalid points of another row as the paper's)."""
    invalid = 100 - _percent(frame3, "baseline_valid")
    holds = None if missing(invalid) else invalid > 0
    rows = _invalid_rows(frame3)
    on_papers = rows[rows["paper invalid"] > 0]
    partly = bool(holds and len(on_papers) and not on_papers["invalid"].any())
    named = ", ".join(f"{d} {m} at ρ {r:g}: {k} of {n}" for (d, m, r), (k, n, _) in rows[rows["invalid"] > 0].iterrows())
    papers = (f"on the rows where the paper saw invalid ones ({', '.join(f'{d} {m} at ρ {r:g}' for d, m, r in on_papers.index)}) "
              f"{int(on_papers['invalid'].sum())} of {int(on_papers['n'].sum())}") if len(on_papers) else ""
    return CLAIMS.claim("02-baseline-invalid", ours=f"{_share_text(invalid / 100, 0.0)} invalid ({len(frame3)} counterfactuals)"
                        + (f": {named}" if named else ""),
                        holds=holds, partly=partly, evidence=len(frame3), minimum=MIN_TABLE3,
                        pass_decides=holds is True and not partly, why=papers)


def _invalid_rows(frame3: pd.DataFrame) -> pd.DataFrame:
    """Per Table 3 row (dataset, model, rho) of `frame3`: the baseline's invalid counterfactuals, of how many, and
    the paper's share invalid there (NaN for a row the paper does not have)."""
    if frame3.empty:
        return pd.DataFrame(columns=["invalid", "n", "paper invalid"])
    rows = frame3.groupby(["dataset", "model", "rho"], sort=False)["baseline_valid"].agg(
        invalid=lambda v: int((~v.astype(bool)).sum()), n="size")
    paper = paper_table("robust_regions_table_3").set_index(["dataset", "model", "rho"])["baseline_valid"]
    return rows.assign(**{"paper invalid": 100 - paper.reindex(rows.index).to_numpy()})


def lowest_row_text(frame3: pd.DataFrame, column: str) -> str:
    """The Table 3 rows (dataset, model, rho) with the lowest share of `column`, every one tied at it, in
    words ("" where none): a pooled rate can hide one row far below it (audit 24a J2)."""
    if frame3.empty:
        return ""
    rows = frame3.groupby(["dataset", "model", "rho"], sort=False)[column].agg(["sum", "count"])
    share = rows["sum"] / rows["count"]
    low = rows[share == share.min()]
    named = " and ".join(f"{d} {m} at ρ {r:g}: {int(n)} of {int(total)} ({n / total:.0%})"
                         for (d, m, r), (n, total) in low.iterrows())
    return f"pooled over {len(rows)} rows; the {'' if len(low) == 1 else f'{len(low)} '}lowest, {named}"


def claim_ours_robust(frame3: pd.DataFrame) -> Claim:
    """At least 80% of our Table 3 regions are certified robust at rho (early stops count as not), on at
    least :data:`MIN_TABLE3`, pooled over the rows (the reason names the lowest row)."""
    robust = _percent(frame3, "ours_robust")
    return CLAIMS.claim("02-ours-robust", ours=f"{_share_text(robust / 100, 0.8)} robust (early stops count as not robust; "
                                               f"{len(frame3)} counterfactuals)",
                        holds=None if missing(robust) else robust >= 80, evidence=len(frame3), minimum=MIN_TABLE3,
                        why=lowest_row_text(frame3, "ours_robust"))


def claim_ours_valid(frame3: pd.DataFrame) -> Claim:
    """Every counterfactual of Algorithm 1 in Table 3's setting is valid (the model's own predict), over the
    instances where it returned one: an instance our time limit stopped inside the first master problem has
    none (``ours_distance`` missing), which is no invalid counterfactual. On at least :data:`MIN_TABLE3`, as
    the other Table 3 claims (audit 25a J1); one invalid counterfactual decides it below that number."""
    found = frame3[frame3["ours_distance"].notna()] if "ours_distance" in frame3 else frame3
    n = len(found)
    valid = int(found["ours_valid"].sum()) if n else 0
    none = len(frame3) - n
    holds = every(found["ours_valid"]) if n else None
    why = (f"{none} of the {len(frame3)} instances returned no counterfactual (our time limit stopped the first "
           "master problem) and are left out") if none else ""
    return CLAIMS.claim("02-ours-valid", ours=f"{valid}/{n} valid under model.predict", holds=holds,
                        evidence=n, minimum=MIN_TABLE3, failure_decides=holds is False, why=why)


def claim_single_leaf(comparison: pd.DataFrame) -> Claim:
    """Section 3.1 and Figure 5: the single-leaf heuristic is never closer than Algorithm 1 (its feasible set
    is a subset) and faster (median time); *partly* when no instance shows it farther in a certified region,
    i.e. this run does not exhibit the non-optimality the paper illustrates."""
    n = len(comparison)
    if not n:
        return CLAIMS.claim("02-single-leaf", ours="no decision tree in the run", holds=None,
                     evidence=0, why="needs a decision tree (DT3, DT10, ...) among the models")
    # a farther point counts only in a certified region: an uncertified one is no robust counterfactual
    certified = comparison["heuristic_certified"].astype(bool)
    farther, closer = int((comparison["farther"] & certified).sum()), int(comparison["closer"].sum())
    uncertified = f"; {n - int(certified.sum())} heuristic region(s) uncertified, not counted as farther" \
        if not certified.all() else ""
    t_exact, t_heur = comparison["exact_time"].median(), comparison["heuristic_time"].median()
    return CLAIMS.claim("02-single-leaf", evidence=n,
                 ours=f"farther in {farther}/{n}, closer in {closer}/{n}; median time {beside(t_heur, '.2g', (t_heur + t_exact) / 2)} "
                      f"s vs {beside(t_exact, '.2g', (t_heur + t_exact) / 2)} s (Algorithm 1)",
                 holds=False if closer else None if missing(t_heur, t_exact) else bool(t_heur < t_exact),
                 partly=farther == 0,
                 why=f"l1 distances compared within {DISTANCE_TOLERANCE:g}, Algorithm 1's converged instances only"
                     + ("; no instance of this run shows the heuristic farther" if farther == 0 else "")
                     + uncertified)


def claim_figure7(runs: list[dict]) -> Claim:
    """Figure 7: the distance to the factual never falls (up to the solvers' gap, :data:`MONOTONE_TOLERANCE`)
    over the iterations, while the certified radius falls at least once (peaks and troughs); *partly* when
    the distance is monotone but no radius falls in this run."""
    shown = [r for r in runs if len(r.get("history") or []) >= 2]
    if not shown:
        return CLAIMS.claim("02-figure7", ours="no run with two iterations", holds=None, evidence=0,
                     why="needs a model that takes at least two iterations")
    falls = [r["model"] for r in shown if _falls([h["distance"] for h in r["history"]])]
    radius = [r["model"] for r in shown
              if _falls([math.nan if h["radius"] is None else h["radius"] for h in r["history"]])]
    return CLAIMS.claim("02-figure7", ours=f"distance falls for {', '.join(falls) or 'no model'}; radius falls for "
                      f"{', '.join(radius) or 'no model'} ({len(shown)} models with ≥ 2 iterations)",
                 holds=not falls, partly=not radius, evidence=len(shown),
                 why="the distance of the MP's optimum cannot fall as Z grows (a theorem, up to the MIP gap)"
                     + ("; no certified radius falls in this run: the peaks and troughs are not shown"
                        if not radius else ""))


#: Instances from which the share of early stops alone decides 02-times, whatever the ratios lack.
MIN_EARLY_STOPS = 10
#: How far (in points of the share of instances) our early stops may lie above the paper's on the same
#: configurations: the paper's own Tables 1-2 stop 15% of their instances, so a fixed bound is not theirs.
EARLY_STOP_MARGIN = 0.1
#: The paper's time limit per instance (Section 5: "a time limit of 1000 seconds"): an early stop at a shorter
#: limit says nothing of the paper's times.
PAPER_TIME_LIMIT = 1000.0


def paper_early_stops(frame: pd.DataFrame) -> float:
    """The share of early stops the paper's Tables 1-2 report on the configurations of `frame`'s instances:
    each instance counts its configuration's early stops over the paper's 20 instances (0 where the paper has
    no such configuration, or `frame` names none)."""
    keys = ["norm", "rho", "model", "dataset"]
    if frame.empty or not set(keys) <= set(frame):
        return 0.0
    paper = paper_tables()[keys + ["early_stops"]]
    stops = frame[keys].merge(paper, on=keys, how="left")["early_stops"].fillna(0)
    return float(stops.mean() / SCALES["paper"]["instances"])


def claim_times(tables: list[pd.DataFrame], frame: pd.DataFrame, *, time_limit: float) -> Claim:
    """Our times within 3x of the paper's (median over the configurations with a converged mean and a
    paper time, from the `tables` of :func:`compare_with_paper`) and early stops at most
    :data:`EARLY_STOP_MARGIN` above the paper's on the same configurations (:func:`paper_early_stops`); more
    early stops on at least :data:`MIN_EARLY_STOPS` instances decide it alone. Below the paper's limit
    (:data:`PAPER_TIME_LIMIT`) more early stops leave it undecided: an instance our shorter limit stopped may
    take the paper's time."""
    ratios = pd.concat([t["ratio"] for t in tables]) if tables else pd.Series(dtype=float)
    median = float(ratios.median()) if ratios.notna().any() else math.nan
    early = float(frame["early_stop"].mean()) if not frame.empty else math.nan
    theirs = paper_early_stops(frame)
    bound = theirs + EARLY_STOP_MARGIN
    used = sorted({s for v in (frame["solver"] if not frame.empty else []) for s in str(v).split("+")}
                  - {"closed form", ""})
    short = not missing(early) and early > bound and time_limit < PAPER_TIME_LIMIT   # stopped by this scale's limit
    early_fails = not missing(early) and len(frame) >= MIN_EARLY_STOPS and early > bound and not short
    holds = (False if early_fails else None if missing(median, early) else False if median > 3 else None if short
             else bool(early <= bound))
    limit = (f"our {time_limit} s limit is below the paper's {PAPER_TIME_LIMIT:g} s, so its early stops say nothing "
             "of the paper's times")
    return CLAIMS.claim("02-times", ours=f"median time ratio ours/paper {beside(median, '.2f', 3.0)} over converged "
                      f"configurations; {beside(early, '.0%', bound)} of our instances stopped early{_stops_text(frame, time_limit)} "
                      f"(the paper's {theirs:.0%} on the same configurations)",
                 holds=holds, evidence=int(ratios.notna().sum()), failure_decides=early_fails,
                 undecided_by=limit if short and holds is None and not missing(median) else "",
                 why=f"our solvers ({', '.join(used) or 'none'}) against the paper's Gurobi, and our formulations, "
                     "exact stopping rule and machine; reproduced if within 3x and early stops at most 10 points above the "
                     "paper's on the same configurations "
                     "(the converged-only ratio alone would hide the slow ones)"
                     + (f"; {limit}" if short else ""))


def _default(func, name: str):
    """The default of `func`'s keyword `name` (read, not restated, so the text follows the code)."""
    return inspect.signature(func).parameters[name].default


def _stops_text(frame: pd.DataFrame, time_limit: float) -> str:
    """Why our early stops stopped, in words: at the time limit, at Algorithm 1's iteration cap (which the paper
    does not state: audit 49 ch2 F6) ("" without any)."""
    stops = frame.loc[frame["early_stop"].astype(bool), "status"].value_counts() if not frame.empty else pd.Series()
    parts = [f"{stops['time_limit']} at our {time_limit:g} s limit" if "time_limit" in stops else "",
             f"{stops['iteration_limit']} at our cap of {_default(region_instance, 'max_iterations')} iterations, which "
             "the paper does not state"
             if "iteration_limit" in stops else ""]
    others = int(stops.drop(["time_limit", "iteration_limit"], errors="ignore").sum())
    parts.append(f"{others} for another reason" if others else "")
    return f" ({'; '.join(filter(None, parts))})" if stops.sum() else ""


def claims(frame: pd.DataFrame, summary: pd.DataFrame, frame3: pd.DataFrame, tables: list[pd.DataFrame],
                 *, time_limit: float, single_leaf: pd.DataFrame | None = None,
                 convergence: list[dict] | None = None) -> list[Claim]:
    """The chapter's "paper vs. this book" claims, in order, from the run's frames and Tables 1-2, the
    heuristic comparison (:func:`single_leaf_comparison`) and Figure 7's runs (:func:`run_convergence`)."""
    checks, paper = trend_checks(summary, frame), trend_checks(paper_summary(summary))
    single_leaf = single_leaf_comparison(pd.DataFrame(), pd.DataFrame()) if single_leaf is None else single_leaf
    return [claim_regions_certified(frame), claim_complexity(checks, paper), claim_iterations_complexity(checks, paper),
            claim_l2_slower(checks), claim_small_rho_faster(checks), claim_single_leaf(single_leaf),
            claim_figure7(convergence or []), claim_baseline_not_robust(frame3), claim_baseline_invalid(frame3),
            claim_ours_robust(frame3), claim_ours_valid(frame3), claim_times(tables, frame, time_limit=time_limit)]


# =========================================================================== figures

def tree_run(*, depth: int, index: int, rho: float = 0.05, time_limit: float = 1000.0, solver=None,
             random_state: int = 0) -> dict:
    """One panel of Figures 2 and 6 (a cell of the ``figure2`` grid of :func:`grids`): Algorithm 1 (box of
    radius `rho`) on the decision tree of `depth` fitted to the first two banknote features
    (:func:`two_feature_tree`), for row `index`. A flat dict: depth, index, x0, rho, norm, target, status,
    iterations, early_stop, rho_bar, time, solver, fallback_from, history (iteration, x, distance)."""
    X2, _, tree = two_feature_tree(depth, random_state=random_state)
    region = robust_region(tree, X2[index], rho=rho, norm="linf", solver=solver, time_limit=time_limit)
    return {"depth": depth, "index": index, "x0": X2[index].tolist(), "rho": rho, "norm": region.norm,
            "target": region.target, "status": region.detail, "iterations": region.iterations,
            "early_stop": region.early_stop, "rho_bar": region.rho_bar, "time": region.time, "solver": region.solver,
            "fallback_from": region.fallback_from,
            "history": [{"iteration": h.iteration, "x": np.asarray(h.x).tolist(), "distance": h.distance}
                        for h in region.history]}


def tree_iterations_caption(runs: list[dict]) -> str:
    """The caption of Figures 2 and 6, with the iterations each tree needed in this run (:func:`tree_run` cells)."""
    panels = "; ".join(f"depth {r['depth']}: {r['iterations']} iterations ({r['status']})" for r in runs)
    deep, shallow = max(runs, key=lambda r: r["depth"]), min(runs, key=lambda r: r["depth"])
    more = deep["iterations"] - shallow["iterations"]
    compared = "more" if more > 0 else "as many" if more == 0 else "fewer"
    return (f"*Algorithm 1 on decision trees fitted to the first two banknote features (variance, skewness), box of "
            f"radius {deep['rho']} around each master solution, numbered by iteration; red: the other class "
            f"(cf. Figures 2 and 6 of the paper). In this run, {panels}: the depth-{deep['depth']} tree needed "
            f"{compared} iterations than the depth-{shallow['depth']} tree (the paper: the overfitted tree needs "
            "more).*")


#: Relative tolerance of "grows" and "falls" in Figure 7: the MIP solvers' default relative gap.
MONOTONE_TOLERANCE = 1e-4


def _falls(values) -> bool:
    """Whether a sequence decreases somewhere by more than the solvers' optimality gap."""
    return any(b < a - MONOTONE_TOLERANCE * max(abs(a), 1e-2) for a, b in zip(values, values[1:]))


def convergence_caption(runs: list[dict]) -> str:
    """The caption of Figure 7, saying from this run whether the distance and the radius are monotone."""
    if not runs:
        return "*Figure 7 of the paper: no run computed at this scale yet.*"
    def models(key, falls=True):
        return [r["model"] for r in runs if _falls([(1 if falls else -1) * h[key] for h in r["history"]])]

    distance_falls, radius_falls, radius_rises = models("distance"), models("radius"), models("radius", falls=False)
    distance = f"decreases for {', '.join(distance_falls)}" if distance_falls else "never decreases"
    radius = (f"falls at least once for {', '.join(radius_falls)}" if radius_falls
              else "never falls" if radius_rises else "does not change")
    rho = runs[0]["rho"] if runs else math.nan
    return (f"*Distance of each master solution to the factual (solid, $\\ell_1$) and its certified radius "
            f"(dashed; dotted line: $\\rho = {rho}$) per iteration, diabetes, first drawn factual, box uncertainty "
            f"(cf. Figure 7 of the paper). In this run the distance {distance} and the radius {radius}, up to the "
            "solvers' optimality gap (the paper: the distance grows monotonically, the robustness has peaks and "
            "troughs).*")


# =========================================================================== the region as rho moves (interactive)

#: The regions of the interactive figure: Algorithm 1 with the box, with the ball, and the single-leaf heuristic.
PATH_METHODS = {"box": ("linf", "exact"), "ball": ("l2", "exact"), "single leaf": ("linf", "single_leaf")}
#: Sampled points of each region's certificate in the interactive figure.
PATH_SAMPLES = 2000
#: Depth of the two-feature tree of the interactive figure and of Figure 5.
PATH_DEPTH = 5


def path_region(*, method: str, rho: float, index: int, depth: int = PATH_DEPTH, random_state: int = 0, solver=None,
                time_limit: float = 60.0, n_samples: int = PATH_SAMPLES) -> dict:
    """One region of the interactive figure and of Figure 5 (a cell of the ``region_path`` grid of
    :func:`grids`): on the two-feature tree (:func:`two_feature_tree`) and banknote row `index`, the robust
    region of radius `rho` by `method` (:data:`PATH_METHODS`: Algorithm 1 with the box or the ball, or the
    single-leaf heuristic of eqs. 36-39), certified with `n_samples` points. A flat dict: method, rho, x,
    distance, status, iterations, certified, solver."""
    norm, how = PATH_METHODS[method]
    X2, _, tree = two_feature_tree(depth, random_state=random_state)
    x0 = X2[index]
    if how == "exact":
        region = robust_region(tree, x0, rho=rho, norm=norm, lower=0.0, upper=1.0, solver=solver, time_limit=time_limit)
    else:
        region = single_leaf_region(tree, x0, rho=rho, norm=norm, lower=0.0, upper=1.0)
    cert = None if region.x is None else certify_region(
        tree, region.x, rho=rho if region.rho_bar is None else region.rho_bar, norm=norm, target=region.target,
        n_samples=n_samples, random_state=random_state + index, solver=solver)
    return {"method": method, "rho": float(rho), "x": None if region.x is None else np.asarray(region.x).tolist(),
            "distance": region.distance, "status": region.detail, "iterations": region.iterations,
            "certified": bool(cert and cert.certified), "solver": region.solver}


def region_path(cells: list, *, index: int, depth: int = PATH_DEPTH, random_state: int = 0,
                resolution: int = 121) -> dict | None:
    """The data of the interactive figure from :func:`path_region` cells (every method and radius; None when
    one is missing, e.g. not yet in the paper-scale store), with the tree's picture recomputed (cheap): x0,
    target, index, depth, grid (the axis values), adverse (grid cells of the other class, rows along feature
    2), leaves (the leaf boxes clipped to [0, 1], as (lo, hi) lists), runs ({method: [cell, ...]} by radius)
    and solver."""
    if not cells or any(c is None for c in cells):
        return None
    X2, _, tree = two_feature_tree(depth, random_state=random_state)
    x0 = X2[index]
    runs = {name: sorted((c for c in cells if c["method"] == name), key=lambda c: c["rho"]) for name in PATH_METHODS}
    target = int(1 - model_predict(tree, x0)[0])
    g = np.linspace(0.0, 1.0, resolution)
    xx, yy = np.meshgrid(g, g)
    adverse = (model_predict(tree, np.c_[xx.ravel(), yy.ravel()]) != target).reshape(xx.shape)
    boxes = tree_boxes(tree)
    leaves = [(np.clip(lo, 0, 1).tolist(), np.clip(hi, 0, 1).tolist()) for lo, hi in zip(boxes.lo[0], boxes.hi[0])]
    used = {s for c in cells for s in str(c["solver"]).split("+")} - {"closed form", ""}
    return {"x0": x0.tolist(), "target": target, "index": index, "depth": depth, "grid": g, "adverse": adverse,
            "leaves": leaves, "runs": runs, "solver": "+".join(sorted(used)) or "closed form"}


def leaf_outlines(leaves) -> tuple[list, list]:
    """The leaf boxes of a two-feature tree as one polyline (x and y lists, boxes separated by None)."""
    xs, ys = [], []
    for lo, hi in leaves:
        xs += [lo[0], hi[0], hi[0], lo[0], lo[0], None]
        ys += [lo[1], lo[1], hi[1], hi[1], lo[1], None]
    return xs, ys


def region_outline(x, rho: float, norm: str, *, points: int = 73) -> tuple[list, list]:
    """The boundary of ``{x + s : ||s|| <= rho}`` in two dimensions as a closed polyline (x and y lists):
    the box's five corners or a circle; empty lists when there is no region."""
    if x is None:
        return [], []
    cx, cy = float(x[0]), float(x[1])
    if norm == "linf":
        return ([cx - rho, cx + rho, cx + rho, cx - rho, cx - rho], [cy - rho, cy - rho, cy + rho, cy + rho, cy - rho])
    t = np.linspace(0, 2 * np.pi, points)
    return (cx + rho * np.cos(t)).tolist(), (cy + rho * np.sin(t)).tolist()


def region_path_note(path: dict) -> str:
    """What the interactive figure shows in this run (computed): how the distances move with rho, whether
    the ball's region is never farther than the box's, and at how many radii the heuristic is farther."""
    box, ball, leaf = (path["runs"][k] for k in ("box", "ball", "single leaf"))
    d_box = [r["distance"] for r in box]
    grows = all(b >= a - DISTANCE_TOLERANCE for a, b in zip(d_box, d_box[1:]))
    ball_closer = all(b["distance"] <= x["distance"] + DISTANCE_TOLERANCE for b, x in zip(ball, box))
    farther = sum(h["distance"] > x["distance"] + DISTANCE_TOLERANCE for h, x in zip(leaf, box))
    certified = sum(r["certified"] for rs in path["runs"].values() for r in rs)
    total = sum(len(rs) for rs in path["runs"].values())
    return (f"In this run (depth-{path['depth']} tree, banknote row {path['index']}, {len(box)} radii): the box's "
            f"distance {'never falls' if grows else 'falls somewhere'} as ρ grows; the ball's region is "
            f"{'never farther than' if ball_closer else 'sometimes farther than'} the box's; the single-leaf "
            f"heuristic is farther than Algorithm 1 at {farther} of {len(box)} radii; {certified} of {total} "
            "regions certified.")


def figure7_note(runs: list[dict], *, zero: float = 1e-4) -> str:
    """Why the radius in Figure 7 rarely falls here, from the run: how many intermediate master solutions
    (all but each run's last) have a certified radius of at most `zero` (the margins of the encodings and
    of the master problem are 1e-5 to 1e-4: such a point touches the other class)."""
    middle = [h["radius"] for r in runs for h in (r.get("history") or [])[:-1] if h.get("radius") is not None]
    if not middle:
        return "No run of Figure 7 has an intermediate master solution at this scale."
    at_zero = sum(v <= zero for v in middle)
    return (f"Of the {len(middle)} intermediate master solutions of Figure 7 (all but each run's last), {at_zero} "
            f"have a certified radius of at most {zero:g}, the size of the encodings' margins: they touch the "
            "other class. The master problem's optimum is the closest point whose scenario "
            "copies are all of the target class, so one of those copies sits on the decision boundary; when the "
            "binding copy is the scenario $s = 0$, the point itself touches the other class and its radius is "
            "zero up to those margins. A radius can only fall from a positive value, so the more master solutions "
            "sit at zero, the fewer troughs the figure can show.")
