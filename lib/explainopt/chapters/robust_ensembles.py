"""Chapter 5: Forel, Parmentier & Vidal, robust counterfactuals for randomized ensembles (Section 5).

The protocol of the paper's experiments and of the authors' code, around the algorithms of
:mod:`explainopt.counterfactuals.ensembles`:

* **Data and forests.** :func:`make_simulation` splits ``n_factuals`` factuals off a dataset
  (``train_test_split(test_size=n_factuals, random_state=sim)``), trains T0 (:func:`~explainopt.training.train_forest`:
  100 trees, depth 4, ``max_features="sqrt"``, ``random_state=sim``) on the other rows, and T1 on the
  same rows with ``random_state=40 + sim`` (the authors' ``nbSim + sim`` with their 40 simulations).
* **Cells.** :func:`simulate` runs one simulation (every method of :func:`method_grid` for every
  factual) and returns one row per counterfactual; :func:`simulation_configs` / :func:`grid_configs`
  list the cells of a scale (:data:`SCALES`) and :func:`run_simulations` runs them, cached.
* **Tables and figures** against the paper (Table 1 and 3 are transcribed in
  ``data/robust_ensembles_naive_validity.csv``), and the **claims** (:func:`claims`), each decided from
  the run and *not run* when its data are missing.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

import numpy as np
import pandas as pd
from scipy import stats
from sklearn.inspection import permutation_importance
from sklearn.model_selection import train_test_split

from .. import experiments, solvers
from ..counterfactuals.ensembles import (
    SAA_METHODS,
    EnsembleCounterfactual,
    ValidityEstimate,
    binomial_interval,
    ensemble_counterfactual,
    ensemble_counterfactuals,
    feature_weights,
    fit_isolation_forest,
    isolation_forest_counterfactuals,
    lof_candidates,
    robust_saa_threshold,
    robustness_threshold,
    score_threshold,
)
from ..datasets import ENSEMBLE_DATASETS, load_dataset
from ..experiments import run_grid
from ..reporting import Claim, every, missing
from ..training import train_forest
from ..verdicts import SIGN_TEST_LEVEL, ClaimBook, beside, count_decides, sign_test
from . import paper_table

#: The paper's grid of tolerances alpha (Section 5): robustness targets 1 - alpha from 0.5 to 0.99.
#: Result fields stored under another name: the method's own status (a result's ``detail``) is the rows' ``status``.
STORED = {"detail": "status"}
ALPHAS = (0.5, 0.4, 0.3, 0.2, 0.15, 0.1, 0.05, 0.01)
#: Isolation-forest contamination levels and 1-LOF penalty weights of the benchmarks (Section 5).
CONTAMINATIONS = (0.05, 0.1, 0.2, 0.3, 0.4, 0.5)
LOF_WEIGHTS = (1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0)
#: The methods of a simulation: the SAA family and the two plausibility benchmarks (naive threshold).
METHODS = SAA_METHODS + ("isolation-forest", "lof")
#: The paper's simulations per forest size and factuals per simulation (Section 5, Appendix C.4).
PAPER_SIMULATIONS, PAPER_FACTUALS = {100: 40, 400: 20}, 5
#: Datasets from the cheapest MILPs to the dearest (fewest columns after one-hot encoding first, Spambase's
#: 57 continuous features last): the order in which a budgeted run fills one round of simulations.
COST_ORDER = ("COMPAS", "Credit-Card-Default", "German-Credit", "Phishing", "Adult", "Students-Performance",
              "Spambase")
#: Appendix C.6 compares importance and changes on two datasets with robust naive counterfactuals and
#: two without (Figures 11 and 12).
IMPORTANCE_DATASETS = ("COMPAS", "Phishing", "Credit-Card-Default", "Spambase")

#: Appendix C.5 runs Robust-SAA with evolving data on the two smallest datasets and Spambase (Figure 10).
EVOLVING_ROBUST = ("German-Credit", "Students-Performance", "Spambase")
#: Share of the rows that the retrained forest sees in addition to T0's in the evolving-data experiment
#: (Appendix C.5: T0 on 80% of the data, T1 on all of it).
NEW_SHARE = 0.2

#: Settings per scale. slow: per-dataset overrides (Spambase's 57 continuous features make its MILPs
#: the slowest); robust_on / benchmarks_on: the datasets that run Robust-SAA / the plausibility
#: benchmarks; cache: whether the solver comparison's cells are cached (not at smoke scale, which CI runs
#: from scratch); split_benchmarks: the benchmarks in cells of their own (:func:`simulation_configs`);
#: evolving_on / evolving_robust_on / evolving_robust_alphas (None: robust_alphas): the evolving-data
#: experiment of Appendix C.5.
SCALES = {
    "smoke": dict(datasets=["COMPAS", "German-Credit"], sims=1, sizes=[100], alphas=[0.5, 0.2, 0.05],
                  robust_on=[], robust_alphas=None, benchmarks_on=["COMPAS"], contaminations=[],
                  lof_weights=[1.0], factuals=2, time_limit=10, slow={}, cache=False,
                  evolving_on=["COMPAS"], evolving_robust_on=["COMPAS"], evolving_robust_alphas=[0.05]),
    "book": dict(datasets=list(ENSEMBLE_DATASETS), sims=1, sizes=[100], alphas=[0.5, 0.3, 0.1, 0.01],
                 robust_on=["Spambase"], robust_alphas=[0.1], benchmarks_on=["COMPAS"],
                 contaminations=[0.3], lof_weights=[0.01, 1.0, 100.0], factuals=PAPER_FACTUALS, time_limit=20,
                 slow={"Spambase": dict(factuals=2, alphas=[0.5, 0.1], time_limit=45)}, cache=True,
                 evolving_on=list(ENSEMBLE_DATASETS), evolving_robust_on=list(EVOLVING_ROBUST), evolving_robust_alphas=None),
    "paper": dict(datasets=list(ENSEMBLE_DATASETS), sims=PAPER_SIMULATIONS, sizes=[100, 400], alphas=list(ALPHAS),
                  robust_on=["Spambase"], robust_alphas=None, benchmarks_on=list(ENSEMBLE_DATASETS),
                  contaminations=list(CONTAMINATIONS), lof_weights=list(LOF_WEIGHTS), factuals=PAPER_FACTUALS,
                  time_limit=300, slow={}, cache=True, split_benchmarks=True,
                  evolving_on=list(ENSEMBLE_DATASETS), evolving_robust_on=list(EVOLVING_ROBUST),
                  evolving_robust_alphas=None),
}


# --------------------------------------------------------------------------- data and forests (Section 5)

@dataclass
class Simulation:
    """One simulation of Section 5: training rows, the factuals, the two forests and the feature spec."""

    X_train: np.ndarray
    y_train: np.ndarray
    X_factual: np.ndarray
    forest: object
    retrained: object
    spec: list
    feature_names: list


def make_simulation(dataset, *, sim: int, n_factuals: int = 5, n_estimators: int = 100, max_depth: int = 4,
                    retrain_offset: int = 40, new_share: float = 0.0) -> Simulation:
    """Split off ``n_factuals`` rows (``train_test_split(test_size=n_factuals, random_state=sim)``),
    train T0 with ``random_state=sim`` and T1 on the same rows with ``random_state=retrain_offset+sim``
    (the authors' ``nbSim + sim`` with their 40 simulations).

    ``new_share > 0``: the evolving data set of Appendix C.5. The rows left after the factuals are split
    again (``train_test_split(test_size=new_share, random_state=sim)``, the authors' ``testSplitFactor``);
    T0 learns from the first part only (``X_train`` of the result), T1 from all of them: the data
    observed before retraining are the old rows plus the new ``new_share`` of them."""
    X, y = dataset.X.to_numpy(float), dataset.y.to_numpy(int)
    X_all, X_factual, y_all, _ = train_test_split(X, y, test_size=n_factuals, random_state=sim)
    X_train, y_train = X_all, y_all
    if new_share > 0:
        X_train, _, y_train, _ = train_test_split(X_all, y_all, test_size=new_share, random_state=sim)
    forest = train_forest(X_train, y_train, n_estimators=n_estimators, max_depth=max_depth, random_state=sim)
    retrained = train_forest(X_all, y_all, n_estimators=n_estimators, max_depth=max_depth,
                             random_state=retrain_offset + sim)
    return Simulation(X_train, y_train, X_factual, forest, retrained, list(dataset.spec), dataset.feature_names)


# --------------------------------------------------------------------------- one simulation (the cell)

def method_grid(*, alphas=ALPHAS, betas=(), contaminations=(), lof_weights=(), n_estimators: int = 100,
                robust_alphas=None, naive: bool = True):
    """(method, parameters, tau) triples of one simulation: naive (unless `naive` is False), Direct-SAA
    per alpha, Robust-SAA per (alpha, beta), isolation forest per contamination, 1-LOF per weight (the
    benchmarks use the naive threshold)."""
    with_naive = naive
    naive = score_threshold("naive", n_estimators=n_estimators)
    grid = [("naive", {}, naive)] if with_naive else []
    grid += [("direct-saa", {"alpha": a}, score_threshold("direct-saa", n_estimators=n_estimators, alpha=a))
             for a in alphas]
    grid += [("robust-saa", {"alpha": a, "beta": b},
              score_threshold("robust-saa", n_estimators=n_estimators, alpha=a, beta=b))
             for b in betas for a in (alphas if robust_alphas is None else robust_alphas)]
    grid += [("isolation-forest", {"contamination": c}, naive) for c in contaminations]
    grid += [("lof", {"lof_weight": w}, naive) for w in lof_weights]
    return grid


def simulate(*, dataset: str, sim: int, n_estimators: int = 100, max_depth: int = 4, n_factuals: int = 5,
             alphas=ALPHAS, betas=(), robust_alphas=None, contaminations=(), lof_weights=(), solver: str | None = None,
             time_limit: float | None = 60.0, keep_points: bool = True, retrain_offset: int = 40, naive: bool = True,
             new_share: float = 0.0) -> list[dict]:
    """Run one simulation of Section 5 and return one row per (factual, method, parameter).

    ``naive=False`` leaves out the naive counterfactuals (a cell of the benchmarks alone, whose simulation's
    naive ones another cell computes); ``new_share``: the evolving data of Appendix C.5
    (:func:`make_simulation`).

    Rows: dataset, sim, n_estimators, factual, method, alpha, beta, contamination, lof_weight, the fields
    of :class:`~explainopt.counterfactuals.ensembles.EnsembleCounterfactual` but x (status, time, solver,
    fallback_from, distance, valid for T0, solve_time, ..., tau, target, score, meets_threshold, relaxed,
    relaxation, n_changed, inlier, repaired), valid_retrained (T1), and (``keep_points``) x0 and x.
    The isolation forests are drawn with ``random_state=sim``, as the authors' code does; their contamination
    levels, which move only ``offset_``, are solved as one chain (:func:`~explainopt.counterfactuals.ensembles.
    isolation_forest_counterfactuals`: a lower level's optimum is reused where it is an inlier at the next).
    """
    data = load_dataset(f"ensembles/{dataset}").scaled()
    simulation = make_simulation(data, sim=sim, n_factuals=n_factuals, n_estimators=n_estimators,
                                 max_depth=max_depth, retrain_offset=retrain_offset, new_share=new_share)
    weights = feature_weights(simulation.spec)
    grid = method_grid(alphas=alphas, betas=betas, contaminations=contaminations, lof_weights=lof_weights,
                       n_estimators=n_estimators, robust_alphas=robust_alphas, naive=naive)
    rows = []
    for i, x0 in enumerate(simulation.X_factual):
        target = 1 - int(simulation.forest.predict(x0.reshape(1, -1))[0])
        X_target = simulation.X_train[simulation.y_train == target]
        predicted_target = simulation.X_train[simulation.forest.predict(simulation.X_train) == target]
        # naive, Direct- and Robust-SAA differ only in the score threshold: one problem serves them all
        saa = [k for k, (method, _, _) in enumerate(grid) if method in SAA_METHODS]
        chained = dict(zip(saa, ensemble_counterfactuals(
            simulation.forest, x0, spec=simulation.spec, taus=[grid[k][2] for k in saa], target=target,
            weights=weights, solver=solver, time_limit=time_limit))) if saa else {}
        # the contamination levels move only the isolation forest's offset_: one problem, its inlier thresholds
        levels = [k for k, (method, _, _) in enumerate(grid) if method == "isolation-forest"]
        if levels:
            forests = [fit_isolation_forest(X_target, contamination=grid[k][1]["contamination"], random_state=sim)
                       for k in levels]
            chained.update(zip(levels, isolation_forest_counterfactuals(
                simulation.forest, x0, spec=simulation.spec, isolation_forests=forests, tau=grid[levels[0]][2],
                target=target, weights=weights, solver=solver, time_limit=time_limit)))
        for k, (method, params, tau) in enumerate(grid):
            extra = {}
            if method == "lof":
                extra["lof"] = lof_candidates(predicted_target, x0, weights=weights)
                extra["lof_weight"] = params["lof_weight"]
            ce = chained.get(k) or ensemble_counterfactual(simulation.forest, x0, spec=simulation.spec, tau=tau,
                                                           target=target, weights=weights, solver=solver,
                                                           time_limit=time_limit, **extra)
            row = {"dataset": dataset, "sim": sim, "n_estimators": n_estimators, "factual": i, "method": method,
                   "alpha": params.get("alpha"), "beta": params.get("beta"),
                   "contamination": params.get("contamination"), "lof_weight": params.get("lof_weight"),
                   **{STORED.get(k, k): v for k, v in asdict(ce).items() if k != "x"}}
            row["valid_retrained"] = (ce.x is not None
                                      and int(simulation.retrained.predict(ce.x.reshape(1, -1))[0]) == target)
            if keep_points:
                row["x0"], row["x"] = x0, ce.x
            rows.append(row)
    return rows


# --------------------------------------------------------------------------- the chapter's grid

def simulation_configs(*, datasets, sims, first_sim: int = 0, n_estimators=(100,), alphas=ALPHAS, betas=(), robust_on=(),
                       robust_alphas=None, contaminations=(), lof_weights=(), benchmarks_on=(), n_factuals: int = 5,
                       max_depth: int = 4, solver: str | None = None, time_limit: float | None = 60.0,
                       split_benchmarks: bool = False, new_share: float = 0.0) -> list[dict]:
    """Keyword arguments of :func:`simulate` for every (dataset, simulation, forest size).

    Robust-SAA (``betas``) runs on the datasets in ``robust_on``, the plausibility benchmarks on those in
    ``benchmarks_on`` (both only for the first forest size); Robust-SAA uses ``robust_alphas`` (default:
    ``alphas``); everything is JSON-serializable for the cache of ``experiments.run_grid``. ``sims`` is a
    number of simulations (indices ``first_sim`` on), an iterable of indices, or a mapping from forest
    size to either (the paper runs 40 simulations with N = 100 and 20 with N = 400).
    ``split_benchmarks``: the benchmarks of a simulation get a cell of their own (``naive=False``, no
    SAA), after its naive and SAA cell, so that a budgeted run can compute the SAA cells first.
    ``new_share > 0``: the evolving data of Appendix C.5 (the key is left out otherwise).
    """
    def indices(size):
        chosen = sims[size] if isinstance(sims, dict) else sims
        return range(first_sim, first_sim + chosen) if isinstance(chosen, int) else chosen

    configs = []
    for size_index, size in enumerate(n_estimators):
        for name in datasets:
            for sim in indices(size):
                first = size_index == 0
                config = dict(
                    dataset=name, sim=int(sim), n_estimators=int(size), max_depth=max_depth, n_factuals=n_factuals,
                    alphas=[float(a) for a in alphas],
                    robust_alphas=[float(a) for a in (alphas if robust_alphas is None else robust_alphas)],
                    betas=[float(b) for b in betas] if first and name in robust_on else [],
                    contaminations=[float(c) for c in contaminations] if first and name in benchmarks_on else [],
                    lof_weights=[float(w) for w in lof_weights] if first and name in benchmarks_on else [],
                    solver=solver, time_limit=time_limit)
                if new_share > 0:
                    config["new_share"] = float(new_share)
                if split_benchmarks and (config["contaminations"] or config["lof_weights"]):
                    configs.append({**config, "contaminations": [], "lof_weights": []})
                    config = {**config, "alphas": [], "robust_alphas": [], "betas": [], "naive": False}
                configs.append(config)
    return configs


def grid_configs(settings: dict, *, betas, first_sim: int = 0, solver: str | None = None,
                 evolving: bool = False) -> list[dict]:
    """The cells of a scale's `settings` (:data:`SCALES` with the reader's overrides): the datasets of
    ``settings["slow"]`` with their own overrides, the slowest (Spambase) first for load balance.

    ``evolving``: the evolving-data experiment of Appendix C.5 instead: the datasets of
    ``settings["evolving_on"]`` (among the run's datasets), the first forest size only, Robust-SAA on
    ``settings["evolving_robust_on"]`` at ``settings["evolving_robust_alphas"]``, no plausibility
    benchmarks, T1 retrained with :data:`NEW_SHARE` more rows."""
    base = settings
    if evolving:
        settings = {**settings, "datasets": [d for d in settings["datasets"] if d in settings["evolving_on"]],
                    "sizes": settings["sizes"][:1], "robust_on": settings["evolving_robust_on"], "benchmarks_on": [],
                    "robust_alphas": settings.get("evolving_robust_alphas") or settings["robust_alphas"]}

    def configs_for(names, **override):
        o = {**settings, **override}
        return simulation_configs(
            datasets=names, sims=o["sims"], first_sim=first_sim, n_estimators=o["sizes"], alphas=o["alphas"],
            betas=betas, robust_on=o["robust_on"], robust_alphas=o["robust_alphas"],
            contaminations=o["contaminations"], lof_weights=o["lof_weights"], benchmarks_on=o["benchmarks_on"],
            n_factuals=o["factuals"], solver=solver, time_limit=o["time_limit"],
            split_benchmarks=base.get("split_benchmarks", False), new_share=NEW_SHARE if evolving else 0.0)

    slow = settings["slow"]
    configs = configs_for([d for d in settings["datasets"] if d not in slow])
    for name, override in slow.items():
        if name in settings["datasets"]:
            configs += configs_for([name], **override)
    configs.sort(key=lambda c: c["dataset"] != "Spambase")
    return configs


def comparison_configs(configs, *, solver: str, first_sim: int = 0) -> list[dict]:
    """The naive and Direct-SAA problems of the first simulation of `configs` (first forest size), for
    another `solver` (Appendix C.2's solve times on a second solver)."""
    first_size = configs[0]["n_estimators"] if configs else None
    return [{**c, "solver": solver, "betas": [], "contaminations": [], "lof_weights": []}
            for c in configs if c["n_estimators"] == first_size and c["sim"] == first_sim]


def comparison_solver(frame, *, candidate: str = "gurobi") -> str | None:
    """`candidate` when it is licensed here and did not solve the chapter's own cells, else None."""
    if not solvers.solver_available(candidate) or candidate in set(frame.get("solver", [])):
        return None
    return candidate


#: The columns of :func:`simulate`'s rows (an empty frame keeps them, e.g. a paper-scale store not filled yet).
SIMULATION_COLUMNS = (["dataset", "sim", "n_estimators", "factual", "method", "alpha", "beta", "contamination",
                       "lof_weight"] + [STORED.get(f.name, f.name) for f in fields(EnsembleCounterfactual)
                                      if f.name != "x"]
                      + ["valid_retrained", "x0", "x"])


def simulation_frame(results, machines=None) -> pd.DataFrame:
    """The rows of computed simulations (lists of :func:`simulate` rows; None for a cell not computed) as
    one DataFrame with :data:`SIMULATION_COLUMNS`; `machines` (one per cell, e.g.
    :meth:`~explainopt.book.ChapterRun.machines`): each row's in a ``machine`` column."""
    rows = [{**row, **({} if machines is None else {"machine": machine})}
            for rows, machine in zip(results, machines or [None] * len(results)) if rows is not None for row in rows]
    return pd.DataFrame(rows) if rows else pd.DataFrame(columns=SIMULATION_COLUMNS)


def run_simulations(configs, *, cache=None, n_jobs: int = 1, progress: bool = False):
    """All simulations of `configs` (parallel, cached by ``experiments.run_grid``) as one DataFrame."""
    results = run_grid(simulate, configs, cache=cache, n_jobs=n_jobs, progress=progress,
                       description="chapter 5 simulations")
    return simulation_frame(results)


def simulation_order(configs) -> list[int]:
    """The order in which a budgeted run computes the simulation cells `configs`: forest size by forest
    size as listed (the paper's 40 simulations with N = 100 for every dataset before the 20 with
    N = 400, which no smaller scale runs), simulation by simulation (every dataset's estimate grows
    together, so each per-dataset claim is decided as early as the budget allows), and within one
    simulation the cheapest datasets first (:data:`COST_ORDER`; the slowest, Spambase, closes the round).
    Cells of the plausibility benchmarks alone (``naive=False``, the paper scale's split) come last: the
    book scale already runs them on one dataset, and each holds a second ensemble per MILP. A budgeted run
    takes this order round-robin over the configurations (:func:`explainopt.book.fill_order`): the first
    simulation of every dataset and forest size, benchmarks and evolving data included, before any second."""
    sizes = list(dict.fromkeys(c["n_estimators"] for c in configs))
    cost = {name: i for i, name in enumerate(COST_ORDER)}
    return sorted(range(len(configs)), key=lambda i: (configs[i].get("naive", True) is False,
                                                      sizes.index(configs[i]["n_estimators"]), configs[i]["sim"],
                                                      cost.get(configs[i]["dataset"], len(cost)), i))


#: The claims each grid decides (what a budgeted run prints in its plan).
GRID_CLAIMS = {"simulations": ["naive validity (below 50%, Spambase below 20%)", "Direct-SAA meets the target",
                               "Robust-SAA makes Spambase robust", "SAA dominates the plausibility benchmarks",
                               "solve times (Fig. 6)", "N = 400: naive validity still low (Table 3)"],
               "evolving": ["evolving data: Direct-SAA's misses, Robust-SAA's robustness (App. C.5)"]}


def grids(S: dict, *, betas=(0.05, 0.1), seed: int = 0, solver: str | None = "auto") -> dict[str, experiments.Grid]:
    """The chapter's grids at settings `S` (a row of :data:`SCALES` with the reader's overrides), in the
    order a budgeted run fills them: ``simulations``, one cell per (dataset, simulation, forest size)
    (:func:`grid_configs`, :func:`simulation_order`; at the paper scale the benchmarks of a simulation in a
    cell of their own), then ``evolving``, the evolving-data experiment of Appendix C.5. `betas`, `seed` (the first simulation) and `solver`
    are the notebook's parameters of the same names, with the notebook's defaults."""
    configs = grid_configs(S, betas=list(betas), first_sim=seed, solver=solver)
    evolving = grid_configs(S, betas=list(betas), first_sim=seed, solver=solver, evolving=True)
    return {"simulations": experiments.Grid(simulate, configs, order=simulation_order(configs)),
            "evolving": experiments.Grid(simulate, evolving, order=simulation_order(evolving))}


def describe_grid(settings: dict, *, betas) -> str:
    """One paragraph (Markdown) saying what the scale's grid runs."""
    sims = settings["sims"]
    sims_text = (", ".join(f"{n} simulations with N = {size}" for size, n in sims.items()) if isinstance(sims, dict)
                 else f"{sims} simulation{'s' if sims != 1 else ''} per dataset with N = {settings['sizes'][0]} trees")
    text = (f"This run: {sims_text}, {settings['factuals']} factuals per simulation, tolerances alpha in "
            f"{settings['alphas']} and {settings['time_limit']} s per MILP")
    for name, override in settings["slow"].items():
        if name in settings["datasets"]:
            text += f"; {name} with " + ", ".join(
                f"{k.replace('_', ' ')} {v}{' s' if k == 'time_limit' else ''}" for k, v in override.items())
    robust = [d for d in settings["robust_on"] if d in settings["datasets"]]
    if robust and betas:
        alphas = settings["robust_alphas"] or settings["alphas"]
        text += f"; Robust-SAA (beta in {list(betas)}) on {', '.join(robust)} at alpha in {list(alphas)}"
    bench = [d for d in settings["benchmarks_on"] if d in settings["datasets"]]
    methods = []
    if settings["contaminations"]:
        methods.append(f"isolation forests with contamination in {settings['contaminations']}")
    if settings["lof_weights"]:
        methods.append(f"1-LOF with weights {settings['lof_weights']}")
    if bench and methods:
        text += f"; the plausibility benchmarks ({' and '.join(methods)}) on {', '.join(bench)}"
    evolving = [d for d in settings.get("evolving_on", []) if d in settings["datasets"]]
    if evolving:
        robust = [d for d in settings["evolving_robust_on"] if d in evolving]
        text += (f"; the evolving-data experiment (App. C.5, {100 * (1 - NEW_SHARE):.0f}% of the rows for T0) on "
                 f"{', '.join(evolving)}" + (f", with Robust-SAA on {', '.join(robust)}" if robust and betas else ""))
    return text + "."


# --------------------------------------------------------------------------- tables

def naive_validity_paper(n_estimators: int = 100) -> pd.Series:
    """Table 1 (N = 100) or Table 3 (N = 400) of the paper: naive validity [%] per dataset."""
    table = paper_table("robust_ensembles_naive_validity")
    return table[table.n_estimators == n_estimators].set_index("dataset")["validity"]


#: The statuses of a solve that returned a point: a solve our time limit stopped without one (``no_solution``)
#: has no counterfactual, which the paper (solving to optimality) never lacks.
FOUND = ("optimal", "time_limit")


def clustered_interval(valid, clusters=None, *, level: float = 0.95) -> tuple[ValidityEstimate, float]:
    """Validity rate of counterfactuals that come in clusters, with Korn & Graubard's (1998) exact interval on
    their effective number, and that number. The factuals of one simulation share its two forests, so they
    tend to be valid or invalid together: n such counterfactuals carry less than n independent ones. The
    design effect (Kish) is the cluster-robust variance of the rate, ``m/(m-1) sum_i (y_i - p n_i)^2 / n^2``
    over m clusters, against the binomial ``p (1 - p) / n``, never below 1 (1 at a rate of 0 or 1, where the
    data show no variance); :func:`effective_number` turns it into the number of counterfactuals the interval
    counts, and the interval is Clopper-Pearson's on that many counterfactuals of the same rate, as R's
    ``survey::svyciprop(method = "beta")``. No clusters (independent counterfactuals): the binomial interval
    (:func:`~explainopt.counterfactuals.ensembles.binomial_interval`). A NaN validity or a missing cluster is
    an error."""
    valid = np.asarray(valid, dtype=float)
    if np.isnan(valid).any():
        raise ValueError("validity values must be 0 or 1, not NaN")
    n = len(valid)
    k = int(valid.sum())
    if n == 0 or clusters is None:
        return binomial_interval(k, n, level=level), float(n)
    clusters = pd.Series(clusters).reset_index(drop=True)
    if clusters.isna().any():
        raise ValueError("every counterfactual needs its cluster (simulation); got a missing one")
    p = k / n
    per = pd.DataFrame({"y": valid, "cluster": clusters}).groupby("cluster")["y"].agg(["sum", "size"])
    m, deff = len(per), 1.0
    if m > 1 and 0 < p < 1:
        robust = m / (m - 1) * ((per["sum"] - p * per["size"]) ** 2).sum() / n ** 2
        deff = max(1.0, robust / (p * (1 - p) / n))
    n_eff = effective_number(n, m, int(per["size"].max()), deff, level=level)
    x, tail = p * n_eff, (1 - level) / 2
    low = float(stats.beta.ppf(tail, x, n_eff - x + 1)) if k > 0 else 0.0
    high = float(stats.beta.ppf(1 - tail, x + 1, n_eff - x)) if k < n else 1.0
    return ValidityEstimate(k, n, p, low, high), n_eff


def effective_number(n: int, clusters: int, largest: int, deff: float = 1.0, *, level: float = 0.95) -> float:
    """How many independent counterfactuals n clustered ones count as (:func:`clustered_interval`): ``n / deff``
    scaled by ``(t_{n-1} / t_{m-1})^2`` (Student's t quantiles at the interval's level: a variance estimated from
    m clusters is itself uncertain), but never fewer than ``n / largest``, what n counterfactuals count as when
    every cluster's members agree (the rate's variance cannot exceed that). One cluster: ``n / largest``, 1."""
    floor = n / largest
    if clusters < 2:
        return floor
    tail = (1 - level) / 2
    return max(floor, n / deff * (stats.t.ppf(1 - tail, n - 1) / stats.t.ppf(1 - tail, clusters - 1)) ** 2)


#: What a validity rate's counterfactuals cluster by: one simulation (of one dataset and forest size) shares its
#: forests (:func:`clustered_interval`).
CLUSTER = ("dataset", "n_estimators", "sim")


def _clusters(group) -> pd.Series | None:
    """The simulation of each row of `group` (:data:`CLUSTER`), None for rows without simulations; a row
    missing one of the keys the group has is an error (it would join another simulation's cluster)."""
    if "sim" not in group:
        return None
    keys = group[[c for c in CLUSTER if c in group]]
    if keys.isna().any().any():
        raise ValueError(f"rows without their simulation ({', '.join(keys.columns)}): cannot cluster them")
    return keys.astype(str).agg("/".join, axis=1)


def validity_table(frame, by, *, column: str = "valid_retrained", level: float = 0.95):
    """Validity rate with its 95% interval per group of `frame` (rows of :func:`simulate`), over the
    counterfactuals found (:data:`FOUND`; a frame without statuses keeps every row): a solve stopped without a
    point is no invalid counterfactual, and changes no feature. The interval counts each group's simulations
    as clusters (:func:`clustered_interval`; ``n_eff`` the effective number of counterfactuals,
    ``simulations`` how many, ``largest`` the most counterfactuals of one); a frame without simulations, the
    binomial interval of independent counterfactuals (each its own simulation)."""
    by = by if isinstance(by, list) else [by]
    if "status" in frame:
        frame = frame[frame["status"].isin(FOUND)]
    rows = []
    for key, group in frame.groupby(by, dropna=False, sort=False):
        clusters = _clusters(group)
        est, n_eff = clustered_interval(group[column].astype(float), clusters, level=level)
        key = key if isinstance(key, tuple) else (key,)
        rows.append({**dict(zip(by, key)), **asdict(est), "n_eff": n_eff,
                     "simulations": len(group) if clusters is None else clusters.nunique(),
                     "largest": 1 if clusters is None else int(clusters.value_counts().max()),
                     "distance": group["distance"].mean(), "n_changed": group["n_changed"].mean()})
    return pd.DataFrame(rows, columns=[*by, "valid", "n", "rate", "low", "high", "n_eff", "simulations", "largest",
                                       "distance", "n_changed"])


def _percent_interval(table) -> pd.DataFrame:
    """The interval of a :func:`validity_table` in percent, as the chapter's tables show it."""
    return table.assign(**{"low [%]": 100 * table["low"], "high [%]": 100 * table["high"]})


def naive_validity_table(frame, *, n_estimators: int = 100):
    """Table 1 / Table 3: naive validity under retraining per dataset, ours beside the paper's, with the
    95% interval of :func:`validity_table` (simulations as clusters)."""
    columns = ["dataset", "n", "simulations", "max per simulation", "paper [%]", "ours [%]", "low [%]", "high [%]"]
    table = validity_table(frame[frame.method == "naive"], ["dataset"]).rename(columns={"largest": "max per simulation"})
    if table.empty:
        return pd.DataFrame(columns=columns)
    table["paper [%]"] = table["dataset"].map(naive_validity_paper(n_estimators))
    table["ours [%]"] = 100 * table["rate"]
    return _percent_interval(table)[columns]


def evolving_naive_table(evolving, fixed):
    """Naive validity per dataset when T1 is retrained on more rows (Appendix C.5), beside the validity with
    fixed data, both on the simulations that ran both (Table 1's and the evolving data's); 95% interval of the
    evolving one."""
    columns = ["dataset", "n", "simulations", "fixed data [%]", "evolving data [%]", "low [%]", "high [%]"]
    naive, fixed = evolving[evolving.method == "naive"], fixed[fixed.method == "naive"]
    if "sim" in naive and "sim" in fixed:
        shared = naive[["dataset", "sim"]].drop_duplicates().merge(fixed[["dataset", "sim"]].drop_duplicates())
        naive, fixed = naive.merge(shared), fixed.merge(shared)
    table = validity_table(naive, ["dataset"])
    if table.empty:
        return pd.DataFrame(columns=columns)
    same = validity_table(fixed, ["dataset"])
    rates = same.set_index("dataset")["rate"] if len(same) else pd.Series(dtype=float)
    table["fixed data [%]"] = 100 * table["dataset"].map(rates)
    table["evolving data [%]"] = 100 * table["rate"]
    return _percent_interval(table)[columns]


def method_label(row) -> str:
    """Legend label of a method (Robust-SAA carries its beta)."""
    if row["method"] == "robust-saa":
        return f"Robust-SAA (beta={row['beta']:g})"
    return {"naive": "naive", "direct-saa": "Direct-SAA", "isolation-forest": "isolation forest",
            "lof": "1-LOF"}[row["method"]]


def saa_curves(frame):
    """Validity (with interval) and mean distance per dataset, method and alpha (Figures 2, 4, 5, 9)."""
    saa = frame[frame.method.isin(["direct-saa", "robust-saa"])].copy()
    saa["label"] = [method_label(row) for _, row in saa.iterrows()]
    table = validity_table(saa, ["dataset", "label", "alpha"])
    table["target"] = 1 - table["alpha"]
    return table


#: The methods of the plausibility benchmarks (:func:`simulate`'s ``method``; :data:`BENCHMARKS` their labels).
BENCHMARK_METHODS = ("isolation-forest", "lof")
#: What pairs a solve with the solves of the other methods on the same factual: its simulation and factual.
FACTUAL_KEYS = ("sim", "factual")


def on_benchmarked_factuals(frame, benchmark) -> pd.DataFrame:
    """The rows of `frame` on the factuals (dataset, sim, factual) where a plausibility benchmark ran (`benchmark`:
    which rows are the benchmarks'); a dataset without a benchmark row keeps every row, and so does a frame without
    the keys. The paper store computes the benchmarks in cells of their own after each simulation's naive and SAA
    cell (``split_benchmarks``), so while it fills the other methods cover more simulations than the benchmarks:
    compared over those, a benchmark is set against other factuals and forests (audit 22b)."""
    keys = ["dataset", *[k for k in FACTUAL_KEYS if k in frame]]
    benchmark = np.asarray(benchmark, bool)
    if len(keys) == 1 or not benchmark.any():
        return frame
    ran = frame.loc[benchmark, keys].drop_duplicates()
    on = frame[keys].merge(ran.assign(benchmarked=True), on=keys, how="left")["benchmarked"].eq(True).to_numpy()
    return frame[on | ~frame["dataset"].isin(ran["dataset"]).to_numpy()]


def benchmark_points(frame):
    """Validity and mean distance of every method and parameter (the points of Figure 4), on the factuals where
    the benchmarks ran (:func:`on_benchmarked_factuals`), with what 05-dominance reads of each benchmark point:
    ``dominated`` (:func:`dominated_points`; missing for a point it does not judge), ``within_reach``
    (:func:`reachable_points`: whether an SAA point could dominate it at all), ``keeps_naive``
    (:func:`keeps_naive`) and ``status_p`` (:func:`status_p`)."""
    frame = on_benchmarked_factuals(frame, frame["method"].isin(BENCHMARK_METHODS)) if len(frame) else frame
    frame = frame.copy()
    frame["label"] = [method_label(row) for _, row in frame.iterrows()]
    numeric = {c: pd.to_numeric(frame[c], errors="coerce") for c in ("alpha", "contamination", "lof_weight")}
    frame["parameter"] = numeric["alpha"].fillna(numeric["contamination"]).fillna(numeric["lof_weight"])
    points = validity_table(frame, POINT_KEYS)
    points["dominated"] = dominated_points(points).reindex(points.index)
    points["within_reach"] = reachable_points(points).reindex(points.index)
    points["keeps_naive"] = keeps_naive(frame, points)
    points["status_p"] = status_p(frame, points)
    return points


#: The relative optimality gap our MILPs certify (:func:`~explainopt.counterfactuals.ensembles.ensemble_counterfactual`'s
#: ``mip_gap``): distances within it of each other are one optimum as far as the solver can tell (the paper
#: store's benchmark counterfactuals lie up to 6.7e-5 beyond naive's where the penalty does not move them, audit
#: 44). Both 05-dominance's ties use it: a benchmark point keeps naive's counterfactuals, an SAA point is closer.
NAIVE_GAP = 1e-4


def _within_gap(difference, distance):
    """Whether distances `difference` apart are one optimum: within :data:`NAIVE_GAP` of `distance` (plus
    :data:`DISTANCE_TIE` for round-off at 0); NaN compares False."""
    return np.abs(difference) <= NAIVE_GAP * np.abs(distance) + DISTANCE_TIE


#: What makes one point of Figure 4: a method (its label) and its parameter, on one dataset.
POINT_KEYS = ["dataset", "label", "parameter"]


def _point_of_row(frame, points) -> np.ndarray:
    """Each row of `frame` (labelled as :func:`benchmark_points` labels them): the position in `points` of its
    point (-1: none)."""
    where = points[POINT_KEYS].reset_index(drop=True).reset_index()
    return frame[POINT_KEYS].merge(where, on=POINT_KEYS, how="left")["index"].fillna(-1).astype(int).to_numpy()


def _found(frame) -> pd.DataFrame:
    """The rows of `frame` with a counterfactual (:data:`FOUND`), as :func:`validity_table` counts them."""
    return frame[frame["status"].isin(FOUND)] if "status" in frame else frame


def keeps_naive(frame, points) -> np.ndarray:
    """Per point of `points` (the :func:`benchmark_points` of `frame`'s labelled rows): whether it is a plausibility
    benchmark that keeps naive's counterfactuals: on every factual it has a counterfactual for, naive has one at the
    same distance (within :data:`NAIVE_GAP`) with the same validity under retraining. Such a point is naive's point,
    the penalty too light to move it (1-LOF at a small lambda): no SAA point can be closer (every SAA threshold is
    at least naive's, so an SAA counterfactual is never closer than naive's), so none can dominate it strictly,
    whatever the plausibility benchmark does (audit 40c H2)."""
    out = np.zeros(len(points), bool)
    keys = ["dataset", *[k for k in (*FACTUAL_KEYS, "n_estimators") if k in frame]]
    rows = _found(frame)
    if len(keys) == 1 or rows.empty:
        return out
    naive = rows.loc[rows["method"] == "naive", [*keys, "distance", "valid_retrained"]].drop_duplicates(keys)
    bench = rows[rows["method"].isin(BENCHMARK_METHODS)]
    paired = bench.merge(naive, on=keys, how="left", suffixes=("", "_naive"))
    paired["same"] = (_within_gap(paired["distance"] - paired["distance_naive"], paired["distance_naive"])
                      & (paired["valid_retrained"] == paired["valid_retrained_naive"]))   # no naive: False
    every = paired["same"].groupby(_point_of_row(paired, points)).all()
    every = every[every.index >= 0]
    out[every.index.to_numpy()] = every.to_numpy()
    return out


def thresholds_table(*, alphas=ALPHAS, sizes=(100, 101, 400), betas=(0.1, 0.05), robust_size: int = 100):
    """p*(N, alpha) for each N in `sizes` and rho*(robust_size, alpha, beta) per beta, one column per
    target 1 - alpha (the thresholds the experiments use)."""
    return pd.DataFrame({f"1-alpha={1 - a:.2f}": {
        **{f"p*(N={n})": robustness_threshold(n, a) for n in sizes},
        **{f"rho*(N={robust_size}, beta={b})": robust_saa_threshold(robust_size, a, b) for b in betas}}
        for a in alphas})


def solve_time_table(frame, *more):
    """Mean solve time of naive vs. Direct-SAA counterfactuals per dataset and solver (App. C.2), over
    the rows of `frame` and of the frames in `more` (e.g. the same problems solved by another solver).

    Only solves that returned a point count (``optimal`` or ``time_limit``); ``solved`` / ``problems``
    say how many, so a solver that failed shows as such instead of as a fast solver. ``refused by``: the
    commercial solver whose size-limited licence refused these problems, which the open-source
    ``solver`` then solved (a row apart). ``at limit``: solves the time limit stopped, with a point (its
    time, the limit, in the mean) or without one (left out of the mean, which then leaves out its slowest
    solves): either way the mean is a lower bound; ``naive at limit`` / ``direct-saa at limit``: those of each
    method. ``reused``: Direct-SAA points that needed no solve of their own (a lower threshold's optimum
    already met theirs, see
    :func:`~explainopt.counterfactuals.ensembles.ensemble_counterfactuals`). They are left out of the means
    and of ``solved``: the paper solves every threshold's problem, so its solve time is the time of a solve,
    and a reused point's 0 s would credit Direct-SAA with our chaining of the thresholds."""
    columns = ["dataset", "method", "solver", "refused by", "status", "solve_time", "reused"]
    parts = [f[f.method.isin(["naive", "direct-saa"])] for f in (frame, *more) if len(f)]
    parts = [p.assign(**{"refused by": p["fallback_from"].fillna("") if "fallback_from" in p else "",
                         "reused": p["reused"].fillna(False).astype(bool) if "reused" in p else False})[columns]
             for p in parts if len(p)]
    sub = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=columns)
    rows = []
    for (name, solver, refused), g in sub.groupby(["dataset", "solver", "refused by"], sort=False):
        ok = g[g.status.isin(["optimal", "time_limit"]) & ~g.reused]
        stopped = g[g.status.isin(["time_limit", "no_solution"]) & ~g.reused]
        means = ok.groupby("method")["solve_time"].mean()
        naive, direct = means.get("naive", float("nan")), means.get("direct-saa", float("nan"))
        rows.append({"dataset": name, "solver": solver, "refused by": refused, "problems": len(g),
                     "solved": len(ok), "at limit": len(stopped),
                     **{f"{m} at limit": int((stopped.method == m).sum()) for m in ("naive", "direct-saa")},
                     "reused": int(g.loc[g.method == "direct-saa", "reused"].sum()), "naive": naive,
                     "direct-saa": direct, "ratio": direct / naive if naive > 0 else float("nan")})
    return pd.DataFrame(rows, columns=["dataset", "solver", "refused by", "problems", "solved", "at limit",
                                       "naive at limit", "direct-saa at limit", "reused", "naive", "direct-saa", "ratio"])


def solve_time_frame(frame, *more):
    """One row per solve of `frame` and the frames in `more` that ran (``optimal``, ``time_limit`` or
    ``no_solution``): dataset, method label (:func:`method_label`), solver (with the licence that refused the
    problem, e.g. ``highs (gurobi refused)``), solve_time [s] and ``stopped`` (the time limit stopped it, with or
    without a point, so its time is a lower bound): the data of Figure 6. A ``reused`` point (a lower threshold's
    or contamination level's optimum, returned without a solve at 0 s) is no solve and is left out, as in
    :func:`solve_time_table`: the paper solves every level, and its 0 s would credit a method with our chaining."""
    parts = [f for f in (frame, *more) if len(f)]
    if not parts:
        return pd.DataFrame(columns=["dataset", "label", "solver", "solve_time", "stopped"])
    sub = pd.concat(parts, ignore_index=True)
    reused = sub["reused"].fillna(False).astype(bool) if "reused" in sub else pd.Series(False, index=sub.index)
    sub = sub[sub.status.isin([*FOUND, "no_solution"]) & ~reused].copy()
    sub["label"] = [method_label(row) for _, row in sub.iterrows()]
    sub["stopped"] = sub.status != "optimal"
    refused = sub["fallback_from"].fillna("") if "fallback_from" in sub else pd.Series("", index=sub.index)
    sub["solver"] = [f"{s} ({r} refused)" if r else str(s) for s, r in zip(sub["solver"], refused)]
    keys = [k for k in (*FACTUAL_KEYS, "machine") if k in sub]  # kept to pair solves (:func:`benchmark_time_ratio`)
    return sub[["dataset", "label", "solver", "solve_time", "stopped", *keys]].reset_index(drop=True)


#: The labels of the plausibility benchmarks (:func:`method_label`).
BENCHMARKS = ("isolation forest", "1-LOF")


#: The columns of :func:`benchmark_time_ratio`.
BENCHMARK_RATIO_COLUMNS = ["method", "ratio", "capped", "factuals", "other_machine"]


def benchmark_time_ratio(times) -> pd.DataFrame:
    """Per dataset where a plausibility benchmark ran, one row per benchmark (``method``, one box of Figure 6
    each): its median solve time over the naive one (rows of :func:`solve_time_frame`) on the factuals where
    the benchmarks ran (:func:`on_benchmarked_factuals`), which of the two medians rests on solves the time
    limit stopped (``capped``: "numerator", "denominator", "both" or ""; such a median is a lower bound), and
    on how many ``factuals`` (naive solves, one per factual) the ratio rests. Per benchmark, not pooled: a
    pooled median weighs the two by their solves, and the isolation forest's levels that reuse a lower
    level's point are no solves (audit 40c H3: COMPAS pooled 1.4x was 69% 1-LOF at 1.1x, the isolation
    forest at 57x). With a ``machine`` column, a naive solve counts only on the machine its factual's
    benchmarks ran on (the paper store computes them in cells of their own, on whatever machine fills it, and
    one cell's time differs up to 9x between machines and loads: audit 28); ``other_machine``: the
    benchmarked factuals left out for it."""
    both = on_benchmarked_factuals(times, times["label"].isin(BENCHMARKS)) if len(times) else times
    times = _one_machine(both)
    rows = []
    for name, g in both.groupby("dataset", sort=False):
        if not g.label.isin(BENCHMARKS).any() or not (g.label == "naive").any():
            continue
        paired = times[times.dataset == name]
        naive = paired[paired.label == "naive"]
        apart = int((g.label == "naive").sum()) - len(naive)
        for method in (m for m in BENCHMARKS if (g.label == m).any()):
            bench = paired[paired.label == method]
            timed = len(naive) and len(bench) and naive["solve_time"].median() > 0
            rows.append({"dataset": name, "method": method,
                         "ratio": float(bench["solve_time"].median() / naive["solve_time"].median()) if timed else np.nan,
                         "capped": _capped(bench["stopped"].any(), naive["stopped"].any()) if timed else "",
                         "factuals": len(naive), "other_machine": apart})
    return pd.DataFrame(rows, columns=["dataset", *BENCHMARK_RATIO_COLUMNS]).set_index("dataset")


def _one_machine(times) -> pd.DataFrame:
    """The naive and benchmark solves of `times` whose factual's other side ran on the same machine (all of
    them without a ``machine`` column)."""
    if "machine" not in times or not len(times):
        return times
    keys = ["dataset", *[k for k in FACTUAL_KEYS if k in times], "machine"]
    times = times.assign(machine=times["machine"].where(times["machine"].notna(), None))
    bench = times["label"].isin(BENCHMARKS).to_numpy()
    side = {flag: set(map(tuple, times.loc[bench == flag, keys].astype(str).to_numpy())) for flag in (True, False)}
    row_keys = list(map(tuple, times[keys].astype(str).to_numpy()))
    keep = [(k in side[not b] and machine is not None) or label not in ("naive", *BENCHMARKS)
            for k, b, label, machine in zip(row_keys, bench, times["label"], times["machine"])]
    return times[np.asarray(keep, bool)]


def check_counts(frame):
    """Per dataset: counterfactual problems, points found, how many of the hard (not relaxed) ones T0
    verifies (``predict`` = target and target score >= tau; must be all), how many needed the penalized
    relaxation and how many of those still flip T0's class, solves stopped at the time limit, and points
    nudged onto the float32 side of a chosen split (``repaired``, see
    :func:`explainopt.encoders.trees.snap_to_chosen_leaves`)."""
    rows = []
    for name, g in frame.groupby("dataset", sort=False):
        found = g["status"].isin(FOUND)
        hard, relaxed = g[found & ~g["relaxed"]], g[found & g["relaxed"]]
        rows.append({"dataset": name, "problems": len(g), "found": int(found.sum()),
                     "hard": len(hard), "verified by T0": int((hard["valid"] & hard["meets_threshold"]).sum()),
                     "relaxed": len(relaxed), "relaxed, class flipped": int(relaxed["valid"].sum()),
                     "time limit": int((g["status"] == "time_limit").sum()),
                     "repaired": int((g["repaired"] > 0).sum())})
    return pd.DataFrame(rows, columns=["dataset", "problems", "found", "hard", "verified by T0", "relaxed",
                                       "relaxed, class flipped", "time limit", "repaired"])


def importance_and_changes(dataset: str, *, sim: int = 0, n_estimators: int = 100, max_depth: int = 4,
                           frame=None, n_repeats: int = 5, max_rows: int = 2000, random_state: int = 0):
    """Appendix C.6: permutation importance of each feature for T0 of simulation `sim` against the mean
    absolute change of the Direct-SAA (alpha = 0.5) counterfactuals in `frame`; both normalized to sum
    to one. `random_state` draws the rows (at most `max_rows`) and the permutations."""
    data = load_dataset(f"ensembles/{dataset}").scaled()
    simulation = make_simulation(data, sim=sim, n_estimators=n_estimators, max_depth=max_depth)
    rng = np.random.default_rng(random_state)
    rows = rng.choice(len(simulation.X_train), size=min(max_rows, len(simulation.X_train)), replace=False)
    imp = permutation_importance(simulation.forest, simulation.X_train[rows], simulation.y_train[rows],
                                 n_repeats=n_repeats, random_state=random_state).importances_mean
    imp = np.clip(imp, 0, None)
    sub = frame[(frame.dataset == dataset) & (frame.method == "direct-saa") & (frame.alpha == 0.5)
                & frame["x"].notna()]
    change = np.mean([np.abs(x - x0) for x, x0 in zip(sub["x"], sub["x0"])], axis=0)
    return pd.DataFrame({"feature": data.feature_names, "importance": imp / max(imp.sum(), 1e-12),
                         "change": change / max(change.sum(), 1e-12), "counterfactuals": len(sub)})


def importance_correlation(tables: dict) -> pd.Series:
    """Spearman rank correlation of importance and change per dataset (:func:`importance_and_changes`)."""
    return pd.Series({d: t["importance"].corr(t["change"], method="spearman") for d, t in tables.items()},
                     name="Spearman(importance, change)", dtype=float)


def counterfactual_path(frame, *, dataset: str, sim: int = 0, factual: int = 0):
    """Figure 3 data: the factual and its Direct-SAA changes for increasing targets (changed features)."""
    names = load_dataset(f"ensembles/{dataset}").feature_names
    sub = frame[(frame.dataset == dataset) & (frame.sim == sim) & (frame.factual == factual)
                & (frame.method == "direct-saa") & frame["x"].notna()].sort_values("alpha", ascending=False)
    x0 = sub["x0"].iloc[0]
    changes = pd.DataFrame({f"{1 - a:.2f}": x - x0 for a, x in zip(sub["alpha"], sub["x"])}, index=names)
    keep = changes.abs().max(axis=1) > 1e-6
    table = changes[keep]
    table.insert(0, "factual", pd.Series(x0, index=names)[keep])
    return table


def describe_path(table, *, dataset: str) -> str:
    """What Figure 3 shows, counted from its table (:func:`counterfactual_path`)."""
    changes = table.iloc[:, 1:]
    n_features = len(load_dataset(f"ensembles/{dataset}").feature_names)
    steps = [not np.allclose(changes.iloc[:, k], changes.iloc[:, k + 1], atol=1e-9) for k in range(changes.shape[1] - 1)]
    return (f"The Direct-SAA counterfactuals of this factual change {len(table)} of the {n_features} features "
            f"over {changes.shape[1]} targets; between consecutive targets the counterfactual moves "
            f"{sum(steps)} of {len(steps)} times; where it does not, the point of the lower target already meets "
            f"the higher one (a discrete feature can jump past several thresholds at once).")


def dataset_summary(names=None):
    """Appendix C.1 (Table 2) for the registry's copies: rows, columns after one-hot encoding, kinds."""
    rows = []
    for name in names or ENSEMBLE_DATASETS:
        data = load_dataset(f"ensembles/{name}")
        kinds = [f.kind for f in data.spec]
        rows.append({"dataset": name, "n": len(data.X), "columns": data.n_features,
                     "categorical groups": len(data.groups()),
                     **{k: kinds.count(k) for k in ("binary", "categorical", "discrete", "continuous")},
                     "fixed": sum(f.actionability == "fixed" for f in data.spec),
                     "increase-only": sum(f.actionability == "increase" for f in data.spec),
                     "share of class 1": round(float(data.y.mean()), 2)})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- figures of the chapter

#: The methods of Figure 6 in the paper's order.
TIME_ORDER = ("naive", "Direct-SAA", "Robust-SAA (beta=0.1)", "Robust-SAA (beta=0.05)", "isolation forest", "1-LOF")


def alpha_slider_data(curves, table1, *, n_estimators: int = 100, betas=(0.05, 0.1)) -> dict:
    """What :func:`plot_alpha_slider` shows, from this run's Direct-SAA curves (:func:`saa_curves`) and
    naive validities (:func:`naive_validity_table`): per tolerance alpha of the run (target increasing),
    the thresholds p*(N, alpha) and rho*(N, alpha, beta) and each dataset's Direct-SAA validity under
    retraining (NaN where the dataset did not run that alpha)."""
    direct = curves[curves.label == "Direct-SAA"] if len(curves) else curves
    datasets = list(dict.fromkeys(direct["dataset"])) if len(direct) else []
    alphas = sorted({float(a) for a in direct["alpha"]}, reverse=True) if len(direct) else []
    naive = table1.set_index("dataset")["ours [%]"] / 100 if len(table1) else pd.Series(dtype=float)
    steps = []
    for a in alphas:
        sub = direct[np.isclose(direct["alpha"].astype(float), a)].set_index("dataset")
        steps.append({"alpha": a, "target": 1 - a, "p_star": robustness_threshold(n_estimators, a),
                      "rho_star": {float(b): robust_saa_threshold(n_estimators, a, b) for b in betas},
                      "validity": [float(sub["rate"].get(d, np.nan)) for d in datasets],
                      "n": [int(sub["n"].get(d, 0)) for d in datasets]})
    return {"n_estimators": int(n_estimators), "datasets": datasets, "betas": [float(b) for b in betas],
            "naive": [float(naive.get(d, np.nan)) for d in datasets], "steps": steps}


# --------------------------------------------------------------------------- checks behind the claims

#: Fewest counterfactuals behind a validity rate for a claim to judge it (fewer: the claim is not run): 6
#: simulations of 5 factuals; the interval counts the simulations (:func:`clustered_interval`), so 27 of 30
#: valid in 6 simulations reads about 60-99%.
MIN_PER_POINT = 30


def meets_targets(curves, *, dataset: str, label: str = "Direct-SAA", min_target: float = 0.5,
                  min_n: int = MIN_PER_POINT) -> bool | None:
    """Whether validity reaches every target ``1 - alpha >= min_target`` up to sampling noise: the upper
    end of the 95% interval is at least the target, so a miss is a rate significantly below it. False as
    soon as a rate of at least `min_n` counterfactuals misses (:func:`target_misses`); otherwise None when
    the curve is missing or a rate rests on fewer than `min_n` counterfactuals or lacks its interval."""
    if target_misses(curves, dataset=dataset, label=label, min_target=min_target, min_n=min_n):
        return False
    sub = curve_points(curves, dataset=dataset, label=label, min_target=min_target)
    judged = (sub["n"] >= min_n) & sub["high"].notna() if len(sub) else None
    return None if judged is None or not judged.all() else True


def curve_points(curves, *, dataset: str, label: str, min_target: float) -> pd.DataFrame:
    """The points of `dataset`'s `label` curve at targets ``1 - alpha >= min_target`` (empty: none)."""
    if curves.empty:
        return curves
    return curves[(curves.dataset == dataset) & (curves.label == label) & (curves.target >= min_target - 1e-9)]


#: Round-off between distances (1e-16 on the paper preview, audit 26c D1): the absolute part of 05-dominance's tie
#: (:func:`_within_gap`), which matters only at a distance of 0.
DISTANCE_TIE = 1e-9


def misses_a_target(curves, *, dataset: str, label: str = "Direct-SAA", min_target: float = 0.5,
                    min_n: int = MIN_PER_POINT) -> bool | None:
    """Whether `dataset`'s `label` curve misses a target, read three ways: True on a significant miss
    (:func:`target_misses`); False when every rate (each on at least `min_n` counterfactuals, targets
    ``1 - alpha >= min_target``) is itself at or above its target; None when a rate falls short within its
    interval (a shortfall the evidence cannot tell from noise), or a rate rests on fewer counterfactuals or lacks
    its interval or point estimate. (:func:`meets_targets`, the lenient reading of a claim that a curve meets
    every target, counts a shortfall within noise as met.) False rests on point estimates: audit 39c measured
    that at 6 simulations a curve truly short of one target by a few points reads False 8-20% of the time, at
    26 or more 4% or less."""
    if target_misses(curves, dataset=dataset, label=label, min_target=min_target, min_n=min_n):
        return True
    sub = _judged_curve(curves, dataset=dataset, label=label, min_target=min_target, min_n=min_n)
    if sub is None:
        return None
    return False if (sub["rate"] >= sub["target"] - 1e-9).all() else None


def _read_curve(curves, dataset: str) -> bool:
    """Whether `dataset`'s Direct-SAA curve is read: every target from 50% on rests on enough counterfactuals and
    has its rate and interval (a shortfall within noise is then a reading, neither way, not a missing number)."""
    return _judged_curve(curves, dataset=dataset, label="Direct-SAA", min_target=0.5, min_n=MIN_PER_POINT) is not None


def _judged_curve(curves, *, dataset: str, label: str, min_target: float, min_n: int) -> pd.DataFrame | None:
    """The points of `dataset`'s `label` curve at targets ``>= min_target``, None unless every one rests on at
    least `min_n` counterfactuals and has its rate and interval."""
    sub = curve_points(curves, dataset=dataset, label=label, min_target=min_target)
    if sub.empty or "rate" not in sub:
        return None
    judged = (sub["n"] >= min_n) & sub["high"].notna() & sub["rate"].notna()
    return sub if judged.all() else None


def _dominates(saa, bench) -> np.ndarray:
    """Whether each SAA point of `saa` (columns) strictly dominates each benchmark point of `bench` (rows), as the
    paper says: a smaller mean distance (beyond :func:`_within_gap`) and a higher validity."""
    gap = saa["distance"].to_numpy(float)[None, :] - bench["distance"].to_numpy(float)[:, None]
    closer = (gap < 0) & ~_within_gap(gap, bench["distance"].to_numpy(float)[:, None])
    return closer & (saa["rate"].to_numpy(float)[None, :] > bench["rate"].to_numpy(float)[:, None])


def dominated_points(points, *, min_n: int = MIN_PER_POINT) -> pd.Series:
    """Per plausibility-benchmark point (isolation forest, 1-LOF) of at least `min_n` counterfactuals on a
    dataset with SAA points of as many (:func:`_saa_and_benchmarks`), indexed as `points`: whether an SAA point
    strictly dominates it (:func:`_dominates`)."""
    parts = [pd.Series(_dominates(saa, bench).any(axis=1), index=bench.index)
             for saa, bench in _saa_and_benchmarks(points, min_n=min_n)]
    return pd.concat(parts) if parts else pd.Series(dtype=bool)


def status_p(frame, points, *, min_n: int = MIN_PER_POINT) -> np.ndarray:
    """Per point of `points` (the :func:`benchmark_points` of `frame`'s labelled rows): the p-value of the sign
    tests over simulations that settle the status :func:`dominated_points` gives it; NaN for a point it does not
    judge. Dominated: the smallest, over the K SAA points that dominate it on the estimates, of the larger p of two
    one-sided :func:`~explainopt.verdicts.sign_test` s over the simulations, that the SAA point is closer (beyond
    :func:`_within_gap`) and that it is more valid, times K (Bonferroni: the status may rest on any of them). Not
    dominated: the largest, over the SAA points, of the p that it fails to dominate (:func:`_fails_p`; every SAA
    point must be shown not to). Capped at 1. The simulation is the unit: its counterfactuals share its forests,
    so a margin of a few factuals in a few simulations settles nothing (audit 44 R2: a cluster bootstrap over 6
    simulations called a margin of 3 factuals in 3 simulations settled; the sign test gives p = 0.125; audit 44b
    S1: uncorrected, the smallest p over 8 tied SAA points settled a null 8% of the time)."""
    out = np.full(len(points), np.nan)
    judged = dominated_points(points, min_n=min_n)
    rate, distance = _per_simulation(frame, points)
    where = points.index.get_indexer
    for saa, bench in _saa_and_benchmarks(points, min_n=min_n):
        s, dominates = where(saa.index), _dominates(saa, bench)
        for row, b in enumerate(where(bench.index)):
            farther = distance[s] - distance[b]
            farther[_within_gap(farther, distance[b])] = 0.0
            more_valid = rate[s] - rate[b]
            if judged[bench.index[row]]:
                tests = [max(_sign_p(-f), _sign_p(v)) for f, v, d in zip(farther, more_valid, dominates[row]) if d]
                out[b] = min(1.0, len(tests) * min(tests))
            else:
                fails = _fails(saa, bench.iloc[row])
                out[b] = max(_fails_p(f, v, why) for f, v, why in zip(farther, more_valid, fails))
    return out


def _fails(saa, point) -> list[tuple[bool, bool]]:
    """Per SAA point of `saa`: why it does not dominate benchmark `point` on the estimates, (not closer, not more
    valid): its mean distance no smaller (within :func:`_within_gap`), its validity no higher."""
    gap = saa["distance"].to_numpy(float) - point["distance"]
    return list(zip((gap >= 0) | _within_gap(gap, point["distance"]), saa["rate"].to_numpy(float) <= point["rate"]))


def _fails_p(farther, more_valid, fails) -> float:
    """p that an SAA point fails to dominate a benchmark point, tested only on the sides its estimates fail on
    (`fails`, :func:`_fails`): farther in more simulations than not, less valid in more than not; Bonferroni
    over the sides tested (audit 44c T1: a sign test that reads 'farther' where the means read 'closer' settled
    a point the means leave to its validity). 1 where its estimates fail on no side."""
    tests = [p for p, side in zip((_sign_p(farther), _sign_p(-more_valid)), fails) if side]
    return min(1.0, len(tests) * min(tests)) if tests else 1.0


def _sign_p(differences) -> float:
    """:func:`~explainopt.verdicts.sign_test` that `differences` (one per simulation; NaN: a simulation one side
    lacks) are positive in more simulations than negative."""
    return sign_test(int((differences > 0).sum()), int((differences < 0).sum()))


def _per_simulation(frame, points) -> tuple[np.ndarray, np.ndarray]:
    """Validity rate and mean distance of each point of `points` (rows) in each simulation of `frame`'s
    counterfactuals (:data:`FOUND`; columns, :func:`_clusters`; each row its own without simulations), NaN where
    the point has none."""
    rows = _found(frame)
    if rows.empty:
        return np.full((len(points), 0), np.nan), np.full((len(points), 0), np.nan)
    clusters = _clusters(rows)
    cluster = pd.factorize(clusters if clusters is not None else pd.RangeIndex(len(rows)))[0]
    position = _point_of_row(rows, points)
    keep = position >= 0
    sums = {}
    for name, values in (("n", np.ones(len(rows))), ("valid", rows["valid_retrained"].astype(float)),
                         ("distance", rows["distance"])):
        sums[name] = np.zeros((len(points), cluster.max() + 1))
        np.add.at(sums[name], (position[keep], cluster[keep]), np.asarray(values, float)[keep])
    with np.errstate(invalid="ignore", divide="ignore"):
        return sums["valid"] / sums["n"], sums["distance"] / sums["n"]


def _saa_and_benchmarks(points, *, min_n: int):
    """Per dataset whose SAA points all rest on at least `min_n` counterfactuals, those and its
    plausibility-benchmark points of at least `min_n` (a dataset without such SAA points has nothing to judge
    its benchmarks by yet, audit 28c D3; an SAA point on fewer may yet dominate them, audit 45b F3)."""
    for _, g in points.groupby("dataset") if len(points) else ():
        saa = g[g.label.str.contains("SAA")]
        if len(saa) and bool((saa["n"] >= min_n).all()):
            yield saa, g[g.label.isin(BENCHMARKS) & (g["n"] >= min_n)]


_TARGET_RULE = (f"target met = 95% interval (simulations as clusters) reaches 1 - alpha at every alpha, each rate "
                f"on at least {MIN_PER_POINT} counterfactuals")


#: The chapter's claims, declared in one place: id, check, wording and evidence rule (data/robust_ensembles_claims.csv).
CLAIMS = ClaimBook("05", paper_table("robust_ensembles_claims"))


def rates_counted(curves, *, dataset: str, label: str = "Direct-SAA", min_target: float = 0.5,
                  min_n: int = MIN_PER_POINT) -> tuple[int, int]:
    """How many of the rates :func:`meets_targets` judges rest on at least `min_n` counterfactuals, of how
    many it needs (every target ``1 - alpha >= min_target`` of the curve; one when the curve is missing)."""
    sub = curve_points(curves, dataset=dataset, label=label, min_target=min_target)
    return (int((sub["n"] >= min_n).sum()), max(len(sub), 1)) if len(sub) else (0, 1)


def _miss_word(missed, curves, dataset: str, label: str = "Direct-SAA") -> str:
    """How :func:`misses_a_target` read `dataset`'s `label` curve, in words."""
    if missed is not None:
        return "misses a target" if missed else "meets every target"
    judged = _judged_curve(curves, dataset=dataset, label=label, min_target=0.5, min_n=MIN_PER_POINT)
    return "not run" if judged is None else "short of a target within noise"


def _verdict_word(ok, short: int = 0) -> str:
    """A :func:`meets_targets` reading in words; `short`: how many rates below their target it counted as met."""
    noise = f" ({'one' if short == 1 else short} short within noise)" if short else ""
    return "not run" if ok is None else "misses a target" if not ok else f"meets every target{noise}"


def _within_noise(curves, *, dataset: str, label: str = "Direct-SAA") -> int:
    """How many rates of `dataset`'s `label` curve fall below their target while :func:`meets_targets` reads it
    as met (within noise, the lenient reading of a "meets" claim; :func:`misses_a_target` leaves it undecided),
    which the verdict then says; 0 where it is not met or no rate is short."""
    if not (meets_targets(curves, dataset=dataset, label=label) is True
            and misses_a_target(curves, dataset=dataset, label=label) is None):
        return 0
    sub = curve_points(curves, dataset=dataset, label=label, min_target=0.5)
    return int((sub["rate"] < sub["target"] - 1e-9).sum()) if "rate" in sub else 0


def claim_verified(checks) -> Claim:
    """Every hard (not relaxed) counterfactual found is verified by the forest it explains."""
    hard = int(checks["hard"].sum()) if len(checks) else 0
    verified = int(checks["verified by T0"].sum()) if len(checks) else 0
    relaxed = int(checks["relaxed"].sum()) if len(checks) else 0
    return CLAIMS.claim("05-verified", ours=f"{verified} of {hard} hard solutions verified; {relaxed} relaxed",
                 holds=verified == hard, evidence=hard,
                 why="relaxed rows (target unreachable) are counted apart")


#: Fewest counterfactuals behind a data set's naive validity rate for a claim to count it (as
#: ``05-spambase-naive``): at 10 one counterfactual moves the rate by 10 points.
MIN_PER_DATASET = 10


def claim_naive_below_half(table1, *, minimum: int = 3, per_dataset: int = MIN_PER_DATASET) -> Claim:
    """Naive validity below 50% on most datasets (Table 1), over the datasets whose rate rests on at least
    `per_dataset` counterfactuals; needs `minimum` such datasets."""
    paper = naive_validity_paper(100)
    rows = table1[table1["n"] >= per_dataset] if len(table1) else table1
    naive = rows.set_index("dataset")["ours [%]"] if len(rows) else pd.Series(dtype=float)
    below = int((naive < 50).sum())
    few = len(table1) - len(rows)
    why = (f"{len(naive)} of {len(table1)} datasets have at least {per_dataset} counterfactuals"
           + (f" ({int(table1['n'].min())}-{int(table1['n'].max())} per dataset at this scale)" if few else "")
           + f"; the paper averages {PAPER_SIMULATIONS[100] * PAPER_FACTUALS} per dataset")
    return CLAIMS.claim("05-naive-below-half", evidence=len(naive), minimum=minimum,
                        paper=f"{int((paper < 50).sum())} of {len(paper)} datasets below 50%",
                        ours=f"{below} of {len(naive)} below 50%", holds=below > len(naive) / 2, why=why)


def claim_spambase_naive(table1, *, level: float = 0.95, minimum: int = 10) -> Claim:
    """Naive validity below 20% on Spambase (Table 1): reproduced when our rate is below 20%, *partly* when
    it is not but its interval reaches below 20%, differs when the whole interval lies above; not
    run below `minimum` counterfactuals."""
    row = table1[table1.dataset == "Spambase"] if len(table1) else table1
    if not len(row):
        return CLAIMS.claim("05-spambase-naive", paper=f"{naive_validity_paper(100)['Spambase']}%",
                            ours="not run", holds=None, evidence=0, minimum=minimum)
    below = rate_below(row, 20, level=level, paper_simulations=PAPER_SIMULATIONS[100], minimum=minimum)
    return CLAIMS.claim("05-spambase-naive", paper=f"{naive_validity_paper(100)['Spambase']}%", **below,
                        evidence=int(row["n"].iloc[0]), minimum=minimum,
                        why="partly = our rate is not below 20% but its interval reaches below it")


def rate_below(row, bound: float, *, level: float = 0.95, paper_simulations: int | None = None,
               minimum: int = 0) -> dict:
    """A "below `bound` %" claim on the validity rate of a one-row table of :func:`naive_validity_table`
    (``ours [%]``, ``n``; its interval ``low [%]``/``high [%]``, ``simulations`` and ``max per simulation``
    where it has them, else the binomial interval of n independent counterfactuals), read with its interval:
    ``ours`` (the rate and interval in words), ``holds`` (whether the interval reaches below `bound`; else the
    whole interval lies at or above it: *differs*), ``partly`` (the rate itself is not below) and
    ``undecided_by``. On so few
    simulations that even all of their counterfactuals valid would leave the interval reaching below `bound`,
    *differs* is out of reach whatever they show: the claim is left *not run* (audit 39 D1; the simulations'
    own sizes, audit 39b E1). `paper_simulations`: how many the paper ran, for the explanation; below `minimum`
    counterfactuals the claim's evidence rule leaves it not run first (too little evidence), and no more is said."""
    rate, n = float(row["ours [%]"].iloc[0]), int(row["n"].iloc[0])
    simulations = int(row["simulations"].iloc[0]) if "simulations" in row else n
    largest = int(row["max per simulation"].iloc[0]) if "max per simulation" in row else 1
    if {"low [%]", "high [%]"} <= set(row.columns):
        low, high = float(row["low [%]"].iloc[0]), float(row["high [%]"].iloc[0])
    else:
        est = binomial_interval(round(rate * n / 100), n, level=level)
        low, high = 100 * est.low, 100 * est.high
    all_valid = 100 * ((1 - level) / 2) ** (1 / effective_number(n, simulations, largest, level=level))
    decidable = all_valid >= bound or n < minimum
    plural = "s" if simulations > 1 else ""
    where = f"n = {n}" + (f" in {simulations} simulation{plural}" if simulations < n else "")
    of_paper = f" of the paper's {paper_simulations}" if paper_simulations else ""
    return {"ours": f"{beside(rate, '.0f', bound)}% ({level:.0%} interval {beside(low, '.0f', bound)}-{high:.0f}%, "
                    f"{where})",
            "holds": bool(low < bound) if decidable else None, "partly": bool(rate >= bound),
            "undecided_by": "" if decidable else
            (f"only {simulations} simulation{plural}{of_paper} computed: even with every counterfactual valid the "
             f"interval would reach down to {all_valid:.0f}%, below {bound:g}%: differs is out of reach")}


def target_misses(curves, *, dataset: str, label: str = "Direct-SAA", min_target: float = 0.5,
                  min_n: int = MIN_PER_POINT) -> list[str]:
    """The targets of `dataset`'s `label` curve missed on at least `min_n` counterfactuals (the upper end of
    the 95% interval below the target), each with its numbers: the target, our rate over n
    counterfactuals and the upper end of its interval."""
    sub = curve_points(curves, dataset=dataset, label=label, min_target=min_target)
    if sub.empty:
        return []
    missed = sub[(sub["high"] - sub["target"] < -1e-9) & (sub["n"] >= min_n)]
    rate = missed["rate"] if "rate" in missed else pd.Series(np.nan, index=missed.index)
    return [f"{dataset} at target {t:.0%}: {'' if pd.isna(r) else f'{r:.1%} of '}{int(n)}, interval up to {h:.1%}"
            for t, r, n, h in zip(missed["target"], rate, missed["n"], missed["high"])]


def claim_direct_saa_targets(curves, *, datasets) -> Claim:
    """Direct-SAA meets every target on every dataset but Spambase, and misses one on Spambase; `ours` names
    every missed target with its numbers."""
    others = [d for d in datasets if d != "Spambase"]
    ok = {d: meets_targets(curves, dataset=d) for d in others}
    known = [d for d in others if ok[d] is not None]
    missed = misses_a_target(curves, dataset="Spambase") if "Spambase" in datasets else None
    spambase = None if missed is None else not missed
    as_paper = sum(ok[d] is True for d in others) + (spambase is False)          # meets it, and Spambase misses
    unknown = len(others) - len(known) + (spambase is None)
    holds = count_decides(as_paper, unknown, lambda k: k == len(others) + 1) if others else None
    misses = [m for d in known if not ok[d] for m in target_misses(curves, dataset=d)]
    noisy = [d for d in known if _within_noise(curves, dataset=d)]
    return CLAIMS.claim("05-direct-saa-targets",
                        ours=f"{sum(bool(ok[d]) for d in known)} of {len(known)} meet every target"
                             + (f" ({len(others) - len(known)} not run)" if len(known) < len(others) else "")
                             + (f"; met with a rate short within noise: {', '.join(noisy)}" if noisy else "")
                             + (f"; misses: {'; '.join(misses)}" if misses else "")
                             + f" (Spambase: {_miss_word(missed, curves, 'Spambase')})",
                        # Spambase short within noise is read, neither way (as in 05-evolving-direct)
                        holds=holds, why=_TARGET_RULE, evidence=len(known) + ("Spambase" in datasets
                                                                             and _read_curve(curves, "Spambase")),
                        minimum=len(others) + 1, failure_decides=True, neither_way=True)   # Spambase is needed


def claim_robust_saa_spambase(curves, *, beta: float = 0.05) -> Claim:
    """Robust-SAA with `beta` meets every target it ran on Spambase."""
    label = f"Robust-SAA (beta={beta:g})"
    ok = meets_targets(curves, dataset="Spambase", label=label)
    counted, needed = rates_counted(curves, dataset="Spambase", label=label)
    return CLAIMS.claim("05-robust-saa-spambase", fields={"beta": beta},
                        ours=_verdict_word(ok, _within_noise(curves, dataset="Spambase", label=label)), holds=ok,
                        why=_TARGET_RULE, evidence=counted, minimum=needed)


def claim_dominance(points, *, share_needed: float = 0.9, datasets=None, per_dataset: int = 0,
                    level: float = SIGN_TEST_LEVEL, simulations: int = PAPER_SIMULATIONS[100]) -> Claim:
    """SAA points strictly dominate at least `share_needed` of the plausibility-benchmark points (those of at
    least :data:`MIN_PER_POINT` counterfactuals, on a dataset whose SAA points all rest on as many:
    :func:`dominated_points`), decided once the points still open could not carry the share across it.

    Readings: *reproduced* on every judged point; *partly* where it holds only on the points within reach
    (:func:`reachable_points`; the others lie left of every SAA curve, below its start, where no SAA point can
    dominate them), if those are at least half of all points even should every open point fall out of reach;
    *differs* where it fails on every point and, besides, fails even on those within reach or fewer than half
    could be within reach should every open point fall in it (audit 44c T3: a narrower reading that excused most
    of the evidence, or all of it, said *partly* or *not run*). Set apart, in no share but among all points:
    those that keep naive's counterfactuals (``keeps_naive``, :func:`keeps_naive`), which no SAA point can dominate
    by construction (audit 40c H2). Open, in both readings and either side of reach (audit 45 F1): the points on
    fewer counterfactuals, those of a dataset with an SAA point on fewer, each dataset's points not computed yet
    (`per_dataset`, the protocol's benchmark settings, or as many as the most complete dataset has; for each
    dataset of `datasets`, the protocol's: audit 28c D2, 45b F2, 45c F3), and the judged points whose status the
    sign tests over simulations do not settle at `level` (``status_p``, :func:`status_p`; audit 40c H1). Reach is
    read on the estimates, a tie in validity within it (audit 45 F2). Once every cell of the protocol has run
    (:func:`_protocol_done`), an open point stays on the side of reach its estimates put it (audit 45d F2) and
    is a tie the sign tests cannot settle: an open reading is *undecided* (audit 45b F7). `points`: as :func:`benchmark_points` gives them."""
    if len(points) and not {"keeps_naive", "status_p"} <= set(points):
        raise ValueError("claim_dominance needs the points' keeps_naive and status_p columns: "
                         "compute the points with benchmark_points")
    bench = points[points.label.isin(BENCHMARKS)] if len(points) else points
    status = dominated_points(points)
    naive_like = points.loc[status.index, "keeps_naive"].eq(True) if len(status) else status.astype(bool)
    judged = status[~naive_like]
    settled = points.loc[judged.index, "status_p"] <= level if len(judged) else judged.astype(bool)
    within = reachable_points(points).reindex(judged.index).eq(True)
    reach = judged[within]
    computed = bench.groupby("dataset").size() if len(bench) else pd.Series(dtype=int)
    full = max(per_dataset, int(computed.max()) if len(computed) else 0)
    uncounted = len(bench) - len(status) + sum(full - int(computed.get(d, 0))
                                               for d in set(datasets or ()) | set(computed.index))
    n = dict(points=len(status) + uncounted, open=uncounted + int((~settled).sum()), uncounted=uncounted,
             kept=int(naive_like.sum()), bench=len(bench), counted=len(status))

    # once every cell of the protocol has run, the estimates are final: reach no longer moves (audit 45d F2)
    done = (datasets is not None and uncounted == 0
            and _protocol_done(points, set(points.loc[status.index, "dataset"]), simulations))

    def decides(sub, unknown):   # the share of `sub`'s settled points across `share_needed`, `unknown` points open
        firm = sub[settled[sub.index]]
        return None if sub.empty else count_decides(int(firm.sum()), unknown,
                                                    lambda k: k >= share_needed * (len(firm) + unknown) - 1e-9)

    holds_all = decides(judged, n["open"])
    holds_reach = decides(reach, int((~settled[reach.index]).sum()) if done else n["open"])
    in_reach = len(reach) if done else int((within & settled).sum())
    most_in_reach = 2 * in_reach >= n["points"]                           # should every open point fall out of reach
    few_in_reach = 2 * (in_reach + (0 if done else n["open"])) < n["points"]   # should every one fall within it
    partly = holds_all is False and holds_reach is True and most_in_reach
    holds = True if holds_all or partly else False if holds_all is False and (holds_reach is False or few_in_reach) \
        else None
    final = holds is None and done and len(judged) > 0
    shares = (f"{beside(float(judged.mean()), '.0%', share_needed)} of {len(judged)} benchmark "
              f"{'point' if len(judged) == 1 else 'points'} strictly dominated"
              + ("" if len(reach) == len(judged) else ", none within reach" if reach.empty else
                 f", {beside(float(reach.mean()), '.0%', share_needed)} of the {len(reach)} within reach"))
    keep = (f"{n['kept']} {'keeps' if n['kept'] == 1 else 'keep'} naive's counterfactuals (set apart: no SAA point "
            "can be closer, up to the MILP's gap)")
    shown = ("no benchmark point" if status.empty else f"no benchmark point to judge: {keep}" if judged.empty else
             shares + (f"; besides, {keep}" if n["kept"] else ""))
    return CLAIMS.claim("05-dominance", ours=shown, holds=holds, partly=partly, evidence=len(judged), minimum=1,
                        neither_way=final,
                        deviation=(OUT_OF_REACH if partly or (holds is False and holds_reach is not False) else None),
                        why=_dominance_why(n, judged, settled, reach, level=level, share=share_needed,
                                           simulations=simulations if final else None,
                                           readings=(holds, holds_all, holds_reach, few_in_reach)))


def _protocol_done(points, datasets, simulations: int) -> bool:
    """Whether every cell of the protocol's `simulations` has run for each of `datasets`: its SAA points (one
    cell per simulation holds them all) and its benchmark points (likewise) reach that many simulations. A
    point found in fewer has no more cells to come (audit 45c F1, F7)."""
    if "simulations" not in points:
        return False
    for _, group in points[points.dataset.isin(datasets)].groupby("dataset"):
        for kind in (group.label.str.contains("SAA"), group.label.isin(BENCHMARKS)):
            if not kind.any() or group.loc[kind, "simulations"].max() < simulations:
                return False
    return True


#: Why a benchmark point may lie out of reach of every SAA point (05-dominance's deviation).
OUT_OF_REACH = ("the benchmark points no farther than their dataset's nearest SAA point and less valid than every one "
                "lie left of every SAA curve, below its start, where no SAA point can dominate them: our curves start "
                "to the right of naive's point (for an even number of trees p*(N, 1/2) > 1/2)")

#: What "within reach" means, as :func:`reachable_points` reads it.
WITHIN_REACH = ("farther than their dataset's nearest SAA point beyond the MILP's gap, or at least as valid as that "
                "dataset's least valid one")


def _dominance_why(n, judged, settled, reach, *, level, share, simulations, readings) -> str:
    """:func:`claim_dominance`'s reason: what it counted (`n`), what is open, and which reading decided;
    `simulations`: the protocol's, once every cell of it has run and the claim is still open."""
    holds, holds_all, holds_reach, few_in_reach = readings
    unsettled = len(judged) - int(settled.sum())
    why = [f"{n['counted']} of the {n['bench']} benchmark points (isolation forest, 1-LOF) computed "
           f"{'rests' if n['counted'] == 1 else 'rest'} on at least {MIN_PER_POINT} counterfactuals beside SAA "
           "points of as many"
           + (f", {n['kept']} of them {'keeps' if n['kept'] == 1 else 'keep'} naive's counterfactuals (set apart)"
              if n["kept"] else "")]
    if unsettled:
        why.append(f"{unsettled} of the {len(judged)} judged open: sign tests over the simulations do not settle "
                   f"their status at {level:g}")
    still = (f"{n['open']} {'point' if n['open'] == 1 else 'points'} still open (on fewer counterfactuals, without SAA "
             "points of as many, not computed yet, or of a status not settled)")
    if simulations:
        why.append(f"every cell of the protocol's {simulations} simulations computed: the open points are near-ties "
                   "that no more cell can settle, and the share" + (" of the points within reach" if holds_all is False
                                                                    else "") + " is read neither way")
    elif holds is None and holds_all is False and holds_reach is True:
        why.append(f"{still} decide{'s' if n['open'] == 1 else ''} whether the points within reach are at least "
                   f"half of all {n['points']} points")
    elif holds is None and n["open"]:
        why.append(f"{still} could carry the pooled share" + (" of the points within reach" if holds_all is False
                                                              else "") + f" across {share:.0%}")
    if holds is False and holds_reach is False:
        why.append(f"it fails even on the {len(reach)} within reach ({WITHIN_REACH})")
    elif holds is False and few_in_reach:
        why.append(f"fewer than half of all {n['points']} points (counted or still open) can lie within reach "
                   f"({WITHIN_REACH}): {len(reach)} {'does' if len(reach) == 1 else 'do'} on the estimates, too few "
                   "to read the claim on those alone")
    return "; ".join(why)


def reachable_points(points, *, min_n: int = MIN_PER_POINT) -> pd.Series:
    """Per benchmark point :func:`dominated_points` judges: whether it counts in the claim's narrower reading, i.e.
    it is not left of every SAA curve and below it: it lies farther than its dataset's nearest SAA point (beyond
    :func:`_within_gap`, so an SAA point could be closer), or it is at least as valid as some SAA point (no
    farther than every one, it then matches or beats that SAA point, which the paper's claim denies). A point
    closer than every SAA point and less valid than every one is a trade-off no SAA point can dominate."""
    parts = []
    for saa, bench in _saa_and_benchmarks(points, min_n=min_n):
        gap = bench["distance"] - saa["distance"].min()
        farther = (gap > 0) & ~_within_gap(gap, bench["distance"])
        parts.append(pd.Series(farther | (bench["rate"] >= saa["rate"].min()), index=bench.index))
    return pd.concat(parts) if parts else pd.Series(dtype=bool)


#: Fewest solves behind a solve-time ratio for its claim to count it: a row of the solve-time table (naive and
#: Direct-SAA together, 05-solve-time), the naive solves of a benchmark ratio (one per factual, 05-benchmark-time).
#: A mean or median of a handful of solves is one slow solve away from any ratio.
MIN_SOLVES = 20


def _capped_side(row) -> str:
    """Which time of a :func:`solve_time_table` row's ratio Direct-SAA / naive is a lower bound, its method
    having solves the time limit stopped (averaged at the limit or, without a point, left out): "numerator"
    (Direct-SAA), "denominator" (naive), "both" or "" (none; a table without the counts has none)."""
    return _capped(row.get("direct-saa at limit", 0) > 0, row.get("naive at limit", 0) > 0)


def _capped(numerator: bool, denominator: bool) -> str:
    """Which times of a ratio our time limit capped, as :data:`CAPPED_RATIO` names them ("" none)."""
    return "both" if numerator and denominator else "numerator" if numerator else "denominator" if denominator else ""


#: What a ratio is when our time limit capped its numerator's or denominator's time (a capped time is a
#: lower bound of the time to optimality the paper measures).
CAPPED_RATIO = {"numerator": "a lower bound", "denominator": "an upper bound", "both": "no bound (both capped)"}


def _bounded(holds: bool, capped: str, *, above: bool) -> bool | None:
    """A claim "the ratio is above (`above`) or at most its threshold", `holds` at the recorded ratio, whose
    `capped` time (:data:`CAPPED_RATIO`; "" none) makes it a lower or an upper bound of the true ratio: a
    lower bound settles an "above" claim that holds and an "at most" claim that fails, an upper bound the
    converse; otherwise None (a bound on the wrong side: a missing number, not run)."""
    if capped in ("", "both"):
        return None if capped else holds
    return holds if (holds == above) == (capped == "numerator") else None


def claim_solve_time(times, *, factor: float = 2.0, min_solves: int = MIN_SOLVES) -> Claim:
    """Direct-SAA's mean solve time at most `factor` times the naive one on every (dataset, solver) row
    whose means rest on at least `min_solves` solves. A mean over solves our time limit stopped is a lower
    bound of the mean (the paper solves to optimality): such a row decides only on the side its bound allows
    (:func:`_bounded`)."""
    rows = times[times["solved"] >= min_solves] if len(times) else times
    rows = rows[rows["ratio"].notna()] if len(rows) else rows
    ratio = rows["ratio"] if len(rows) else pd.Series(dtype=float)
    capped = [_capped_side(row) for _, row in rows.iterrows()]
    bounds = [f"on {d} {CAPPED_RATIO[c]}" for d, c in zip(rows.get("dataset", pd.Series(index=rows.index, dtype=str)), capped)
              if c]
    return CLAIMS.claim("05-solve-time", evidence=len(ratio), minimum=1,
                        ours="not run" if ratio.empty else
                        f"Direct-SAA / naive mean time: {beside(ratio.min(), '.2f', factor)}-"
                        f"{beside(ratio.max(), '.2f', factor)}x over {len(ratio)} rows",
                        holds=every([_bounded(r <= factor, c, above=False) for r, c in zip(ratio, capped)]),
                        why=f"{len(ratio)} of {len(times)} rows rest on at least {min_solves} solves; small = at most "
                            f"{factor:g} times the naive time on each"
                            + (f"; solves stopped at our time limit, with or without a point (the paper solves to optimality), make the ratio "
                               f"{', '.join(bounds)}, which decides only on its side" if bounds else ""))


#: A benchmark time ratio within this factor of 1 decides neither way. Its two sides carry one machine's stamp but
#: ran hours apart, under one or two other processes on 2 cores. A judgment, not a measurement of load alone: the
#: same 11 naive cells, computed again on a second 2-core machine under load, moved their pooled median solve time
#: by 0.33x (Adult) and 0.55x (COMPAS), hardware and load together (session 40's retimes, audit 40d I3). Audit 40c
#: H3: COMPAS's 1-LOF solves, at 1.1x naive, would have decided the claim on load alone below 1.
LOAD_BAND = 2.0


def _slower(ratio: float, capped: str, band: float = LOAD_BAND) -> bool | None:
    """A benchmark ratio read with a `band` (:data:`LOAD_BAND`): True above it, False below its inverse, None
    between; a capped time decides only on its side (:func:`_bounded`)."""
    if band < 1:
        raise ValueError(f"a load band is a factor of at least 1, not {band}")
    side = True if ratio > band else False if ratio < 1 / band else None
    return None if side is None else _bounded(side, capped, above=True)


def benchmarks_run(settings: dict) -> list[str]:
    """The plausibility benchmarks (:data:`BENCHMARKS`) a scale's `settings` run: the isolation forest where it
    has contamination levels, 1-LOF where it has weights."""
    return [m for m, key in zip(BENCHMARKS, ("contaminations", "lof_weights")) if settings.get(key)]


def claim_benchmark_time(ratios, *, datasets=None, benchmarks=BENCHMARKS, min_factuals: int = MIN_SOLVES,
                         band: float = LOAD_BAND) -> Claim:
    """The plausibility benchmarks take longer to solve than the naive problem (Figure 6: "more effort,
    especially for large data sets"), read per dataset and benchmark (`ratios` of :func:`benchmark_time_ratio`,
    of the `benchmarks` the scale runs, :func:`benchmarks_run`) on every dataset of the run's protocol where
    they run (`datasets`; None: those with a ratio). A dataset counts once each benchmark has its ratio there
    on at least `min_factuals` factuals; each ratio is read with `band` (:func:`_slower`). One benchmark
    faster than naive beyond the band decides alone (*differs*). With every dataset counted: every benchmark
    slower beyond the band on every one is *reproduced*; *partly* where on each dataset one is, and the others'
    ratios lie within the band, which load alone can move, on either side of 1 (more effort shown for the
    benchmarks as a class, not for each; audits 43 N7, 43b P2: a line at 1 inside the band would let sampling
    alone flip the verdict); else *undecided*. A median over solves our time limit stopped is a lower bound
    (the paper solves to optimality): such a ratio decides only on the side its bound allows (:func:`_bounded`),
    and a lower bound within the band is no faster than it, so it allows *partly*."""
    rows = ratios[ratios["method"].isin(list(benchmarks))] if len(ratios) else ratios
    rows = rows[rows.index.isin(list(datasets))] if datasets is not None and len(rows) else rows
    enough = (rows["factuals"] >= min_factuals) & rows["ratio"].notna() if len(rows) else pd.Series(dtype=bool)
    counted_rows = rows[enough.to_numpy()] if len(rows) else rows
    decided = pd.Series([_slower(r, c, band) for r, c in zip(counted_rows["ratio"], counted_rows["capped"])],
                        index=counted_rows.index, dtype=object)
    faster = [f"{d} {m} ({r:.2f}x)" for d, m, r, v in zip(counted_rows.index, counted_rows["method"],
                                                          counted_rows["ratio"], decided) if v is False]
    whole = [d for d, g in counted_rows.groupby(level=0, sort=False) if set(benchmarks) <= set(g["method"])]
    in_whole = counted_rows.index.isin(whole)
    counted, read = (counted_rows[in_whole], decided[in_whole]) if len(counted_rows) else (counted_rows, decided)
    open_rows = counted[read.isna().to_numpy()] if len(counted) else counted
    # an open reading is one only where each open ratio is a time within the band; a capped median is a missing
    # number (audit 41b J1), though a lower bound within the band is no faster than it (43b P4)
    read_open = bool(len(counted)) and (open_rows["capped"] == "").all()
    no_faster = bool(len(counted)) and ((open_rows["capped"] == "")
                                        | ((open_rows["capped"] == "numerator") & (open_rows["ratio"] >= 1 / band))).all()
    slower_on_each = bool(len(read)) and read.eq(True).groupby(level=0).any().all()
    if faster:  # one benchmark faster on enough factuals decides, whatever the other one has
        holds, partly = False, False
    elif len(read) and read.eq(True).all():
        holds, partly = True, False
    elif slower_on_each and no_faster:
        holds, partly = True, True
    else:
        holds, partly = None, False
    shown = [f"{d}: " + ", ".join(f"{m} {beside(r, '.1f', 1 / band, band)}x" if pd.notna(r) else f"{m} no ratio"
                                   for m, r in zip(g["method"], g["ratio"]))
             for d, g in rows.groupby(level=0, sort=False) if g["ratio"].notna().any()] if len(rows) else []
    within = [f"{d} {m} ({r:.2f}x)" for d, m, r, c in zip(counted.index, counted["method"], counted["ratio"],
                                                          counted["capped"]) if 1 / band <= r <= band and not c]
    bounds = [f"{d} {m} {CAPPED_RATIO[c]}" for d, m, c in zip(counted.index, counted["method"], counted["capped"]) if c]
    few = sorted({f"{d} on {int(n)}" for d, n in rows["factuals"].items() if n < min_factuals}) if len(rows) else []
    ratioless = [f"{d} {m}" for d, m, r, n in zip(rows.index, rows["method"], rows["ratio"], rows["factuals"])
                 if pd.isna(r) and n >= min_factuals] if len(rows) else []
    missing = [f"{d} {m}" for d, g in rows.groupby(level=0, sort=False) for m in benchmarks
               if m not in set(g["method"])] if len(rows) else []
    other = ({d: int(n) for d, n in rows.groupby(level=0)["other_machine"].first().items() if n}
             if len(rows) and "other_machine" in rows else {})
    named = len(whole)  # the datasets of the protocol counted: a ratio elsewhere stands in for none
    n_all = rows.index.nunique() if len(rows) else 0
    minimum = max(len(datasets or ()), 1)
    partly = partly and named >= minimum   # said so only where the verdict is partly (audit 43c Q1)
    # all counted, yet open: a capped median on the wrong side of its bound, not too few factuals (43b P4, 43c Q5)
    bound_open = holds is None and named >= minimum and not read_open
    return CLAIMS.claim("05-benchmark-time", evidence=named, minimum=minimum,
                 failure_decides=holds is False, neither_way=read_open, partly=partly,
                 deviation=(f"our solve times, from shared 2-core machines under load, resolve a ratio only beyond "
                            f"{band:g}x, so within it a benchmark's extra effort is not shown" if partly else None),
                 undecided_by=("our time limit capped a median whose bound does not decide (the paper solves to "
                               "optimality)" if bound_open else ""),
                 ours="; ".join(shown) or "not run",
                 holds=holds,
                 why="each benchmark's median solve time over naive's, per dataset (Figure 6's boxes); "
                     f"{named} of {n_all} datasets have each benchmark's ratio on at least {min_factuals} factuals"
                     + (f" ({', '.join(few)})" if few else "")
                     + (f"; faster than naive beyond {band:g}x: {', '.join(faster)}" if faster else "")
                     + (f"; no ratio (no solve on the machine of the other side, or naive's median 0 s): "
                        f"{', '.join(ratioless)}" if ratioless else "")
                     + (f"; not run: {', '.join(missing)}" if missing else "")
                     + (f"; within {band:g}x of 1, which load alone can move, so more effort is not shown for: "
                        f"{', '.join(within)}" + ("; on each dataset another benchmark shows it, so the claim "
                                                  "partly holds" if partly else "") if within else "")
                     + (f"; left out, whose naive and benchmark cells do not carry one machine's stamp (times of "
                        f"two machines do not compare; cells before the processor was recorded name none; "
                        f"`python -m explainopt.book retime 05` computes one side again on the other's machine): "
                        f"{', '.join(f'{d} {n}' for d, n in other.items())} factuals" if other else "")
                     + (f"; solves stopped at our time limit (the paper solves to optimality) make the ratio of "
                        f"{', '.join(bounds)}, which decides only on its side" if bounds else ""))


def claim_evolving_direct(curves, *, datasets=ENSEMBLE_DATASETS) -> Claim:
    """Evolving data (Appendix C.5): Direct-SAA misses the target exactly on the datasets of
    :data:`EVOLVING_ROBUST` (the two smallest and Spambase) among ours; needs every one of `datasets`, each read
    by :func:`misses_a_target` whichever side the paper puts it on (audit 39c F1: Adult, short of all 8 targets
    within noise, counted as meeting them while Students-Performance, as short, counted as undecided)."""
    misses = {d: misses_a_target(curves, dataset=d) for d in datasets}      # every dataset read the same way
    known = {d: v for d, v in misses.items() if v is not None}
    missed = sorted(d for d, v in known.items() if v)
    short = sorted(d for d in datasets if misses[d] is None and _read_curve(curves, d))
    as_paper = sum(v == (d in EVOLVING_ROBUST) for d, v in known.items())   # misses exactly where the paper's do
    holds = count_decides(as_paper, len(datasets) - len(known), lambda k: k == len(datasets))
    complete = [d for d in short if _simulations(curves, d) >= PAPER_SIMULATIONS[100]]
    filling = [f"{d} on {_simulations(curves, d)}" for d in short if d not in complete and _simulations(curves, d)]
    return CLAIMS.claim("05-evolving-direct",
                 ours=(f"{len(known) - len(missed)} of {len(known)} meet it; misses: {', '.join(missed) or 'none'}"
                       + (f"; short of a target within noise: {', '.join(short)}" if short else "")
                       if known or short else "not run"),
                        # a dataset short within noise is read (every rate on enough counterfactuals), neither way
                        holds=holds, evidence=len(known) + len(short), minimum=len(datasets), failure_decides=True,
                        neither_way=True,
                        why=_TARGET_RULE + (f"; {', '.join(complete)}: every one of the paper's {PAPER_SIMULATIONS[100]} "
                                            "simulations computed and still short within noise, which more cells of "
                                            "the paper's protocol cannot decide" if complete else "")
                            + (f"; short within noise on fewer than the paper's {PAPER_SIMULATIONS[100]} simulations, "
                               f"which more may decide: {', '.join(filling)}" if filling else ""))


def _simulations(curves, dataset: str, label: str = "Direct-SAA", min_target: float = 0.5) -> int:
    """The most simulations behind a point of `dataset`'s `label` curve (0 without one)."""
    sub = curve_points(curves, dataset=dataset, label=label, min_target=min_target)
    return int(sub["simulations"].max()) if len(sub) and "simulations" in sub else 0


def claim_evolving_robust(curves, *, beta: float = 0.05) -> Claim:
    """Evolving data (Appendix C.5): Robust-SAA with `beta` meets every target on each dataset of
    :data:`EVOLVING_ROBUST`."""
    label = f"Robust-SAA (beta={beta:g})"
    ok = {d: meets_targets(curves, dataset=d, label=label) for d in EVOLVING_ROBUST}
    known = {d: v for d, v in ok.items() if v is not None}
    holds = count_decides(sum(known.values()), len(EVOLVING_ROBUST) - len(known), lambda k: k == len(EVOLVING_ROBUST))
    return CLAIMS.claim("05-evolving-robust", fields={"beta": beta},
                        ours=", ".join(f"{d}: {_verdict_word(v, _within_noise(curves, dataset=d, label=label))}"
                                       for d, v in ok.items()),
                        holds=holds, why=_TARGET_RULE, evidence=len(known), minimum=len(EVOLVING_ROBUST),
                        failure_decides=True)


def claim_sparse_adult(curves) -> Claim:
    """Appendix C.3 (Figures 7 and 8): Adult's Direct-SAA counterfactuals change fewer features than
    Credit-Card-Default's (mean over every counterfactual and alpha of the run, not one factual)."""
    direct = curves[curves.label == "Direct-SAA"].dropna(subset=["n_changed", "n"]) if len(curves) else curves
    groups = {d: direct[direct.dataset == d] for d in ("Adult", "Credit-Card-Default")} if len(direct) else {}
    mean = {d: (g["n_changed"] * g["n"]).sum() / g["n"].sum() for d, g in groups.items() if g["n"].sum() > 0}
    ran = len(mean) == 2
    middle = sum(mean.values()) / 2 if ran else None      # each printed on its side of it: the pair reads right
    return CLAIMS.claim("05-sparse-adult",
                 ours=", ".join(f"{d} {beside(m, '.1f', middle)}" for d, m in mean.items()) + " features changed (mean)"
                        if mean else "not run", holds=mean["Adult"] < mean["Credit-Card-Default"] if ran else None,
                        why="mean number of changed features of the Direct-SAA counterfactuals, every alpha",
                        evidence=len(mean), minimum=2)


#: Fewest Direct-SAA counterfactuals behind a dataset's change frequencies for the importance claim to
#: count its rank correlation.
MIN_CHANGES = 10


def change_counts(tables: dict) -> pd.Series:
    """Per dataset, how many counterfactuals the changes of :func:`importance_and_changes` average."""
    return pd.Series({d: int(t["counterfactuals"].iloc[0]) if len(t) else 0 for d, t in tables.items()},
                     dtype=int)


def claim_importance(correlation, *, counterfactuals=None, minimum: float = 0.5,
                     min_counterfactuals: int = MIN_CHANGES) -> Claim:
    """Spearman(importance, change) above `minimum` on every dataset shown whose changes rest on at least
    `min_counterfactuals` counterfactuals (`counterfactuals`: :func:`change_counts`; none given, none count)."""
    counts = pd.Series(dtype=int) if counterfactuals is None else counterfactuals
    kept = correlation[[counts.get(d, 0) >= min_counterfactuals for d in correlation.index]]
    return CLAIMS.claim("05-importance", evidence=len(kept), minimum=1,
                        ours=", ".join(f"{d} {beside(c, '.2f', minimum)}" for d, c in kept.items()) or "not run",
                        holds=every(kept, lambda c: c > minimum),
                        why=f"{len(kept)} of {len(correlation)} datasets shown rest on at least {min_counterfactuals} "
                            f"counterfactuals; Spearman rank correlation > {minimum:g} on each")


def claim_large_forests(table3, *, minimum: int = MIN_PER_DATASET, level: float = 0.95) -> Claim:
    """With N = 400 trees naive validity on Spambase "falls below 25%" (Table 3), on at least `minimum`
    counterfactuals, read as ``05-spambase-naive`` reads its rate (:func:`rate_below`). (Audit 18: on the
    rate alone, a run as faithful as the paper's own 24% read *differs* about half the time.)"""
    row = table3[table3.dataset == "Spambase"] if len(table3) else pd.DataFrame(columns=["ours [%]", "n"])
    n = int(row["n"].iloc[0]) if len(row) else 0
    if n > 0 and not missing(row["ours [%]"].iloc[0]):
        below = rate_below(row, 25, level=level, paper_simulations=PAPER_SIMULATIONS[400], minimum=minimum)
        below["ours"] = f"Spambase {below['ours']}"
    else:
        below = {"ours": "not run", "holds": None, "partly": False}
    return CLAIMS.claim("05-large-forests",
                        paper=f"{naive_validity_paper(400)['Spambase']}% on Spambase, {CLAIMS.paper('05-large-forests')}",
                        **below, why="low = below 25% on Spambase; partly = our rate is not below 25% but its interval "
                                     "reaches below it", evidence=n, minimum=minimum)


def claims(*, checks, table1, curves, points, times, correlation, table3, datasets,
           benchmark_times=None, evolving_curves=None, importance_counterfactuals=None,
           benchmark_datasets=None, benchmarks=BENCHMARKS, benchmark_settings: int = 0) -> list[Claim]:
    """The chapter's claims, each decided from the run (*not run* where its data are missing);
    `importance_counterfactuals`: :func:`change_counts` of the importance tables behind `correlation`;
    `benchmark_datasets`: the datasets the scale runs the plausibility benchmarks on, `benchmarks` which
    (:func:`benchmarks_run`), `benchmark_settings` how many points per dataset (contamination levels and LOF
    weights)."""
    benchmark_times = pd.DataFrame(columns=BENCHMARK_RATIO_COLUMNS) if benchmark_times is None else benchmark_times
    if evolving_curves is None or evolving_curves.empty:
        evolving_curves = pd.DataFrame(columns=["dataset", "label", "target", "high", "n"])
    return [claim_verified(checks), claim_naive_below_half(table1), claim_spambase_naive(table1),
            claim_direct_saa_targets(curves, datasets=datasets), claim_robust_saa_spambase(curves),
            claim_sparse_adult(curves),
            claim_dominance(points, datasets=benchmark_datasets, per_dataset=benchmark_settings), claim_solve_time(times),
            claim_benchmark_time(benchmark_times, datasets=benchmark_datasets, benchmarks=benchmarks),
            claim_importance(correlation, counterfactuals=importance_counterfactuals), claim_large_forests(table3), claim_evolving_direct(evolving_curves),
            claim_evolving_robust(evolving_curves)]
