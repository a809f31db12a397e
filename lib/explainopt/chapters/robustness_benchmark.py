"""Chapter 6: one benchmark of robust counterfactuals under every chapter's notion of robustness.

Chapters 2, 4 and 5 each defend one notion of robustness and measure their method against it only:
perturbations of the counterfactual's features (chapter 2, a ball of radius rho), shifts of a network's
parameters (chapter 4, Delta) and the randomness of retraining a forest (chapter 5, tolerance alpha).
This chapter measures every method under every notion, on the same data, models and factuals, with the
exact measures of :mod:`explainopt.counterfactuals.robustness`.

* **Data and models** (:func:`prepare`): a dataset the other chapters hold, min-max scaled, shuffled with
  the seed; up to ``n_train`` rows train a random forest (``max_features="sqrt"``) and a ReLU network
  (scikit-learn's MLP, two hidden layers, as a torch ``nn.Sequential``); the same rows, new seeds, train
  the retrained forests and networks. The factuals are held-out rows that *both* models predict class 0,
  so every method explains the same points (target: class 1).
* **Methods** (:data:`METHODS`, one cell per (dataset, model, factual): :func:`factual_cell`): the nearest
  counterfactual, the robust region (chapter 2), PROPLACE (chapter 4, networks), Direct-SAA and
  Robust-SAA (chapter 5, forests), MILP-R and the gradient baselines Wachter and ROAR-style (networks),
  each at its paper's parameter and, at the book and paper scales, at the other values of
  :data:`SCALES`' sweeps; plus the *stretched nearest* counterfactual: the nearest one moved along its
  own direction to the robust region's distance, the matched-budget control (does a method buy
  robustness, or only distance?), and, as H7's and H9's comparators (:data:`STRETCHED_TO`), the nearest
  one stretched to each PROPLACE and Direct-SAA counterfactual's own distance. All methods search the
  box [0, 1]^d, every feature relaxed to a continuous one (as chapter 4's protocol does).
* **Measures** per counterfactual: the certified input radius (l-infinity and l2), the largest model
  shift Delta (interval and exact, networks), validity under the retrained models of its family (with a
  Clopper-Pearson interval when pooled), the forest score's margin over ``p*(N, alpha)``; costs:
  normalised l1 distance, sparsity and the 10-LOF.
* **Results**: :func:`summary_table`, :func:`matched_budget_table`, :func:`threat_table` (which method for
  which threat), :func:`plot_cost_robustness` and :func:`plot_threat_slider`, and :func:`claims`, the
  hypotheses stated at the top of the chapter with verdicts from the run.
"""

from __future__ import annotations

import functools
import math
import time
import warnings

import numpy as np
import pandas as pd
from sklearn.exceptions import ConvergenceWarning
from sklearn.neural_network import MLPClassifier

from .. import experiments
from ..counterfactuals import baselines, gradient_baselines, nearest_counterfactual
from ..counterfactuals.costs import LofScorer, l1_distance, sparsity
from ..counterfactuals.ensembles import binomial_interval, ensemble_counterfactual, score_threshold
from ..counterfactuals.proplace import RobustNeighbours, plausible_vertices, proplace
from ..counterfactuals.regions import robust_region
from ..counterfactuals.robustness import input_radius, largest_delta, score_margin
from ..datasets import load_dataset
from ..encoders import model_predict, torch_network
from ..featurespace import box_spec
from ..reporting import NOT_RUN, UNDECIDED, Claim
from ..training import train_forest
from ..verdicts import SIGN_TEST_LEVEL, ClaimBook, all_of_at_least, beside, sign_test
from . import paper_table, solver_key
from .model_shifts import DELTAS as PROPLACE_DELTAS
from .model_shifts import MILP_R_DELTA

CHAPTER = "06"
DATASETS = ["robust-ce/banknote", "robust-ce/diabetes", "carla/compas", "ensembles/German-Credit", "carla/adult",
            "carla/heloc"]
MODELS = ("network", "forest")
NEAREST, STRETCHED, REGION, PROPLACE = "nearest", "stretched nearest", "robust region", "PROPLACE"
MILP_R, WACHTER, ROAR = "MILP-R", "Wachter", "ROAR-style"
DIRECT_SAA, ROBUST_SAA = "Direct-SAA", "Robust-SAA"
#: Not a method but H7's and H9's comparator: the nearest counterfactual stretched to the distance of one
#: counterfactual of the method named in the row's ``against`` (PROPLACE, Direct-SAA), at its ``param``.
#: Left out of every table (:func:`methods_only`).
STRETCHED_TO = "nearest stretched to a method"
#: The methods whose every counterfactual gets a :data:`STRETCHED_TO` comparator (H7, H9).
MATCHED_BY_STRETCH = (PROPLACE, DIRECT_SAA)
#: The methods run on each model family, in the order of the tables.
METHODS = {"network": (NEAREST, STRETCHED, REGION, PROPLACE, MILP_R, WACHTER, ROAR),
           "forest": (NEAREST, STRETCHED, REGION, DIRECT_SAA, ROBUST_SAA)}
ALL_METHODS = tuple(dict.fromkeys(METHODS["network"] + METHODS["forest"]))
#: The parameters the papers recommend: chapter 2's larger radius (l-infinity ball), chapter 4's delta
#: where it has one for the dataset (else the middle of its range), chapter 5's alpha = 0.1 and beta = 0.05.
RHO, NORM, DELTA_DEFAULT, ALPHA, BETA = 0.05, "linf", 0.03, 0.1, 0.05
K_NEIGHBOURS = 20  # PROPLACE's plausible region: the factual and its 20 nearest Delta-robust points
#: The measures (columns of the result rows) and what each says; the threats of :func:`threat_table`.
MEASURES = {"radius_linf": "certified l∞ input radius", "radius_l2": "certified l2 input radius",
            "delta_exact": "largest model shift Δ (exact)", "delta_interval": "largest model shift Δ (interval)",
            "retrained": "validity under retraining", "margin": "score margin over p*(N, α)"}
#: Largest radius and Delta the measures search (a value equal to the cap means "at least the cap").
RADIUS_CAP, DELTA_CAP = 0.25, 0.25
#: A feature counts as changed (the ``sparsity`` cost) when it moves by more than this.
SPARSITY_TOLERANCE = 1e-4

SCALES = {
    # smoke: two small datasets, two factuals, small models, MILP-R left out (its margin steps are the slowest)
    "smoke": dict(datasets=DATASETS[:2], n_factuals=2, n_train=600, width=8, n_trees=20, depth=3, n_retrained=3,
                  methods=[m for m in ALL_METHODS if m != MILP_R], norms=["linf"], forest_norms=["linf"],
                  rhos=[RHO], forest_rhos=[RHO], delta_factors=[1.0], alphas=[ALPHA], region_time_limit=2,
                  time_limit=30, milp_r_steps=10, gradient_steps=100, tol=1e-2, cache=False),
    # book: the six datasets, three factuals each, every method; parameter sweeps where they are cheap
    # (networks' rho and delta, forests' alpha); forests of 25 trees of depth 3 keep their exact MILPs
    # (the certified radius above all, l2 most of all) within seconds
    "book": dict(datasets=DATASETS, n_factuals=3, n_train=1000, width=10, n_trees=25, depth=3, n_retrained=10,
                 methods=list(ALL_METHODS), norms=["linf", "l2"], forest_norms=["linf"], rhos=[0.02, RHO, 0.1],
                 forest_rhos=[RHO], delta_factors=[0.5, 1.0, 2.0], alphas=[0.3, ALPHA, 0.01], region_time_limit=10,
                 time_limit=60, milp_r_steps=10, gradient_steps=300, tol=1e-3, cache=True),
    # paper: chapter 5's forests (100 trees of depth 4), twenty factuals, every sweep, both norms everywhere
    "paper": dict(datasets=DATASETS, n_factuals=20, n_train=3000, width=20, n_trees=100, depth=4, n_retrained=20,
                  methods=list(ALL_METHODS), norms=["linf", "l2"], forest_norms=["linf", "l2"],
                  rhos=[0.01, 0.02, RHO, 0.1], forest_rhos=[0.02, RHO, 0.1], delta_factors=[0.5, 1.0, 2.0],
                  alphas=[0.5, 0.3, ALPHA, 0.05, 0.01], region_time_limit=120, time_limit=600, milp_r_steps=25,
                  gradient_steps=300, tol=1e-4, cache=True),
}


def short(dataset: str) -> str:
    """``carla/adult`` -> ``adult``."""
    return dataset.split("/")[-1]


def proplace_delta(dataset: str) -> float:
    """Chapter 4's delta for the dataset (the authors' per-dataset value), else :data:`DELTA_DEFAULT`."""
    return PROPLACE_DELTAS.get(dataset, DELTA_DEFAULT)


# --------------------------------------------------------------------------- data and models

def train_network(X, y, *, width: int, random_state: int):
    """Two hidden ReLU layers of `width` (scikit-learn's MLP, Adam, early stopping off), as a frozen float64
    torch ``nn.Sequential`` computing the class-1 logit (every method and measure reads it)."""
    mlp = MLPClassifier(hidden_layer_sizes=(width, width), max_iter=300, random_state=random_state)
    with warnings.catch_warnings():  # 300 epochs is the budget, converged or not (the accuracy is reported)
        warnings.simplefilter("ignore", ConvergenceWarning)
        mlp.fit(np.asarray(X, float), np.asarray(y, int))
    return torch_network(mlp)


@functools.cache
def prepare(dataset: str, *, n_train: int, width: int, n_trees: int, depth: int, n_retrained: int,
            seed: int = 0) -> dict:
    """Scaled data, the two models and their retrained copies, and the factual candidates (module
    docstring), memoised per process. Retrained copies use seeds ``seed + 1 ... seed + n_retrained`` on the
    same training rows: the randomness of retraining that chapter 5 guards against."""
    data = load_dataset(dataset).scaled()
    X, y = data.X.to_numpy(float), np.asarray(data.y, int)
    order = np.random.default_rng(seed).permutation(len(X))
    train, held_out = order[:min(n_train, len(X) // 2)], order[min(n_train, len(X) // 2):]
    X_train, y_train = X[train], y[train]
    started = time.perf_counter()
    models = {"network": train_network(X_train, y_train, width=width, random_state=seed),
              "forest": train_forest(X_train, y_train, n_estimators=n_trees, max_depth=depth, random_state=seed)}
    retrained = {"network": [train_network(X_train, y_train, width=width, random_state=seed + k)
                             for k in range(1, n_retrained + 1)],
                 "forest": [train_forest(X_train, y_train, n_estimators=n_trees, max_depth=depth, random_state=seed + k)
                            for k in range(1, n_retrained + 1)]}
    X_held = X[held_out]
    negative = np.ones(len(X_held), bool)
    for model in models.values():
        negative &= model_predict(model, X_held) == 0
    accuracy = {name: float((model_predict(m, X_held) == y[held_out]).mean()) for name, m in models.items()}
    return dict(dataset=dataset, X_train=X_train, y_train=y_train, factuals=X_held[negative], models=models,
                retrained=retrained, accuracy=accuracy, train_time=time.perf_counter() - started,
                n_features=X.shape[1], n_rows=len(X))


def models_table(results: list) -> pd.DataFrame:
    """Per dataset (from the cells' ``meta``): rows, features, training rows, held-out accuracy of both
    models, factual candidates (held-out rows both models predict 0)."""
    metas = {cell["meta"]["dataset"]: cell["meta"] for cell in results if cell}
    return pd.DataFrame(list(metas.values()))


# --------------------------------------------------------------------------- methods

def stretch(x0, x, distance: float) -> np.ndarray:
    """The point on the ray from `x0` through `x` at normalised l1 distance `distance` (clipped to [0, 1]):
    the nearest counterfactual given another method's budget."""
    x0, x = np.asarray(x0, float), np.asarray(x, float)
    own = l1_distance(x, x0)
    return x.copy() if own <= 0 else np.clip(x0 + (x - x0) * (distance / own), 0.0, 1.0)


def _ce(method, param, result, **extra) -> dict:
    return dict(method=method, param=param, x=None if result.x is None else np.asarray(result.x, float),
                status=result.detail, time=result.time, solver=result.solver,
                fallback_from=getattr(result, "fallback_from", None), **extra)


def run_methods(prep: dict, model_name: str, x0, *, rhos, delta_factors, alphas, region_time_limit: float,
                gradient_steps: int, methods=ALL_METHODS, time_limit: float | None = None, milp_r_steps: int = 25,
                solver=None) -> list[dict]:
    """The methods of :data:`METHODS` for `model_name` that are in `methods` (the nearest counterfactual
    always) on the factual `x0`, at each swept parameter (the recommended one flagged ``recommended``);
    returns one dict per counterfactual (x None: not found). time_limit: seconds per MILP of the nearest,
    SAA, PROPLACE and MILP-R problems; milp_r_steps: MILP-R's margin steps."""
    methods = set(methods) | {NEAREST}
    model, d = prep["models"][model_name], len(x0)
    lower, upper = np.zeros(d), np.ones(d)
    dataset = prep["dataset"]
    out = []
    nearest = nearest_counterfactual(model, x0, lower=lower, upper=upper, norm="l1", solver=solver,
                                     time_limit=time_limit)
    out.append(_ce(NEAREST, None, nearest, recommended=True))
    region_at_rho = None
    for rho in (rhos if REGION in methods else ()):
        res = robust_region(model, x0, rho=rho, norm=NORM, target=1, time_limit=region_time_limit, solver=solver)
        out.append(_ce(REGION, rho, res, recommended=rho == RHO))
        if rho == RHO:
            region_at_rho = res
    if STRETCHED in methods and nearest.x is not None and region_at_rho is not None and region_at_rho.x is not None:
        budget = l1_distance(region_at_rho.x, x0)
        x = stretch(x0, nearest.x, budget)
        out.append(dict(method=STRETCHED, param=RHO, x=x, status="stretched", time=0.0, solver="", recommended=True,
                        fallback_from=None))
    if model_name == "network":
        base = proplace_delta(dataset)
        for factor in (delta_factors if PROPLACE in methods else ()):
            delta = base * factor
            try:
                neighbours = RobustNeighbours(model, prep["X_train"], delta=delta)
            except ValueError:  # no training point is Delta-robust: PROPLACE has no plausible region
                out.append(dict(method=PROPLACE, param=delta, x=None, status="no robust neighbours", time=0.0,
                                solver="", recommended=factor == 1.0, fallback_from=None))
                continue
            vertices = plausible_vertices(x0, neighbours.query(x0, K_NEIGHBOURS))
            out.append(_ce(PROPLACE, delta, proplace(model, x0, vertices, delta=delta, solver=solver,
                                                     time_limit=time_limit), recommended=factor == 1.0))
        if MILP_R in methods:
            own = MILP_R_DELTA.get(dataset, 0.05)  # MILP-R's own delta_target (chapter 4), 0.05 elsewhere
            found = baselines.milp_r(model, x0, delta=own, max_steps=milp_r_steps, solver=solver, time_limit=time_limit)
            out.append(_ce(MILP_R, own, found, recommended=True))
        if WACHTER in methods:
            out.append(_ce(WACHTER, None, gradient_baselines.wachter(model, x0, steps=gradient_steps), recommended=True))
        if ROAR in methods:
            out.append(_ce(ROAR, base, gradient_baselines.roar_style(model, x0, delta=base, steps=gradient_steps),
                           recommended=True))
    else:
        spec, n_trees = box_spec(d), len(model.estimators_)
        for alpha in alphas:
            for method, beta in ((DIRECT_SAA, None), (ROBUST_SAA, BETA)):
                if method not in methods:
                    continue
                name = "direct-saa" if beta is None else "robust-saa"
                tau = score_threshold(name, n_estimators=n_trees, alpha=alpha, beta=beta)
                res = ensemble_counterfactual(model, x0, spec=spec, tau=tau, target=1, weights=np.ones(d),
                                              solver=solver, time_limit=time_limit)
                if res.relaxed:  # the threshold is out of the forest's reach: not a counterfactual of the method
                    res.x = None
                out.append(_ce(method, alpha, res, recommended=alpha == ALPHA, tau=tau))
    if STRETCHED in methods and nearest.x is not None:
        out += [stretched_to(x0, nearest.x, ce) for ce in out
                if ce["method"] in MATCHED_BY_STRETCH and ce["x"] is not None]
    return out


def stretched_to(x0, nearest_x, ce: dict) -> dict:
    """H7's and H9's comparator for the counterfactual `ce` (a row of :func:`run_methods`): the nearest
    counterfactual stretched to `ce`'s l1 distance from `x0` (the distance :func:`measure` gives it, of the
    point clipped to the box), labelled :data:`STRETCHED_TO` with ``against`` and ``param`` naming `ce`'s
    method and parameter. (Added after audit 14: the nearest counterfactual itself lies on the decision
    boundary, so its radius is the MILP's strictness margin and any robust method beats it.)"""
    x = stretch(x0, nearest_x, l1_distance(np.clip(ce["x"], 0.0, 1.0), x0))
    return dict(method=STRETCHED_TO, param=ce["param"], x=x, status="stretched", time=0.0, solver="",
                recommended=ce["recommended"], fallback_from=None, against=ce["method"])


# --------------------------------------------------------------------------- measures (one cell)

def measure(prep: dict, model_name: str, x0, ce: dict, *, norms, lof: LofScorer, nearest_distance: float | None,
            tol: float, time_limit: float | None = None, solver=None) -> dict:
    """The robustness measures and costs of one counterfactual (module docstring); NaN where a measure
    does not apply (Delta for forests, the score margin for networks) or nothing was found."""
    model, x = prep["models"][model_name], ce["x"]
    row = {k: v for k, v in ce.items() if k != "x"}
    row.update(found=x is not None, valid=False, distance=math.nan, sparsity=math.nan, lof=math.nan,
               radius_linf=math.nan, radius_l2=math.nan, delta_interval=math.nan, delta_exact=math.nan,
               retrained=math.nan, n_retrained=len(prep["retrained"][model_name]), margin=math.nan,
               excess_distance=math.nan, tol=tol, measure_time=0.0)
    if x is None:
        return row
    started = time.perf_counter()
    x = np.clip(x, 0.0, 1.0)
    valid = bool(model_predict(model, x)[0] == 1)
    row.update(valid=valid, distance=l1_distance(x, x0), sparsity=sparsity(x, x0, tol=SPARSITY_TOLERANCE),
               lof=float(lof(x)[0]),
               retrained=float(np.mean([model_predict(m, x)[0] == 1 for m in prep["retrained"][model_name]])),
               x=[float(v) for v in x])
    if nearest_distance is not None:
        row["excess_distance"] = row["distance"] - nearest_distance
    for norm in norms:
        row[f"radius_{norm}"] = input_radius(model, x, norm=norm, cap=RADIUS_CAP, solver=solver, time_limit=time_limit)
    if model_name == "network":
        shift = largest_delta(model, x, cap=DELTA_CAP, tol=tol, solver=solver, time_limit=time_limit)
        row.update(delta_interval=shift.interval, delta_exact=shift.exact)
    else:
        row["margin"] = score_margin(model, x, alpha=ALPHA)
    row["measure_time"] = time.perf_counter() - started
    return row


def factual_cell(*, dataset: str, model: str, factual: int, n_train: int, width: int, n_trees: int, depth: int,
                 n_retrained: int, seed: int, methods, norms, forest_norms, rhos, forest_rhos, delta_factors, alphas,
                 region_time_limit: float, time_limit: float, milp_r_steps: int, gradient_steps: int, tol: float,
                 solver=None) -> dict:
    """One cell of the grid: every method on the `factual`-th factual of `dataset` for `model` (``network``
    or ``forest``), each counterfactual measured. Returns ``rows`` (one per counterfactual), the solvers
    used (``solver``) and ``available`` (False when the dataset has fewer factuals)."""
    prep = prepare(dataset, n_train=n_train, width=width, n_trees=n_trees, depth=depth, n_retrained=n_retrained,
                   seed=seed)
    meta = {"dataset": short(dataset), "rows": prep["n_rows"], "features": prep["n_features"],
            "training rows": len(prep["X_train"]), "network accuracy": prep["accuracy"]["network"],
            "forest accuracy": prep["accuracy"]["forest"], "factual candidates": len(prep["factuals"])}
    if factual >= len(prep["factuals"]):
        return dict(rows=[], solver="", available=False, meta=meta)
    x0 = prep["factuals"][factual]
    found = run_methods(prep, model, x0, methods=list(methods), rhos=list(rhos if model == "network" else forest_rhos),
                        time_limit=time_limit, milp_r_steps=milp_r_steps, delta_factors=list(delta_factors), alphas=list(alphas),
                        region_time_limit=region_time_limit, gradient_steps=gradient_steps, solver=solver)
    trained = prep["models"][model]
    positive = prep["X_train"][model_predict(trained, prep["X_train"]) == 1]
    lof = LofScorer(positive)
    nearest = found[0]["x"]
    nearest_distance = None if nearest is None else l1_distance(np.clip(nearest, 0, 1), x0)
    rows = []
    for ce in found:
        row = measure(prep, model, x0, ce, norms=norms if model == "network" else forest_norms, lof=lof, nearest_distance=nearest_distance, tol=tol,
                      time_limit=time_limit, solver=solver)
        rows.append(dict(dataset=short(dataset), model=model, factual=factual, **row))
    used = sorted({s for r in rows for s in str(r["solver"]).split("+") if s})
    return dict(rows=rows, solver="+".join(used), available=True, meta=meta)


#: The claims each grid decides (what a budgeted run prints in its plan).
GRID_CLAIMS = {"benchmark": ["H1-H11 (every hypothesis, on every data set and model)"]}


def grids(S: dict, *, seed: int = 0, solver: str | None = "auto") -> dict[str, experiments.Grid]:
    """The chapter's one grid, ``benchmark``: a cell per (dataset, model, factual), factual-major (the
    first factual of every dataset and model first: every hypothesis gets evidence early)."""
    solver = solver_key(solver)
    common = dict(n_train=S["n_train"], width=S["width"], n_trees=S["n_trees"], depth=S["depth"],
                  n_retrained=S["n_retrained"], seed=seed, methods=list(S["methods"]), norms=list(S["norms"]),
                  forest_norms=list(S["forest_norms"]), rhos=list(S["rhos"]), forest_rhos=list(S["forest_rhos"]),
                  delta_factors=list(S["delta_factors"]), alphas=list(S["alphas"]),
                  region_time_limit=S["region_time_limit"], time_limit=S["time_limit"], milp_r_steps=S["milp_r_steps"],
                  gradient_steps=S["gradient_steps"], tol=S["tol"],
                  solver=solver)
    configs = [dict(dataset=ds, model=m, factual=i, **common)
               for i in range(S["n_factuals"]) for ds in S["datasets"] for m in MODELS]
    return {"benchmark": experiments.Grid(factual_cell, configs, order=list(range(len(configs))))}


def frame(results: list) -> pd.DataFrame:
    """All counterfactual rows of the grid's results (None: a cell not computed yet)."""
    rows = [r for cell in results if cell for r in cell["rows"]]
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- tables

def methods_only(df: pd.DataFrame) -> pd.DataFrame:
    """The rows of the methods: H7's and H9's comparators (:data:`STRETCHED_TO`) left out."""
    return df[df["method"] != STRETCHED_TO] if len(df) else df


def recommended(df: pd.DataFrame) -> pd.DataFrame:
    """The rows of each method at its paper's parameter."""
    df = methods_only(df)
    return df[df["recommended"].eq(True)] if len(df) else df


SUMMARY_COLUMNS = ["found", "valid", "distance", "sparsity", "lof", "radius_linf", "radius_l2", "delta_interval",
                   "delta_exact", "retrained", "margin", "time"]


def _ordered(df: pd.DataFrame, by: list) -> pd.DataFrame:
    rank = {m: i for i, m in enumerate(dict.fromkeys(METHODS["network"] + METHODS["forest"]))}
    return df.sort_values(by, key=lambda s: s.map(rank) if s.name == "method" else s)


def summary_table(df: pd.DataFrame, *, by=("model", "method")) -> pd.DataFrame:
    """Mean of every measure and cost per (model, method) at the recommended parameters; `found` is the
    share of factuals with a counterfactual, the other means are over the valid ones; ``retrained [95%]``
    pools (counterfactual, retrained model) pairs into a Clopper-Pearson interval."""
    rec = recommended(df)
    if rec.empty:
        return pd.DataFrame()
    rows = []
    for keys, g in rec.groupby(list(by), sort=False):
        ok = g[g["valid"].astype(bool)]
        row = dict(zip(by, keys if isinstance(keys, tuple) else (keys,)))
        row.update(n=len(g), found=g["found"].mean(), valid=g["valid"].mean())
        for col in SUMMARY_COLUMNS[2:]:
            row[col] = ok[col].mean() if len(ok) else math.nan
        pairs = int((ok["n_retrained"]).sum()) if len(ok) else 0
        hits = int(round((ok["retrained"] * ok["n_retrained"]).sum())) if len(ok) else 0
        ci = binomial_interval(hits, pairs)
        row["retrained [95%]"] = f"[{ci.low:.2f}, {ci.high:.2f}]" if pairs else ""
        rows.append(row)
    return _ordered(pd.DataFrame(rows), list(by)).reset_index(drop=True)


def sweep_level(row) -> str:
    """The position of a row in its method's parameter sweep, comparable across datasets: rho for the
    robust region, the factor on chapter 4's delta for PROPLACE (whose delta differs per dataset), alpha for
    the SAA methods; "own" for the methods that run at one parameter (MILP-R's delta also differs per
    dataset)."""
    if row["method"] == REGION or row["method"] in (DIRECT_SAA, ROBUST_SAA):
        return f"{float(row['param']):g}"
    if row["method"] == PROPLACE:
        base = {short(d): proplace_delta(d) for d in DATASETS}.get(row["dataset"], DELTA_DEFAULT)
        return f"{float(row['param']) / base:g} δ"
    return "own"


def matched_budget_table(df: pd.DataFrame) -> pd.DataFrame:
    """Robustness at a matched distance: per model, each method's level of its parameter sweep
    (:func:`sweep_level`) whose mean distance is closest to the budget, the mean distance of the robust
    region at rho = 0.05 (the stretched nearest counterfactual spends that budget by construction, less
    where the box [0, 1] clips it)."""
    if df.empty:
        return pd.DataFrame()
    ok = methods_only(df)
    ok = ok[ok["valid"].astype(bool)].copy()
    ok["param"] = ok.apply(sweep_level, axis=1)
    rows = []
    for model, g in ok.groupby("model", sort=False):
        region = g[(g["method"] == REGION) & (g["param"] == f"{RHO:g}")]
        if region.empty:
            continue
        budget = region["distance"].mean()
        for method, m in g.groupby("method", sort=False):
            means = m.groupby("param")[["distance", *MEASURES]].mean()
            best = (means["distance"] - budget).abs().idxmin()
            rows.append({"model": model, "method": method, "param": best, "budget": budget,
                         **means.loc[best].to_dict()})
    return _ordered(pd.DataFrame(rows), ["model", "method"]).reset_index(drop=True) if rows else pd.DataFrame()


def _applies(model: str, col: str) -> bool:
    return not ((model == "forest" and col.startswith("delta")) or (model == "network" and col == "margin"))


def threat_table(summary: pd.DataFrame) -> pd.DataFrame:
    """Which method for which threat, computed from the summary: per model and threat (measure), the
    method with the highest mean robustness, and the one with the most robustness per unit of distance
    among the methods that beat the nearest counterfactual."""
    if summary.empty:
        return pd.DataFrame()
    rows = []
    for model, g in summary.groupby("model", sort=False):
        nearest = g[g["method"] == NEAREST]
        for col, label in MEASURES.items():
            if not _applies(model, col) or g[col].isna().all():
                continue
            best = g.loc[g[col].idxmax()]
            base = float(nearest[col].iloc[0]) if len(nearest) else math.nan
            gain = g[(g[col] > base) & (g["method"] != NEAREST)]
            extra = gain["distance"] - (float(nearest["distance"].iloc[0]) if len(nearest) else 0.0)
            per_cost = (gain[col] - base) / extra.where(extra > 0)
            thrifty = gain.loc[per_cost.idxmax(), "method"] if per_cost.notna().any() else "—"
            rows.append({"model": model, "threat": label, "most robust": best["method"], "its mean": best[col],
                         "nearest's mean": base, "most robust per unit distance": thrifty})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- figures

# --------------------------------------------------------------------------- hypotheses and verdicts

#: Paper column of the verdict table: whether a hypothesis follows from the methods' definitions.
THEORY, NEW = "expected from the theory", "new (no paper measures it)"

#: The hypotheses, declared in one place: id, check, wording and evidence rule (data/robustness_benchmark_claims.csv).
CLAIMS = ClaimBook(CHAPTER, paper_table("robustness_benchmark_claims"))


def _paired(df: pd.DataFrame, model: str, method: str, col: str, param=None, against: str = NEAREST) -> pd.DataFrame:
    """Per (dataset, factual) of `method`: its `col` (recommended parameter, or `param`) beside `against`'s, with
    ``both_valid`` true where the method found a valid counterfactual and `against` found one, of the target
    class or not: a comparator not of the target class enters with its measure (a radius or Δ of 0), a win
    wherever the method's measure clears it by more than the tie (audit 40 F4; a method's point on a boundary,
    radius 1e-5, ties it, audit 40b G2). Against
    :data:`STRETCHED_TO`: beside the nearest counterfactual stretched to that counterfactual's own distance (same
    factual and parameter). ``certified``: false for a robust region Algorithm 1 stopped before certifying its
    rho (its centre is no region-robust counterfactual at rho; audit 41c K1)."""
    if df.empty:
        return pd.DataFrame(columns=["model", "dataset", "ours", "base", "both_valid", "certified"])
    ok = _with_claim_columns(df)
    ok = ok[ok["model"] == model]
    sel = ok[ok["method"] == method]
    sel = sel[sel["recommended"].eq(True)] if param is None else sel[sel["param"] == param]
    if against == STRETCHED_TO:
        base, keys = ok[(ok["method"] == against) & (ok["against"] == method)], ["dataset", "factual", "param"]
    else:
        base, keys = ok[(ok["method"] == against) & ok["recommended"].eq(True)], ["dataset", "factual"]
    cols = list(dict.fromkeys([col, "distance", "valid", *(["x"] if "x" in ok else [])]))
    # every factual of the method stays: one without a comparator (the nearest is stretched only to a point the
    # method found) is a pair with no valid counterfactual on that side, counted by `_better` (audit 20b)
    sel = sel.assign(certified=sel["status"].eq("converged") if method == REGION else True)
    # one comparator per pair: a duplicated one would pair a method's point with another's (audit 49 ch6 F1)
    merged = sel[["model", *keys, *cols, "certified"]].merge(base[keys + cols], on=keys, how="left", suffixes=("", "_base"),
                                                             validate="many_to_one")
    merged = merged.rename(columns={col: "ours", f"{col}_base": "base"})
    found = merged["valid_base"].eq(True) | merged["distance_base"].notna()   # a point, of the target class or not
    return merged.assign(both_valid=merged["valid"].astype(bool) & found,
                         short=merged["distance_base"] < (1 - SHORT_OF_DISTANCE) * merged["distance"]
                         if against in (STRETCHED, STRETCHED_TO) else False)


#: A stretched comparator is *short* of its method's distance when the box [0, 1] held it more than this share
#: below it (unclipped ones reach it to rounding).
SHORT_OF_DISTANCE = 0.01


def at_the_same_distance(pairs: pd.DataFrame, tie: float = 0.0) -> tuple[pd.DataFrame, str]:
    """The pairs of a :func:`_paired` frame whose stretched comparator spends the method's distance, and, in
    words, how many were left out because the box [0, 1] held the comparator short of it (:func:`stretch`
    clips it), at what share of the method's distance, and on how many of them the comparator measured higher
    all the same (by more than `tie`; "" if none). A matched-budget control compares at the same distance or
    not at all: against a shorter comparator a method could win by distance alone (audit 15, D1 and J1), and
    keeping only the short pairs it loses biases the test toward a loss (audit 40b G1: 90% *differs* where
    method and comparator measure alike)."""
    if "short" not in pairs or not pairs["short"].any():
        return pairs, ""
    short = pairs["short"].astype(bool)
    share = (pairs.loc[short, "distance_base"] / pairs.loc[short, "distance"]).median()
    higher = int((pairs.loc[short, "base"] > pairs.loc[short, "ours"] + tie).sum())
    return pairs[~short], (f"{int(short.sum())} of the {len(pairs)} factuals left out: the box [0, 1] held the "
                           f"comparator short of the method's distance (median {share:.0%} of it)"
                           + (f"; on {higher} of them it measures higher all the same" if higher else ""))


#: Fewest decisive pairs (ties left out) a sign test at 5% can decide on: with 4, even four wins of four
#: give p = 0.0625; below it a hypothesis is *not run*, whatever the direction.
MIN_DECISIVE = 5


#: Two measures closer than this are a tie (round-off); a measure found by bisection ties within its tolerance.
TIE = 1e-9
#: Certified radii closer than this tie: a point on a boundary has a radius of its solver's margin (a forest
#: MILP puts it 1e-5 past a split, a network's nearest counterfactual 1e-6 to 6e-6 from the decision boundary), so
#: radii of 1.0e-5 and 1.5e-5 are one point on a boundary, stretched or not (audit 40 F3); a band above both
#: margins, as H2 grants a region 1e-4.
RADIUS_TIE = 1e-4


def _compared(pairs: pd.DataFrame, tie: float) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, str]:
    """The pairs of a :func:`_paired` frame :func:`_better` compares, with the steps that keep them: those with a
    valid counterfactual on both sides (of a certified region), those measured on both sides, and of these the
    ones at the same distance (:func:`at_the_same_distance`), and in words the factuals each step left out."""
    certified = pairs[pairs["certified"].astype(bool)] if "certified" in pairs else pairs
    stopped = _left_out(certified, pairs, "Algorithm 1 stopped before certifying the region's rho")
    both = certified[certified["both_valid"].astype(bool)]
    invalid = _left_out(both, certified, "the method has no valid counterfactual, or the comparator none")
    measured = both.dropna(subset=["ours", "base"])
    missing = _left_out(measured, both, "the measure is missing on one side (a solve stopped without a value)")
    kept, left_out = at_the_same_distance(measured, tie)
    return both, measured, kept, "; ".join(filter(None, [stopped, invalid, missing, left_out]))


def _wins_and_losses(pairs: pd.DataFrame, tie: float) -> tuple[int, int]:
    """How many of `pairs` the method measures higher, and lower, than its comparator by more than `tie`."""
    return int((pairs["ours"] > pairs["base"] + tie).sum()), int((pairs["ours"] < pairs["base"] - tie).sum())


def _at_matched_distance(df: pd.DataFrame, model: str, method: str, against: str) -> str:
    """A comparison against the nearest counterfactual, in words, beside the same measure against that counterfactual
    stretched to the method's distance (`against`, :data:`STRETCHED` or :data:`STRETCHED_TO`), which
    distance alone cannot explain (audit 49 ch6 F6): "" where no pair is at the same distance."""
    _, _, pairs, _ = _compared(_paired(df, model, method, "retrained", against=against), TIE)
    if pairs.empty:
        return ""
    wins, losses = _wins_and_losses(pairs, TIE)
    return (f"against the nearest counterfactual stretched to the method's distance instead: higher on {wins}, lower "
            f"on {losses} of {len(pairs)} factuals (sign test p = {sign_test(wins, losses):.2g} for higher), so "
            + ("more than distance sets it apart" if sign_test(wins, losses) <= SIGN_TEST_LEVEL
               else "distance alone may account for the gap"))


def _better(pairs: pd.DataFrame, id: str, *, minimum: int = MIN_DECISIVE, unit: str = "",
            tie: float = TIE, radius: str = "", ceiling: float | None = None, context: str = "") -> Claim:
    """Hypothesis "ours > base", decided by one-sided sign tests at :data:`SIGN_TEST_LEVEL` over the
    decisive pairs (ties, within `tie`, e.g. both valid for every retrained model, count for neither): it
    holds on a higher mean and significantly more wins than losses, fails on a lower mean and significantly
    more losses than wins, and is undecided between (not finding a win is no evidence of a loss: audit 40 F1),
    on at least `minimum` decisive pairs (at least :data:`MIN_DECISIVE`), so one win among ties cannot pass.
    A pair is left out where Algorithm 1 stopped before certifying a region's rho (``certified``, :func:`_paired`),
    where the method has no valid counterfactual or the comparator none at all, where the
    measure is missing on one side, and, against a stretched comparator, where it is not at the same distance
    (:func:`at_the_same_distance`); the reason counts each, and the ties that are one point. A `radius` (a
    certified distance to a split or the decision boundary, or Δ; its name) within `tie` of 0 is the method's
    point on that boundary: the reason counts the losses that are such points (audit 41c K3: 16 of paper H9's 32).
    A measure with a `ceiling` (a share of retrained models, 1): the reason counts the ties at it, which no
    method can win (audit 49 ch6 F4). `context`: a last part of the reason (:func:`_at_matched_distance`)."""
    both, measured, pairs, left_out = _compared(pairs, tie)
    n = len(pairs)
    wins, losses = _wins_and_losses(pairs, tie)
    same = _same_points(pairs[(pairs["ours"] - pairs["base"]).abs() <= tie]) if n else 0
    if n == 0:
        return CLAIMS.claim(id, ours="no pairs", holds=None, evidence=0, minimum=max(minimum, MIN_DECISIVE),
                            why=left_out)
    p, mean, base = sign_test(wins, losses), pairs["ours"].mean(), pairs["base"].mean()
    p_lower = sign_test(losses, wins)
    holds = True if mean > base and p <= SIGN_TEST_LEVEL else False if mean < base and p_lower <= SIGN_TEST_LEVEL \
        else None
    neither = ("" if holds is not None or wins + losses < max(minimum, MIN_DECISIVE) else
               "higher on significantly more factuals, but not on the mean" if p <= SIGN_TEST_LEVEL else
               "lower on significantly more factuals, but not on the mean" if p_lower <= SIGN_TEST_LEVEL else
               "neither side measures higher on significantly more factuals")
    # each mean printed on its side of their middle, so the pair reads as it compares (equal means have no side)
    middle = (mean + base) / 2 if mean != base else None
    ours = (f"mean {beside(mean, '.3g', middle)}{unit} vs {beside(base, '.3g', middle)}{unit}; higher on {wins}, "
            f"lower on {losses} of {n} factuals (sign tests p = {beside(p, '.2g', SIGN_TEST_LEVEL)} for higher, "
            f"{beside(p_lower, '.2g', SIGN_TEST_LEVEL)} for lower)")
    ties = n - wins - losses
    tied = (f"{ties} of the {n} factuals {'is a tie' if ties == 1 else 'are ties'}"
            + (f" ({same} of them one point: the method's counterfactual is the comparator)" if same else "")
            + _at_the_ceiling(pairs, tie, ceiling) if ties else "")
    # pairs whose measure is missing, all won or all lost, could decide it: an open verdict is then no reading
    unmeasured = len(both) - len(measured)
    could = unmeasured and min(sign_test(wins + unmeasured, losses), sign_test(losses + unmeasured, wins)) <= SIGN_TEST_LEVEL
    return CLAIMS.claim(id, ours=ours, holds=holds, evidence=wins + losses, minimum=max(minimum, MIN_DECISIVE),
                        why="; ".join(filter(None, [neither, _where_decisive(pairs, tie),
                                                    _on_the_boundary(pairs, tie, radius) if radius else "", tied, left_out,
                                                    context])),
                        neither_way=not could)


def _at_the_ceiling(pairs: pd.DataFrame, tie: float, ceiling: float | None) -> str:
    """", k of them at the measure's ceiling on both sides", or "" if none (or no `ceiling`)."""
    if ceiling is None:
        return ""
    k = int(((pairs["ours"] >= ceiling - tie) & (pairs["base"] >= ceiling - tie)).sum())
    return f", {k} of them at the measure's ceiling ({ceiling:g}) on both sides, where neither can measure higher" if k else ""


def _on_the_boundary(pairs: pd.DataFrame, tie: float, radius: str) -> str:
    """"on k of the L lower, the method's point lies on a split or the decision boundary (its `radius` within
    `tie` of 0)", or "" if none."""
    lower = pairs[pairs["ours"] < pairs["base"] - tie]
    k = int((lower["ours"] <= tie).sum())
    return (f"on {k} of the {len(lower)} lower, the method's point lies on a split or the decision boundary (its "
            f"{radius} within {tie:g} of 0: the solver's margin)" if k else "")


def _where_decisive(pairs: pd.DataFrame, tie: float) -> str:
    """Where the decisive pairs of `pairs` (a :func:`_paired` frame, ties left in) lie: per dataset and model,
    the method higher and lower than its comparator, of the pairs compared there, most decisive first ("" when
    the pairs are of one dataset and model). The sign test pools factuals, and those of one dataset share a
    model; a reader sees whether one dataset carries the count (audit 41c K2, K4; audit 42 L6, L7)."""
    if not {"dataset", "model"} <= set(pairs):
        return ""
    counts = pd.DataFrame({"dataset": pairs["dataset"], "model": pairs["model"],
                           "higher": pairs["ours"] > pairs["base"] + tie, "lower": pairs["ours"] < pairs["base"] - tie})
    counts = counts.groupby(["dataset", "model"]).agg(higher=("higher", "sum"), lower=("lower", "sum"),
                                                       n=("higher", "size"))
    counts = counts.assign(decisive=counts["higher"] + counts["lower"]).sort_values("decisive", ascending=False, kind="stable")
    return ("the method higher vs lower than its comparator, by dataset and model: "
            + ", ".join(f"{d} {m} {h} vs {l} of {n}" for (d, m), (h, l, n, _) in counts.iterrows())
            if len(counts) > 1 else "")


def _left_out(kept: pd.DataFrame, of: pd.DataFrame, why: str) -> str:
    """"3 of the 20 factuals left out: `why`", or "" when `kept` keeps every pair `of` has."""
    return f"{len(of) - len(kept)} of the {len(of)} factuals left out: {why}" if len(kept) < len(of) else ""


def _same_points(pairs: pd.DataFrame, atol: float = 1e-6) -> int:
    """How many of `pairs` (a :func:`_paired` frame with the points ``x`` and ``x_base``) compare a counterfactual
    with itself: a tie that says the method bought nothing beyond the comparator (audit 40 F2)."""
    if not {"x", "x_base"} <= set(pairs) or pairs.empty:
        return 0
    return sum(a is not None and b is not None and np.shape(a) == np.shape(b)
               and bool(np.max(np.abs(np.asarray(a, float) - np.asarray(b, float)), initial=0.0) < atol)
               for a, b in zip(pairs["x"], pairs["x_base"]))


def _smallest(id: str, values: pd.Series, name: str, bound: float, *, minimum: int, wrong_class: int = 0) -> Claim:
    """Hypothesis "every value ≥ bound", on at least `minimum` values; one value below the bound decides it,
    and so does one of `wrong_class` counterfactuals found but not of the target class (a method's guarantee
    that its point is not even valid for). A value the solvers left undecided (NaN) counts neither way; the
    reason says how many (audit 24b J2)."""
    unmeasured = int(values.isna().sum())
    values = values.dropna()
    holds = False if wrong_class else all_of_at_least(values, 1, lambda v: v >= bound)
    ours = f"smallest {name} {beside(values.min(), '.2g', bound)} over {len(values)}" if len(values) else "no data"
    return CLAIMS.claim(id, ours=ours + (f"; {wrong_class} found not of the target class" if wrong_class else ""),
                        holds=holds, evidence=len(values) + wrong_class, minimum=minimum,
                        failure_decides=holds is False,
                        why=f"{unmeasured} left out: a solver stopped without an answer" if unmeasured else "")


def _wrong_class(rows: pd.DataFrame) -> int:
    """How many of `rows` found a counterfactual (a distance) that the model does not give the target class."""
    return int((rows["distance"].notna() & ~rows["valid"].astype(bool)).sum())


#: The columns the hypothesis checks read.
CLAIM_COLUMNS = ["dataset", "factual", "model", "method", "param", "recommended", "found", "valid", "status", "tol",
                 "distance", "excess_distance", "against", "tau", *MEASURES]


def _with_claim_columns(df: pd.DataFrame) -> pd.DataFrame:
    """`df` with every column the checks read present (absent measures: no data)."""
    return df.reindex(columns=list(dict.fromkeys([*df.columns, *CLAIM_COLUMNS])))


def _valid(df: pd.DataFrame) -> pd.DataFrame:
    """The valid counterfactuals of `df`, every column the checks read present (absent measures: no data)."""
    df = _with_claim_columns(df)
    return df[df["valid"].astype(bool)] if len(df) else df


def h1_nearest_closest(df: pd.DataFrame, *, minimum: int = 3) -> Claim:
    """H1: nearest is the closest valid point of the box, so no other method's valid counterfactual is closer
    (nearest's own, at excess 0 by construction, tests nothing, nor does the stretched nearest, farther along
    the same ray by construction (audit 25b J1); H7's and H9's comparators are no method)."""
    ok = methods_only(_valid(df))
    return _smallest("06-h1-nearest-closest", ok.loc[~ok["method"].isin([NEAREST, STRETCHED]), "excess_distance"],
                     "excess distance", -1e-6, minimum=minimum)


def h2_region_certified(df: pd.DataFrame, *, minimum: int = 3) -> Claim:
    """H2: a converged robust region is certified for its rho; one whose point is not of the target class fails."""
    df = _with_claim_columns(df)
    reg = df[(df["method"] == REGION) & (df["status"] == "converged")]
    ok = reg[reg["valid"].astype(bool)]
    return _smallest("06-h2-region-certified", ok["radius_linf"] - ok["param"].astype(float), "radius − rho", -1e-4,
                     minimum=minimum, wrong_class=_wrong_class(reg))


def h3_proplace_delta(df: pd.DataFrame, *, minimum: int = 3) -> Claim:
    """H3: PROPLACE's counterfactuals pass Definition 7 at their delta (the bisection returns a Delta that
    passed, within its tolerance below the largest); one found but not of the target class fails."""
    df = _with_claim_columns(df)
    found = df[df["method"] == PROPLACE]
    pro = found[found["valid"].astype(bool)]
    return _smallest("06-h3-proplace-delta", pro["delta_interval"] - pro["param"].astype(float) + pro["tol"],
                     "Δ − δ + tolerance", -1e-9, minimum=minimum, wrong_class=_wrong_class(found))


def h4_saa_margin(df: pd.DataFrame, *, minimum: int = 3) -> Claim:
    """H4: every SAA counterfactual found, valid or not, clears its own threshold ``tau``: Direct-SAA p*(N, α),
    Robust-SAA ρ*(N, α, β). The stored margin is over p*(N, α) (:func:`measure`), so a Robust-SAA one is
    taken ρ* − p* lower, p* the Direct-SAA ``tau`` of the same factual. (Audit 17: over p* and on the valid
    ones only, a Robust-SAA point short of ρ*, or one the forest does not give the target class, passed or
    went uncounted.)"""
    keys, df = ["dataset", "model", "factual"], _with_claim_columns(df)
    saa = df[df["method"].isin([DIRECT_SAA, ROBUST_SAA]) & df["recommended"].eq(True)]
    p_star = saa[saa["method"] == DIRECT_SAA][[*keys, "tau"]].rename(columns={"tau": "p_star"})
    saa = saa.merge(p_star.drop_duplicates(keys), on=keys, how="left")
    saa = saa[saa["found"].fillna(False).astype(bool)]  # no margin without a point; a threshold out of reach is no stop
    return _smallest("06-h4-saa-margin", saa["margin"] - (saa["tau"] - saa["p_star"]), "margin over its threshold",
                     -1e-6, minimum=minimum)


def h5_region_retrained_network(df: pd.DataFrame, *, minimum: int = MIN_DECISIVE) -> Claim:
    return _better(_paired(df, "network", REGION, "retrained"), "06-h5-region-retrained-network", minimum=minimum,
                   ceiling=1.0, context=_at_matched_distance(df, "network", REGION, STRETCHED))


def h6_region_retrained_forest(df: pd.DataFrame, *, minimum: int = MIN_DECISIVE) -> Claim:
    return _better(_paired(df, "forest", REGION, "retrained"), "06-h6-region-retrained-forest", minimum=minimum,
                   ceiling=1.0, context=_at_matched_distance(df, "forest", REGION, STRETCHED))


def h7_proplace_radius(df: pd.DataFrame, *, minimum: int = MIN_DECISIVE) -> Claim:
    """H7 against the nearest counterfactual stretched to PROPLACE's own distance. (Amended after audit 14:
    against the nearest one, whose certified radius is the MILP's strictness margin since it lies on the
    decision boundary, H7 could not fail.)"""
    return _better(_paired(df, "network", PROPLACE, "radius_linf", against=STRETCHED_TO), "06-h7-proplace-radius",
                   minimum=minimum, tie=RADIUS_TIE, radius="radius")


def h8_region_model_shift(df: pd.DataFrame, *, minimum: int = MIN_DECISIVE) -> Claim:
    """H8 against the stretched nearest counterfactual. (Amended after audit 6: against the nearest one, whose
    exact Δ is 0 by construction, since it lies on the decision boundary, H8 could not fail.) Exact Δ is a
    bisection answer, the true Δ within the row's ``tol`` above it (H3 grants the same), so a pair closer than
    that is a tie (audit 19b: the book counted a win by 0.00082 at tol 0.001)."""
    return _better(_paired(df, "network", REGION, "delta_exact", against=STRETCHED), "06-h8-region-model-shift",
                   minimum=minimum, tie=float(np.nanmax([TIE, *_valid(df)["tol"]])), radius="Δ")


def h9_saa_radius(df: pd.DataFrame, *, minimum: int = MIN_DECISIVE) -> Claim:
    """H9 against the nearest counterfactual stretched to Direct-SAA's own distance (amended after audit 14,
    as H7)."""
    return _better(_paired(df, "forest", DIRECT_SAA, "radius_linf", against=STRETCHED_TO), "06-h9-saa-radius",
                   minimum=minimum, tie=RADIUS_TIE, radius="radius")


def h10_region_vs_stretched(df: pd.DataFrame, *, minimum: int = MIN_DECISIVE) -> Claim:
    return _better(pd.concat([_paired(df, m, REGION, "retrained", against=STRETCHED) for m in MODELS]),
                   "06-h10-region-vs-stretched", minimum=minimum, ceiling=1.0)


def h11_proplace_retrained(df: pd.DataFrame, *, minimum: int = MIN_DECISIVE) -> Claim:
    return _better(_paired(df, "network", PROPLACE, "retrained"), "06-h11-proplace-retrained", minimum=minimum,
                   ceiling=1.0, context=_at_matched_distance(df, "network", PROPLACE, STRETCHED_TO))


def claims(df: pd.DataFrame, *, minimum: int = 3) -> list[Claim]:
    """The chapter's hypotheses (stated before the experiment, :data:`CLAIMS`) with verdicts from this run:
    *reproduced* reads "holds", *differs* "fails", *not run* "fewer than `minimum` factuals to judge it" (the
    comparisons H5-H11: fewer than :data:`MIN_DECISIVE` decisive ones)."""
    df = _with_claim_columns(df)
    return [globals()[check](df, minimum=minimum) for check in CLAIMS.table["check"]]


def hypotheses_table() -> pd.DataFrame:
    """The hypotheses as stated before the run (claims without verdicts), for the top of the chapter."""
    return pd.DataFrame([{"hypothesis": c.claim, "kind": c.paper} for c in claims(pd.DataFrame())])


def findings(table: pd.DataFrame) -> str:
    """Sentences on which hypotheses held, expected and new, computed from the verdict table."""
    if table.empty:
        return "*No verdicts yet.*"
    lines = []
    for kind in (THEORY, NEW):
        g = table[table["Paper"] == kind]
        held = [c.split(".")[0] for c, v in zip(g["Claim"], g["Verdict"]) if v == "reproduced"]
        failed = [c.split(".")[0] for c, v in zip(g["Claim"], g["Verdict"]) if v == "differs"]
        open_ = [c.split(".")[0] for c, v in zip(g["Claim"], g["Verdict"]) if v == UNDECIDED]
        short = [c.split(".")[0] for c, v in zip(g["Claim"], g["Verdict"]) if v == NOT_RUN]
        lines.append(f"- **{kind.capitalize()}**: held {', '.join(held) or 'none'}; failed {', '.join(failed) or 'none'}"
                     f"; undecided {', '.join(open_) or 'none'}; not run (H1–H4: fewer than 3 counterfactuals; "
                     f"H5–H11: fewer than 5 decisive pairs, ties left out) {', '.join(short) or 'none'}.")
    return "\n".join(lines)


def lessons(df: pd.DataFrame, summary: pd.DataFrame) -> str:
    """What this run says beyond the verdicts, every number computed: how often the robust region's centre
    is the stretched nearest counterfactual (same point), how often each robust method beats the nearest
    counterfactual on the other notions, and the price in distance of each robust method."""
    if df.empty or summary.empty:
        return "*No counterfactuals computed at this scale yet.*"
    lines = []
    ok = df[df["valid"].astype(bool) & df["recommended"].eq(True)]
    keys = ["dataset", "model", "factual"]
    region = ok[ok["method"] == REGION].set_index(keys)
    stretched = ok[ok["method"] == STRETCHED].set_index(keys)
    both = region.index.intersection(stretched.index)
    if len(both):
        same = int((np.abs(region.loc[both, "radius_linf"] - stretched.loc[both, "radius_linf"]) < 1e-6).sum())
        lines.append(f"- **How often the robust region is the stretched nearest counterfactual.** On {same} of "
                     f"{len(both)} (dataset, model, factual) triples the region's centre has the certified radius of "
                     "the nearest counterfactual stretched to the same l1 distance. Where that happens the region "
                     "bought its robustness with distance along the nearest direction, nothing else.")
    regions = df[(df["method"] == REGION) & df["found"].astype(bool)]
    for model, g in regions.groupby("model", sort=False):
        stopped = int((g["status"] != "converged").sum())
        if stopped:
            lines.append(f"- **Early stops.** Algorithm 1 stopped at its time limit on {stopped} of {len(g)} robust "
                         f"regions of the {model}s; their centres are certified only for the smaller radius they "
                         "reached (the l∞ radius column says which).")
    threats = threat_table(summary)
    for model, g in threats.groupby("model", sort=False) if len(threats) else ():
        tops = g["most robust"].unique()
        if len(tops) == 1:
            lines.append(f"- **One method tops every threat on the {model}s**: {tops[0]} is the most robust under "
                         f"all {len(g)} measures of Table 3, whatever notion it was designed for.")
    for model, g in summary.groupby("model", sort=False):
        near = g[g["method"] == NEAREST]
        if near.empty:
            continue
        d0 = float(near["distance"].iloc[0])
        prices = ", ".join(f"{r.method} {r.distance / d0:.1f}×" for r in g.itertuples()
                           if r.method not in (NEAREST, STRETCHED) and pd.notna(r.distance) and d0 > 0)
        lines.append(f"- **Price in distance ({model}s)**, mean distance relative to the nearest counterfactual: "
                     f"{prices}.")
    return "\n".join(lines)
