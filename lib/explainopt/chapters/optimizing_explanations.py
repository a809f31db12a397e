"""Chapter 1: the protocol of Raedler et al. (2025), "optimizing explanations".

The algorithm (losses, their cone programs, agreement rates) is :mod:`explainopt.attributions`; this
module holds what only the paper's experiment needs:

- the five test functions of **Table 1** (:data:`FUNCTIONS`, gradients in closed form), the equidistant
  grids on [-5, 5]^D with the N of **Appendix A** (:data:`GRID_SIZES`, transcribed in
  ``data/optimizing_explanations_grids.csv``) and the radius rule of Appendix A (:func:`admissible_radii`);
- the grid of experiments (:data:`SCALES`, :func:`experiment_configs`, :func:`grids`) and its cell
  (:func:`optimize_explanations`: one function, D, u, metric and constraint variant, with
  ``η = 0.2 · L_faithful^max``; :func:`explanation_cell` is its storable form, :func:`from_cells` reads it back),
  which the notebook runs through the chapter's cache and ``python -m explainopt.book run --budget`` computes
  into the paper-scale results store;
- the chapter's tables: agreement rates per cell (Figures 1 and 3), how much of the disagreement ties in
  ∇f explain, the pointwise variant against the global one, the Figure 2 profile of a solution;
- the faithfulness–robustness trade-off as η moves (:func:`eta_sweep`, :func:`tradeoff_table` and the
  interactive :func:`plot_eta_slider`, beyond the paper);
- how steep or oscillatory each function's gradient is (:func:`roughness`) against its agreement rate
  (:func:`roughness_vs_agreement`), the check behind Section 4's "steep or oscillatory gradients";
- the checks behind each claim of the paper (:func:`claims`, one function per claim; the paper's
  statements are transcribed in ``data/optimizing_explanations_claims.csv`` and
  ``data/optimizing_explanations_figure2.csv``), the closing summary (:func:`lessons`) and the figures.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np
import pandas as pd
from scipy.stats import permutation_test, spearmanr

from .. import attributions as A
from .. import experiments, reporting, verdicts
from . import paper_table, solver_key

log = logging.getLogger(__name__)

METRIC_LABELS = {
    "max_sensitivity": "max-sensitivity",
    "local_stability": "local stability",
    "average_sensitivity": "average sensitivity",
    "average_sensitivity_squared": "average sensitivity (squared)",
}
DOMAIN = (-5.0, 5.0)
#: The faithfulness budget of Section 3.2: η = ETA_FRACTION · L_faithful^max.
ETA_FRACTION = 0.2


# =========================================================================== Table 1: test functions

@dataclass(frozen=True)
class ToyFunction:
    """A separable function ``f(x) = Σ_d φ(x_d)`` of Table 1 with its derivative ``φ'``."""

    name: str
    formula: str
    phi: Callable[[np.ndarray], np.ndarray]
    dphi: Callable[[np.ndarray], np.ndarray]

    def __call__(self, X: np.ndarray) -> np.ndarray:
        """f at each row of X (shape (N, D)) -> shape (N,)."""
        return self.phi(A.as_points(X)).sum(axis=1)

    def gradient(self, X: np.ndarray) -> np.ndarray:
        """∇f at each row of X -> shape (N, D) (analytic)."""
        return self.dphi(A.as_points(X))


FUNCTIONS: dict[str, ToyFunction] = {f.name: f for f in (
    ToyFunction("x^2", "Σ_d x_d²", lambda x: x**2, lambda x: 2 * x),
    ToyFunction("x^3", "Σ_d 0.35 x_d³", lambda x: 0.35 * x**3, lambda x: 1.05 * x**2),
    ToyFunction("sin x + e^x - x^2", "Σ_d sin 2x_d + 0.1 e^{x_d} − 0.5 x_d²",
                lambda x: np.sin(2 * x) + 0.1 * np.exp(x) - 0.5 * x**2,
                lambda x: 2 * np.cos(2 * x) + 0.1 * np.exp(x) - x),
    ToyFunction("sin x", "Σ_d sin x_d", np.sin, np.cos),
    ToyFunction("sin x^3", "Σ_d sin(0.35 x_d³)", lambda x: np.sin(0.35 * x**3),
                lambda x: 1.05 * x**2 * np.cos(0.35 * x**3)),
)}


def get_function(name: str) -> ToyFunction:
    """The Table 1 function called `name` (one of :data:`FUNCTIONS`)."""
    if isinstance(name, ToyFunction):
        return name
    if name not in FUNCTIONS:
        raise ValueError(f"unknown function {name!r}; expected one of {list(FUNCTIONS)}")
    return FUNCTIONS[name]


def function_table(functions: Sequence[str] = tuple(FUNCTIONS)) -> pd.DataFrame:
    """Table 1 for the functions that run."""
    return pd.DataFrame([{"name": f.name, "f(x)": f.formula} for f in FUNCTIONS.values() if f.name in functions])


#: Points of the fine 1-D grid on which :func:`roughness` measures a function's derivative.
ROUGHNESS_POINTS = 20001


def roughness(function: str, *, n_points: int = ROUGHNESS_POINTS, domain: tuple[float, float] = DOMAIN) -> dict:
    """How steep and how oscillatory the gradient of a Table 1 function is over the sampling domain.

    Every Table 1 function is ``Σ_d φ(x_d)`` with the same φ in each coordinate, so ``∂f/∂x_d = φ'(x_d)``
    and one axis says it all. On `n_points` equidistant points of `domain` (default [-5, 5]):

    - ``mean |∇f|``: the mean of ``|φ'(x)|`` (steepness);
    - ``total variation of ∇f``: ``Σ_k |φ'(x_{k+1}) − φ'(x_k)|`` ≈ ``∫ |φ''(x)| dx``, which grows both with
      steepness (a monotone φ' contributes its range) and with oscillation (every swing counts again);
      this is the measure the chapter ranks the functions by;
    - ``gradient extrema``: the number of sign changes of ``φ''`` (local extrema of φ', the oscillations);
    - ``gradient sign changes``: the number of sign changes of φ' itself.
    """
    f = get_function(function)
    if n_points < 3:
        raise ValueError(f"n_points must be at least 3; got {n_points!r}")
    x = np.linspace(domain[0], domain[1], int(n_points))
    slope = f.dphi(x)
    change = np.diff(slope)
    return {"function": f.name, "mean |∇f|": float(np.abs(slope).mean()),
            "total variation of ∇f": float(np.abs(change).sum()),
            "gradient extrema": _sign_changes(change), "gradient sign changes": _sign_changes(slope)}


def _sign_changes(values: np.ndarray) -> int:
    """Sign changes along `values`, skipping exact zeros."""
    signs = np.sign(values[values != 0])
    return int(np.count_nonzero(signs[1:] != signs[:-1]))


def roughness_table(functions: Sequence[str] = tuple(FUNCTIONS)) -> pd.DataFrame:
    """:func:`roughness` of each function, one row each, indexed by function."""
    return pd.DataFrame([roughness(f) for f in functions]).set_index("function")


def pretty(name: str) -> str:
    """A function's name with superscripts, as the claims write it (``x^3`` -> ``x³``)."""
    return name.replace("^2", "²").replace("^3", "³")


# =========================================================================== Appendix A: grids and radii

_GRIDS = paper_table("optimizing_explanations_grids")
#: Number of grid points per dimension (Appendix A): 80 on a line, 9², 5³ and 3⁴ points.
GRID_SIZES: dict[int, int] = dict(zip(_GRIDS["D"].astype(int), _GRIDS["N"].astype(int)))
#: The radii Appendix A lists for each D.
PAPER_RADII: dict[int, list[int]] = {int(d): [int(u) for u in r.split()] for d, r in zip(_GRIDS["D"], _GRIDS["radii"])}
#: Perturbation radii of Section 3.1.
RADII = tuple(sorted({u for radii in PAPER_RADII.values() for u in radii}))


def grid(dimension: int, n_points: int | None = None, *, domain: tuple[float, float] = DOMAIN) -> np.ndarray:
    """Equidistant grid on ``[-5, 5]^D`` with N points (default: Appendix A's N for D), shape (N, D).

    N must be a perfect D-th power (k points per axis, ``k^D = N``); rows are sorted
    lexicographically (the paper's "X is sorted").
    """
    if not isinstance(dimension, (int, np.integer)) or isinstance(dimension, bool) or dimension < 1:
        raise ValueError(f"dimension must be a positive integer; got {dimension!r}")
    if n_points is None:
        if dimension not in GRID_SIZES:
            raise ValueError(f"no default grid size for dimension {dimension}; pass n_points (a perfect "
                             f"{dimension}-th power) or use D in {sorted(GRID_SIZES)}")
        n_points = GRID_SIZES[dimension]
    per_axis = int(round(n_points ** (1.0 / dimension)))
    if per_axis < 2 or per_axis**dimension != n_points:
        raise ValueError(f"n_points={n_points} is not k**{dimension} for an integer k >= 2; "
                         f"an equidistant grid in D={dimension} needs a perfect power")
    axis = np.linspace(domain[0], domain[1], per_axis)
    mesh = np.meshgrid(*([axis] * dimension), indexing="ij")
    return np.stack([m.ravel() for m in mesh], axis=1)


def admissible_radii(dimension: int, radii: Sequence[float] = RADII, n_points: int | None = None) -> list[float]:
    """The radii of `radii` that give every grid point at least one neighbour (Appendix A).

    Appendix A words the rule as "the minimum pairwise distance between input points is larger than u",
    but the radii it then lists (u = 1 only for D = 1, 2 for D ≤ 2, 3 for D ≤ 3) are those with u at
    least the grid step (10/79, 1.25, 2.5, 5 for D = 1..4), i.e. neighbourhoods that are not empty.
    """
    step = A.grid_spacing(grid(dimension, n_points))
    return [u for u in radii if u >= step * (1 - A.RADIUS_RTOL)]


def grid_table(dimensions: Sequence[int], functions: Sequence[str], radii: Sequence[float] = RADII) -> pd.DataFrame:
    """Per D: N, grid step, the radii that run, and (mean over `functions`) the share of points where ∇f
    has tied most important features and the all-three agreement random tie-breaking would give."""
    rows = []
    for d in dimensions:
        X = grid(d)
        gradients = [get_function(f).gradient(X) for f in functions]
        rows.append({"D": d, "N": len(X), "grid step": A.grid_spacing(X), "radii u": admissible_radii(d, radii),
                     "∇f tied share": sum(A.tied_top_share(G) for G in gradients) / len(functions),
                     "chance agreement": sum(A.chance_agreement(G) for G in gradients) / len(functions)})
    return pd.DataFrame(rows)


# =========================================================================== the grid of experiments

#: smoke: D <= 2 and two functions; book: the paper's grid; paper: + Table 2's squared average sensitivity.
SCALES = {
    "smoke": dict(dimensions=[1, 2], functions=["x^3", "sin x^3"], radii=list(RADII), metrics=A.METRICS),
    "book": dict(dimensions=sorted(GRID_SIZES), functions=list(FUNCTIONS), radii=list(RADII), metrics=A.METRICS),
    "paper": dict(dimensions=sorted(GRID_SIZES), functions=list(FUNCTIONS), radii=list(RADII),
                  metrics=A.ALL_METRICS),
}


@dataclass(kw_only=True)
class ExplanationResult(A.OptimizedExplanations):
    """One cell of the chapter's grid: a solved problem for a Table 1 function on the Appendix A grid."""

    function: str
    dimension: int
    faithful_max: float  # L_faithful^max, the loss of the constant mean-gradient explanation

    def summary(self) -> dict:
        """Scalars only (a row of a results table)."""
        return {
            "function": self.function, "D": self.dimension, "u": self.radius, "metric": self.metric,
            "pointwise": self.pointwise, "N": len(self.X), "status": self.status, "solver": self.solver,
            "eta": self.eta, "L_faithful": self.faithfulness, "L_faithful / eta": self.faithfulness_ratio,
            "L_robust": self.robustness, "objective": self.objective, "solve_time_s": self.solve_time,
        }


def optimize_explanations(function: str, dimension: int, *, radius: float, metric: str, pointwise: bool = False,
                          eta_fraction: float = ETA_FRACTION, n_points: int | None = None, solver: str | None = None,
                          time_limit: float | None = None) -> ExplanationResult:
    """Optimal explanations of a Table 1 function on the Appendix A grid (Section 3.2): one cell of the
    chapter's grid, with ``η = eta_fraction · L_faithful^max`` (the paper: 0.2)."""
    f = get_function(function)
    if not 0 < eta_fraction < 1:
        raise ValueError(f"eta_fraction must lie in (0, 1); got {eta_fraction!r}")
    X = grid(dimension, n_points)
    G = f.gradient(X)
    faithful_max = A.max_faithfulness_loss(G)
    solution = A.solve_explanations(X, G, radius=radius, metric=metric, eta=eta_fraction * faithful_max,
                                    pointwise=pointwise, solver=solver, time_limit=time_limit)
    return ExplanationResult(**vars(solution), function=f.name, dimension=int(dimension), faithful_max=faithful_max)


def experiment_configs(functions: Sequence[str], dimensions: Sequence[int], radii: Sequence[float] = RADII, *,
                       metrics: Sequence[str] = A.METRICS, pointwise: Sequence[bool] = (False,),
                       solver: str | None = None) -> list[dict]:
    """The (function, D, u, metric, variant) grid, with the radii of Appendix A for each D."""
    for name in functions:
        get_function(name)
    for metric in metrics:
        A.check_metric(metric)
    return [dict(function=name, dimension=int(d), radius=float(u), metric=m, pointwise=bool(p), solver=solver)
            for p in pointwise for d in dimensions for u in admissible_radii(d, radii)
            for name in functions for m in metrics]


#: The dimensions in the order a budgeted run computes them: D = 4 and 2 decide the agreement claims
#: (Figure 1), D = 3 completes the trend (Figure 3), D = 1 holds Figure 2 and no agreement.
DIMENSION_ORDER = (4, 2, 3, 1)


#: Fields of a result that :func:`explanation_cell` leaves out of the store: the grid and its gradients follow
#: from (function, D), and :func:`from_cells` computes them again.
DERIVED = ("X", "gradients")


def explanation_cell(function: str, dimension: int, *, radius: float, metric: str, pointwise: bool = False,
                     solver: str | None = None) -> dict:
    """One cell of the chapter's grid as a results store keeps it (JSON values and NumPy arrays): the fields
    of :func:`optimize_explanations`'s result but the :data:`DERIVED` ones, which :func:`from_cells` restores."""
    result = optimize_explanations(function, dimension, radius=radius, metric=metric, pointwise=pointwise,
                                   solver=solver)
    return {key: value for key, value in vars(result).items() if key not in DERIVED}


def from_cells(cells: Sequence[dict | None]) -> list[ExplanationResult]:
    """The results of :func:`explanation_cell` cells, skipping cells not computed (None)."""
    return [_from_cell(cell) for cell in cells if cell is not None]


def _from_cell(cell: dict) -> ExplanationResult:
    X = grid(cell["dimension"])
    return ExplanationResult(**cell, X=X, gradients=get_function(cell["function"]).gradient(X))


#: The claims each grid decides (what a budgeted run prints in its plan).
GRID_CLAIMS = {"explanations": ["L_faithful ≈ η", "agreement high at D = 2, low at D = 4, decreasing in D",
                                "disagreement on steep or oscillatory gradients", "Figure 2 (D = 1)"]}


def grids(S: dict, *, solver: str | None = "auto") -> dict[str, experiments.Grid]:
    """The chapter's grid at settings `S` (a row of :data:`SCALES`): ``explanations``, every (variant, D, u,
    function, metric) cell of :func:`experiment_configs` for both constraint variants.

    A budgeted run computes first the paper's own cells (global constraint, the three metrics of Appendix C),
    D in :data:`DIMENSION_ORDER`, then Table 2's squared reading, then the pointwise variant (beyond the paper).
    """
    solver = solver_key(solver)
    configs = experiment_configs(S["functions"], S["dimensions"], S["radii"], metrics=S["metrics"],
                                 pointwise=(False, True), solver=solver)
    rank = {d: k for k, d in enumerate(DIMENSION_ORDER)}

    def priority(k: int) -> tuple:
        c = configs[k]
        return c["pointwise"], c["metric"] not in A.METRICS, rank.get(c["dimension"], len(rank)), k

    return {"explanations": experiments.Grid(explanation_cell, configs, order=sorted(range(len(configs)), key=priority))}


SUMMARY_COLUMNS = ["function", "D", "u", "metric", "pointwise", "N", "status", "solver", "eta", "L_faithful",
                   "L_faithful / eta", "L_robust", "objective", "solve_time_s"]


def results_table(results: Sequence[ExplanationResult]) -> pd.DataFrame:
    """One row per solved problem (scalars of :meth:`ExplanationResult.summary`; no rows, same columns, when
    nothing ran)."""
    return pd.DataFrame([r.summary() for r in results], columns=SUMMARY_COLUMNS)


def select(results: Sequence[ExplanationResult], **criteria) -> list[ExplanationResult]:
    """The results whose fields equal `criteria` (e.g. ``function="x^3", dimension=1, radius=1``)."""
    for key in criteria:
        if key not in ExplanationResult.__dataclass_fields__:
            raise ValueError(f"cannot select on {key!r}; fields are {list(ExplanationResult.__dataclass_fields__)}")
    return [r for r in results if all(getattr(r, k) == v for k, v in criteria.items())]


def problems_solved(solved: pd.DataFrame) -> pd.DataFrame:
    """Problems, optimal ones and summed solver time per constraint variant and dimension."""
    return solved.groupby(["pointwise", "D"]).agg(problems=("status", "size"),
                                                  optimal=("status", lambda s: int((s == "optimal").sum())),
                                                  solve_time_s=("solve_time_s", "sum"))


def eta_check(solved: pd.DataFrame) -> pd.DataFrame:
    """Per variant and metric, over the optimal solutions: the range of L_faithful(E*)/η and the largest
    relative gap between the solver's objective and the NumPy loss."""
    ok = solved[solved["status"] == "optimal"]
    gap = (ok["objective"] - ok["L_robust"]).abs() / ok["L_robust"].abs().clip(lower=1e-12)
    return ok.assign(objective_gap=gap).groupby(["pointwise", "metric"]).agg(
        problems=("status", "size"), ratio_min=("L_faithful / eta", "min"), ratio_max=("L_faithful / eta", "max"),
        max_rel_objective_gap=("objective_gap", "max"))


# =========================================================================== agreement (Figures 1 and 3)

def agreement_table(results: Sequence[ExplanationResult], *, metrics: Sequence[str] = A.METRICS,
                    rtol: float = 0.0) -> pd.DataFrame:
    """Agreement rates per (variant, function, D, u): each pair of metrics, all of them, and each vs ∇f.

    Columns: ``max_sensitivity vs local_stability`` etc., ``all three`` and ``<metric> vs gradient``.
    Configurations missing a metric or a solution are skipped (and logged).
    """
    columns = (["pointwise", "function", "D", "u"] + [f"{a} vs {b}" for a, b in combinations(metrics, 2)]
               + ["all three" if len(metrics) == 3 else "all"] + [f"{m} vs gradient" for m in metrics])
    groups: dict[tuple, dict[str, ExplanationResult]] = {}
    for r in results:
        if r.metric in metrics:
            groups.setdefault((r.pointwise, r.function, r.dimension, r.radius), {})[r.metric] = r
    rows = []
    for (pointwise, function, dimension, radius), by_metric in groups.items():
        if any(m not in by_metric or not by_metric[m].has_solution for m in metrics):
            log.warning("skipping %s D=%s u=%s: a metric has no solution", function, dimension, radius)
            continue
        E = {m: by_metric[m].explanations for m in metrics}
        row = {"pointwise": pointwise, "function": function, "D": dimension, "u": radius}
        for a, b in combinations(metrics, 2):
            row[f"{a} vs {b}"] = A.agreement_rate(E[a], E[b], rtol=rtol)
        row["all three" if len(metrics) == 3 else "all"] = A.agreement_rate(*E.values(), rtol=rtol)
        G = by_metric[metrics[0]].gradients
        for m in metrics:
            row[f"{m} vs gradient"] = A.agreement_rate(E[m], G, rtol=rtol)
        rows.append(row)
    return pd.DataFrame(rows, columns=columns)


def _multi_dimensional(table: pd.DataFrame, *, pointwise: bool | None = False) -> pd.DataFrame:
    """The rows with D >= 2 (where agreement means something) of one variant (None: both)."""
    if not len(table):
        return table
    keep = table["D"] > 1
    if pointwise is not None:
        keep &= table["pointwise"] == pointwise
    return table[keep]


def agreement_by_dimension(table: pd.DataFrame, *, pointwise: bool = False,
                           functions: Sequence[str] | None = None) -> pd.Series:
    """Mean all-three agreement per D >= 2 (over functions and u) of one variant; empty without data."""
    rows = _multi_dimensional(table, pointwise=pointwise)
    if functions is not None and len(rows):
        rows = rows[rows["function"].isin(functions)]
    if not len(rows):
        return pd.Series(dtype=float)
    return rows.groupby("D")["all three"].mean()


def agreement_by_function(table: pd.DataFrame, *, pointwise: bool = False, dimension: int | None = None) -> pd.Series:
    """Mean all-three agreement per function over every D >= 2 (or only `dimension`) and u of one variant
    (empty without data)."""
    rows = _multi_dimensional(table, pointwise=pointwise)
    if dimension is not None and len(rows):
        rows = rows[rows["D"] == dimension]
    if not len(rows):
        return pd.Series(dtype=float)
    return rows.groupby("function", sort=False)["all three"].mean()


#: The roughness measure the functions are ranked by (a column of :func:`roughness`).
ROUGHNESS_MEASURE = "total variation of ∇f"


def roughness_vs_agreement(strict: pd.DataFrame, tie_aware: pd.DataFrame | None = None, *,
                           measure: str = ROUGHNESS_MEASURE, dimension: int | None = None) -> pd.DataFrame:
    """Per function that ran at some D >= 2 (or at `dimension`; global constraint): its :func:`roughness`,
    its mean all-three agreement (strict argmax, and tie-aware when given) and the ranks of both
    (1 = roughest, 1 = least agreement), sorted from the roughest function down. Empty without such rows."""
    agreement = agreement_by_function(strict, dimension=dimension)
    if not len(agreement):
        return pd.DataFrame()
    table = roughness_table(list(agreement.index))
    table["agreement"] = agreement
    if tie_aware is not None:
        table["tie-aware agreement"] = agreement_by_function(tie_aware, dimension=dimension).reindex(table.index)
    table["roughness rank"] = table[measure].rank(ascending=False).astype(int)
    table["agreement rank"] = table["agreement"].rank(ascending=True, method="min").astype(int)
    return table.sort_values(measure, ascending=False)


def rank_correlation(table: pd.DataFrame, column: str = "agreement", *, measure: str = ROUGHNESS_MEASURE) -> float:
    """Spearman's rank correlation between `measure` and `column` of :func:`roughness_vs_agreement`
    (negative: the rougher the gradient, the lower the agreement); NaN with fewer than three functions
    or a constant column."""
    if len(table) < 3 or table[column].nunique() < 2:
        return float("nan")
    return float(spearmanr(table[measure], table[column]).statistic)


def rank_correlation_p(table: pd.DataFrame, rho: float, column: str = "agreement", *,
                       measure: str = ROUGHNESS_MEASURE) -> float:
    """The one-sided p of :func:`rank_correlation` `rho` (on `rho`'s side of 0): the share of the pairings of
    `measure` with `column` whose Spearman ρ lies as far out (exact for up to 8 functions: scipy's
    ``permutation_test``)."""
    test = permutation_test((table[measure].to_numpy(), table[column].to_numpy()),
                            lambda x, y: spearmanr(x, y).statistic, permutation_type="pairings",
                            alternative="less" if rho < 0 else "greater", n_resamples=40320, random_state=0)
    return float(test.pvalue)


def rank_correlation_by_dimension(strict: pd.DataFrame, tie_aware: pd.DataFrame | None = None, *,
                                  measure: str = ROUGHNESS_MEASURE) -> pd.DataFrame:
    """Spearman's ρ between `measure` and the agreement of the functions, per D >= 2 and over all of them
    (row "all"), strict argmax and (when given) tie-aware; with the number of functions behind each ρ."""
    rows = _multi_dimensional(strict)
    dims = sorted(int(d) for d in rows["D"].unique()) if len(rows) else []
    out = []
    for d in [*dims, None]:
        table = roughness_vs_agreement(strict, tie_aware, measure=measure, dimension=d)
        row = {"D": "all" if d is None else d, "functions": len(table),
               "ρ (argmax)": rank_correlation(table, measure=measure) if len(table) else float("nan")}
        if tie_aware is not None:
            row["ρ (tie-aware)"] = (rank_correlation(table, "tie-aware agreement", measure=measure)
                                    if len(table) else float("nan"))
        out.append(row)
    return pd.DataFrame(out).set_index("D") if dims else pd.DataFrame()


def pairwise_agreement(strict: pd.DataFrame) -> pd.DataFrame:
    """Each pair of metrics and all three, averaged over functions and radii per D (global constraint)."""
    pairs = [c for c in strict if " vs " in c and "gradient" not in c] + ["all three"]
    return _multi_dimensional(strict).groupby("D")[pairs].mean()


def tie_report(strict: pd.DataFrame, tie_aware: pd.DataFrame) -> pd.DataFrame:
    """Per (D, function), global variant: how much of the argmax disagreement ties in ∇f explain.

    Columns: share of grid points whose gradient has tied most important features; the all-three
    agreement expected from random tie-breaking (:func:`explainopt.attributions.chance_agreement`); the
    mean over u of the all-three agreement by strict argmax (``strict``) and counting near-ties as ties
    (``tie_aware``).
    """
    rows = []
    aware = _multi_dimensional(tie_aware)
    for (d, name), sub in _multi_dimensional(strict).groupby(["D", "function"], sort=False):
        G = get_function(name).gradient(grid(int(d)))
        same = aware[(aware["D"] == d) & (aware["function"] == name)]
        rows.append({"D": int(d), "function": name, "∇f tied share": A.tied_top_share(G),
                     "chance agreement": A.chance_agreement(G, 3), "argmax agreement": sub["all three"].mean(),
                     "tie-aware agreement": same["all three"].mean()})
    return pd.DataFrame(rows)


def variant_comparison(strict: pd.DataFrame, tie_aware: pd.DataFrame,
                       metrics: Sequence[str] = A.METRICS) -> pd.DataFrame:
    """Mean agreement per D for the global and the pointwise constraint (beyond the paper).

    Columns: all-three agreement by strict argmax and tie-aware, and the tie-aware agreement of each
    explanation with ∇f (averaged over the metrics), each for ``global`` and ``pointwise``. Empty when
    no D >= 2 ran.
    """
    if not len(_multi_dimensional(strict, pointwise=None)):
        return pd.DataFrame()
    gradient_cols = [f"{m} vs gradient" for m in metrics]
    parts = {}
    for label, table in (("argmax", strict), ("tie-aware", tie_aware)):
        t = _multi_dimensional(table, pointwise=None)
        t = t.assign(variant=np.where(t["pointwise"], "pointwise", "global"))
        parts[f"{label} agreement"] = t.pivot_table(index="D", columns="variant", values="all three", aggfunc="mean")
        if label == "tie-aware":
            t = t.assign(**{"with ∇f": t[gradient_cols].mean(axis=1)})
            parts["tie-aware agreement with ∇f"] = t.pivot_table(index="D", columns="variant", values="with ∇f",
                                                                 aggfunc="mean")
    return pd.concat(parts, axis=1)


def squared_reading(results: Sequence[ExplanationResult], *, tie_rtol: float) -> pd.DataFrame:
    """All-three agreement per D (global constraint) with Table 2's squared average sensitivity in place of
    Appendix C's plain one, by strict argmax and tie-aware (empty when the squared reading did not run)."""
    metrics = ("max_sensitivity", "local_stability", "average_sensitivity_squared")
    tables = {label: agreement_table(results, metrics=metrics, rtol=rtol)
              for label, rtol in (("argmax", 0.0), ("tie-aware", tie_rtol))}
    if not all(len(_multi_dimensional(t)) for t in tables.values()):
        return pd.DataFrame()
    return pd.concat({k: _multi_dimensional(v).groupby("D")["all three"].mean() for k, v in tables.items()}, axis=1)


# =========================================================================== Figure 2: uneven budgets

_FIGURE2 = paper_table("optimizing_explanations_figure2")
#: The setting of Figure 2 (x³, D = 1, u = 1) and the x-intervals where the paper sees a faithful explanation.
FIGURE2 = dict(function=_FIGURE2["function"][0], dimension=int(_FIGURE2["D"][0]), radius=float(_FIGURE2["u"][0]))
FIGURE2_FAITHFUL = list(zip(_FIGURE2["x_from"].astype(float), _FIGURE2["x_to"].astype(float)))


def figure2_results(results: Sequence[ExplanationResult]) -> list[ExplanationResult]:
    """The solutions in the setting of Figure 2 (every metric and variant that ran)."""
    return select(results, **FIGURE2)


def in_paper_intervals(x) -> np.ndarray:
    """Whether each x lies in one of the x-intervals where the paper sees E follow ∇f in Figure 2."""
    x = np.asarray(x, float)
    return np.any([(x >= a) & (x <= b) for a, b in FIGURE2_FAITHFUL], axis=0)


def paper_faithful_share() -> float:
    """Share of the Figure 2 grid's points inside the x-intervals where the paper sees E follow ∇f."""
    return float(np.mean(in_paper_intervals(grid(FIGURE2["dimension"])[:, 0])))


#: E follows ∇f at a point when ‖E_n − ∇f_n‖ ≤ FAITHFUL_RTOL · ‖∇f_n‖: what a reader of Figure 2 sees as the
#: explanation on the gradient's curve; the claim shows the verdict's sensitivity at SENSITIVITY_RTOLS too.
FAITHFUL_RTOL, SENSITIVITY_RTOLS = 0.10, (0.05, 0.20)


def local_profile(result: ExplanationResult, *, tol: float = 1e-3, rtol: float = FAITHFUL_RTOL) -> dict:
    """How unevenly a solution spends its faithfulness budget (the Figure 2 phenomenon).

    ``faithful share`` = share of points where E follows ∇f: ``‖E_n − ∇f_n‖ ≤ rtol · ‖∇f_n‖`` (also at
    each of :data:`SENSITIVITY_RTOLS`); ``flat share`` = share of points whose explanation equals that of a
    grid neighbour up to ``tol · sqrt(b)`` with the per-point budget ``b = η / N``; ``max δ_n / b`` with
    ``δ_n = ‖E_n − ∇f_n‖²`` (≤ 1 under the pointwise constraint; far above 1 means the budget is
    concentrated). Faithful x-ranges are listed for D = 1, with the share of the faithful points that lie in
    Figure 2's faithful intervals (:func:`in_paper_intervals`), at ``rtol`` and at each of :data:`SENSITIVITY_RTOLS`.
    """
    if not result.has_solution:
        raise ValueError(f"{result.function} D={result.dimension} u={result.radius} {result.metric} has no solution")
    budget = result.eta / len(result.X)
    gap = np.linalg.norm(result.explanations - result.gradients, axis=1)
    scale = np.linalg.norm(result.gradients, axis=1)
    nb = A.neighbourhood(result.X, radius=A.grid_spacing(result.X))
    step = np.linalg.norm(nb.difference @ result.explanations, axis=1) <= tol * np.sqrt(budget)
    flat = np.zeros(len(result.X), dtype=bool)
    flat[nb.i[step]] = flat[nb.j[step]] = True
    faithful = gap <= rtol * scale
    out = {"function": result.function, "D": result.dimension, "u": result.radius, "metric": result.metric,
           "pointwise": result.pointwise, "faithful share": float(np.mean(faithful)),
           **{f"faithful share at {r:.0%}": float(np.mean(gap <= r * scale)) for r in SENSITIVITY_RTOLS},
           "flat share": float(flat.mean()), "max δ_n / (η/N)": float(np.max(gap ** 2 / budget))}
    if result.dimension == 1:
        out["faithful x-ranges"] = _runs(result.X[:, 0], faithful)
        for label, mask in [("", faithful), *((f" at {r:.0%}", gap <= r * scale) for r in SENSITIVITY_RTOLS)]:
            inside = in_paper_intervals(result.X[mask, 0])
            out[f"faithful in the paper's intervals{label}"] = float(np.mean(inside)) if mask.any() else np.nan
    return out


def _runs(x: np.ndarray, mask: np.ndarray) -> str:
    """Contiguous runs of True in `mask` as "[a, b]" ranges of x."""
    edges = np.flatnonzero(np.diff(np.r_[0, mask.astype(int), 0]))
    return ", ".join(f"[{x[a]:.1f}, {x[b - 1]:.1f}]" for a, b in zip(edges[::2], edges[1::2])) or "none"


def profiles(results: Sequence[ExplanationResult], *, metrics: Sequence[str] = A.METRICS) -> pd.DataFrame:
    """:func:`local_profile` of each solved result of the given metrics, one row each."""
    return pd.DataFrame([local_profile(r) for r in results if r.metric in metrics and r.has_solution])


# =========================================================================== the trade-off as η moves

#: Faithfulness budgets η / L_faithful^max of the sweep (the paper fixes 0.2).
ETA_FRACTIONS = (0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)


def eta_sweep(function: str = "x^3", *, dimension: int = 1, radius: float = 1.0,
              fractions: Sequence[float] = ETA_FRACTIONS, metrics: Sequence[str] = A.METRICS,
              solver: str | None = None) -> list[ExplanationResult]:
    """:func:`optimize_explanations` for each budget ``η = fraction · L_faithful^max`` in `fractions` and
    each metric (global constraint; default: Figure 2's setting, x³ with D = 1 and u = 1). Beyond the
    paper, which fixes the fraction at 0.2: how the optimal explanations move along the trade-off."""
    if not len(fractions):
        raise ValueError("fractions must name at least one budget η / L_faithful^max in (0, 1)")
    return [optimize_explanations(function, dimension, radius=radius, metric=m, eta_fraction=float(q), solver=solver)
            for q in sorted(fractions) for m in metrics]


def tradeoff_table(sweep: Sequence[ExplanationResult]) -> pd.DataFrame:
    """One row per solved problem of :func:`eta_sweep`: the budget η / L_faithful^max, the metric,
    L_faithful / η, the robustness loss and that loss relative to the same metric's at the smallest budget."""
    rows = [{"η / L_faithful^max": r.eta / r.faithful_max, "metric": r.metric, "status": r.status,
             "L_faithful / η": r.faithfulness_ratio, "L_robust": r.robustness} for r in sweep]
    table = pd.DataFrame(rows)
    if not len(table):
        return table
    first = table.groupby("metric")["L_robust"].transform("first")
    return table.assign(**{"L_robust / L_robust(smallest η)": table["L_robust"] / first})


# =========================================================================== paper vs. this book

#: The chapter's claims, declared in one place: id, check, wording and evidence rule (data/optimizing_explanations_claims.csv).
CLAIMS = verdicts.ClaimBook("01", paper_table("optimizing_explanations_claims"))
PAPER = CLAIMS.table
#: How close to η a solution's faithfulness loss must be to count as "on the constraint".
ON_CONSTRAINT_RTOL = 1e-4
#: The functions for which the paper reports agreement below 0.5 at D = 4.
LOW_AGREEMENT_FUNCTIONS = ("x^3", "sin x^3")
#: Figure 2's reading: "faithful in some regions" = at least this share of points follows ∇f, "flat
#: elsewhere" = at least this share equals a neighbour; "partly" below this fraction of the paper's share;
#: the regions are the paper's when at least FAITHFUL_INSIDE of the faithful points lie in its intervals.
FAITHFUL_MIN, FLAT_MIN, FAITHFUL_PARTLY, FAITHFUL_INSIDE = 0.1, 0.3, 0.9, 0.9
#: "Disagreement concentrates on steep or oscillatory functions": Spearman ρ (roughness vs agreement) at most
#: this is *reproduced*, between it and 0 *partly*; checked only with at least ROUGH_MIN_FUNCTIONS functions.
ROUGH_RHO, ROUGH_MIN_FUNCTIONS = -0.5, 4


def _decreasing(values: pd.Series) -> bool:
    return bool(all(a > b for a, b in zip(values.to_numpy(), values.to_numpy()[1:])))


def _per_dimension(values: pd.Series) -> str:
    """Each D's mean, printed on its side of the midpoints with its neighbours' (the claim compares each with
    the previous, so the printed numbers compare as the means do)."""
    v = values.to_numpy()
    middles = (v[:-1] + v[1:]) / 2
    return ", ".join(f"D={d}: {verdicts.beside(v[i], '.3f', *middles[max(i - 1, 0):i + 1])}"
                     for i, d in enumerate(values.index)) or "n/a"


def claim_on_constraint(solved: pd.DataFrame) -> reporting.Claim:
    """Every globally constrained problem is solved with L_faithful(E*) = η up to ON_CONSTRAINT_RTOL."""
    fields = {"rtol": f"{ON_CONSTRAINT_RTOL:.0e}".replace("e-0", "e-")}
    glob = solved[~solved["pointwise"]] if len(solved) else solved
    if not len(glob):
        return CLAIMS.claim("01-on-constraint", fields=fields, ours="n/a", holds=None)
    ok = glob[glob["status"] == "optimal"]
    deviation = (ok["L_faithful / eta"] - 1).abs()
    off = bool((deviation > ON_CONSTRAINT_RTOL).any())      # one problem off the constraint decides it
    holds = False if len(ok) < len(glob) or off else reporting.every(deviation, lambda v: v <= ON_CONSTRAINT_RTOL)
    lacking = int(deviation.isna().sum())
    why = "; ".join(filter(None, ["" if len(ok) == len(glob) else f"{len(glob) - len(ok)} problems were not solved to optimality",
                                  f"L_faithful/η missing for {lacking} problems" if lacking else ""]))
    return CLAIMS.claim("01-on-constraint", fields=fields, holds=holds, evidence=len(glob), why=why,
                           ours=f"max |L_faithful/η − 1| = {verdicts.beside(deviation.max(), '.1e', ON_CONSTRAINT_RTOL)} "
                                f"over {len(ok)} problems")


def claim_high_agreement_in_2d(strict: pd.DataFrame, ties: pd.DataFrame | None = None) -> reporting.Claim:
    """Mean all-three agreement at D = 2 (strict argmax, global constraint) is at least the paper's ≳ 0.8; with
    `ties` (:func:`tie_report`), the reason gives the agreement random tie-breaking would give on the same cells."""
    least = float(PAPER.loc["01-agreement-d2", "value"])
    rows = _multi_dimensional(strict)
    rows = rows[rows["D"] == 2] if len(rows) else rows
    if not len(rows) or reporting.missing(rows["all three"]):
        return CLAIMS.claim("01-agreement-d2", fields={"least": least}, ours="n/a", holds=None)
    mean = rows["all three"].mean()
    chance = _chance(rows, ties)
    return CLAIMS.claim("01-agreement-d2", fields={"least": least}, holds=bool(mean >= least), evidence=len(rows),
                           ours=f"mean {verdicts.beside(mean, '.3f', least)}, "
                                f"min {verdicts.beside(rows['all three'].min(), '.3f', least)}",
                           why="" if chance.empty else f"by strict argmax, as the paper; {TIE_BREAKING} would agree at a "
                                                       f"mean {chance.mean():.3f} on the same cells")


#: What :func:`_chance` reads, in the claims' words (:func:`explainopt.attributions.chance_agreement`).
TIE_BREAKING = "explanations that keep ∇f's most important features and break its ties at random (not by round-off)"


def _chance(cells: pd.DataFrame, ties: pd.DataFrame | None) -> pd.Series:
    """The all-three agreement that random tie-breaking would give (:func:`tie_report`'s ``chance agreement``)
    on each of `cells` (rows with D and function), by the cells' index; empty without `ties`. Unlike strict
    argmax it does not hang on round-off: on the grids, ∇f has several equally important features at most
    points, and a solver's last digits pick which one an explanation's argmax names."""
    if ties is None or not len(ties) or not len(cells):
        return pd.Series(dtype=float)
    chance = ties.set_index(["D", "function"])["chance agreement"]
    return pd.Series(chance.reindex(pd.MultiIndex.from_arrays([cells["D"], cells["function"]])).to_numpy(),
                     index=cells.index).dropna()


def claim_low_agreement_in_4d(strict: pd.DataFrame, tie_aware: pd.DataFrame | None = None,
                              ties: pd.DataFrame | None = None) -> reporting.Claim:
    """All-three agreement at D = 4 is below the paper's 0.5 for x³ and sin x³ at every u (each function needs a
    cell); with `tie_aware`, the reason gives the same cells' agreement when round-off ties count as agreement,
    with `ties` (:func:`tie_report`) the agreement random tie-breaking would give."""
    below = float(PAPER.loc["01-agreement-d4", "value"])
    fields = {"below": below, "names": " and ".join(pretty(f) for f in LOW_AGREEMENT_FUNCTIONS)}
    rows, aware = (_low_agreement_cells(table) for table in (strict, tie_aware))
    absent = [pretty(f) for f in LOW_AGREEMENT_FUNCTIONS if f not in set(rows.get("function", ()))]
    if absent:
        return CLAIMS.claim("01-agreement-d4", fields=fields, ours="n/a", holds=None, evidence=len(rows),
                            why=f"no D = 4 cell of {', '.join(absent)}")
    span = "" if aware is None or not len(aware) else _span_text(aware["all three"])
    chance = _chance(rows, ties)
    why = "; ".join(filter(None, [
        "by strict argmax, as the paper" if span or len(chance) else "",
        span and f"counting round-off ties among the most important features as agreement, the same cells read {span}",
        f"{TIE_BREAKING} would agree at {_span_text(chance)}" if len(chance) else ""]))
    return CLAIMS.claim("01-agreement-d4", fields=fields, evidence=len(rows), why=why,
                           ours=", ".join(f"{f} u={u:g}: {verdicts.beside(a, '.3f', below)}" for f, u, a in
                                          zip(rows["function"], rows["u"], rows["all three"])),
                           holds=reporting.every(rows["all three"], lambda a: a < below))


def _span_text(values: pd.Series) -> str:
    """"lo-hi" of `values` with three decimals (one number when both read the same)."""
    return "-".join(dict.fromkeys(f"{a:.3f}" for a in (values.min(), values.max())))


def _low_agreement_cells(agreement: pd.DataFrame | None) -> pd.DataFrame | None:
    """The D = 4 cells of the functions claim 01-agreement-d4 names (None stays None)."""
    if agreement is None:
        return None
    rows = _multi_dimensional(agreement)
    return rows[(rows["D"] == 4) & rows["function"].isin(LOW_AGREEMENT_FUNCTIONS)] if len(rows) else rows


def claim_agreement_decreases(strict: pd.DataFrame, ties: pd.DataFrame | None = None) -> reporting.Claim:
    """Mean all-three agreement (strict argmax) decreases from one D to the next, each D's mean over the same
    functions (:func:`_by_dimension_on_common_functions`); needs three D >= 2. With `ties` (:func:`tie_report`),
    the reason gives the means random tie-breaking would give on the same cells."""
    by_d, left_out = _by_dimension_on_common_functions(strict)
    rows = _multi_dimensional(strict)
    rows = rows[rows["function"].isin(_common_functions(rows))] if len(rows) else rows
    chance = _chance(rows, ties)
    chance_by_d = chance.groupby(rows.loc[chance.index, "D"]).mean() if len(chance) else chance
    return CLAIMS.claim("01-decreasing", ours=_per_dimension(by_d), evidence=len(by_d), minimum=3,
                        why="; ".join(filter(None, [left_out, f"{TIE_BREAKING} would agree at "
                                                    + ", ".join(f"D={d}: {v:.3f}" for d, v in chance_by_d.items())
                                                    if len(chance_by_d) else ""])),
                        holds=_decreasing(by_d) if len(by_d) >= 3 and not reporting.missing(by_d) else None)


def _by_dimension_on_common_functions(table: pd.DataFrame) -> tuple[pd.Series, str]:
    """:func:`agreement_by_dimension` over the functions computed at every D >= 2 (so that no D's mean moves by
    which functions a partly computed run holds; audit 21a), and, in words, the functions left out ("" if none)."""
    rows = _multi_dimensional(table)
    if not len(rows):
        return pd.Series(dtype=float), ""
    common = _common_functions(rows)
    absent = sorted(set(rows["function"]) - set(common))
    return (agreement_by_dimension(table, functions=common),
            f"{', '.join(pretty(f) for f in absent)} left out: not computed at every D" if absent else "")


def _common_functions(rows: pd.DataFrame) -> list[str]:
    """The functions of `rows` (:func:`_multi_dimensional`'s) computed at every D among them."""
    return sorted(set.intersection(*rows.groupby("D")["function"].agg(set))) if len(rows) else []


def _figure2_reading(faithful: float, flat: float, inside: float, paper_share: float) -> tuple[bool, bool]:
    """(holds, partly) of :func:`claim_figure2`'s rule on a faithful share, a flat share and the share of the
    faithful points inside the paper's intervals."""
    holds = bool(faithful >= FAITHFUL_MIN and flat >= FLAT_MIN and inside >= FAITHFUL_INSIDE)
    return holds, holds and faithful < FAITHFUL_PARTLY * paper_share


def _sensitivity_text(row: pd.Series, rtol: float, flat: float, paper_share: float, reading: tuple) -> str:
    """The faithful share at another tolerance `rtol`, and the verdict the same rule reads there where it is
    not `reading` (the decided (holds, partly)): how sensitive the verdict is to the tolerance (issue 26 #3)."""
    share, inside = row[f"faithful share at {rtol:.0%}"], row.get(f"faithful in the paper's intervals at {rtol:.0%}")
    text = f"{share:.0%} within {rtol:.0%}"
    if inside is None or reporting.missing(share, inside):
        return text
    there = _figure2_reading(share, flat, inside, paper_share)
    word = reporting.PARTLY if there[1] else reporting.REPRODUCED if there[0] else reporting.DIFFERS
    return text if there == reading else f"{text} would read {word} ({inside:.0%} of those in the paper's intervals)"


def claim_figure2(profile: pd.DataFrame) -> reporting.Claim:
    """In Figure 2's setting, average sensitivity under the global constraint follows ∇f at some points
    (FAITHFUL_MIN) and is flat at others (FLAT_MIN), and the points it follows lie where the paper's do
    (FAITHFUL_INSIDE of them in the paper's intervals); *partly* when its faithful points are fewer than
    FAITHFUL_PARTLY of those in the paper's faithful intervals."""
    fields = {"function": pretty(FIGURE2["function"]), "dimension": FIGURE2["dimension"], "radius": FIGURE2["radius"]}
    row = profile[(profile["metric"] == "average_sensitivity") & ~profile["pointwise"]] if len(profile) else profile
    if not len(row) or reporting.missing(row["faithful share"].iloc[0], row["flat share"].iloc[0]):
        return CLAIMS.claim("01-figure2", fields=fields, ours="n/a", holds=None)
    faithful, flat = row["faithful share"].iloc[0], row["flat share"].iloc[0]
    inside = row["faithful in the paper's intervals"].iloc[0]
    paper_share = paper_faithful_share()
    holds, partly = _figure2_reading(faithful, flat, inside, paper_share)
    intervals = " ∪ ".join(f"[{a:g}, {b:g}]" for a, b in FIGURE2_FAITHFUL).replace("-", "−")
    rule = f"faithful = E within {FAITHFUL_RTOL:.0%} of ∇f"
    if partly:
        why = (f"{rule}: fewer faithful points than the paper's intervals hold ({paper_share:.0%} of the points lie "
               f"in {intervals})")
    elif not holds:
        why = (f"{rule}; the check asks for at least {FAITHFUL_MIN:.0%} faithful and {FLAT_MIN:.0%} flat points, "
               f"{FAITHFUL_INSIDE:.0%} of the faithful ones in {intervals}")
    else:
        why = f"{rule}; the paper's intervals {intervals} hold {paper_share:.0%} of the points"
    sensitivity = ", ".join(_sensitivity_text(row.iloc[0], r, flat, paper_share, (holds, partly))
                            for r in SENSITIVITY_RTOLS if f"faithful share at {r:.0%}" in row)
    return CLAIMS.claim("01-figure2", fields=fields, holds=holds, partly=partly, why=why,
                           ours=f"faithful on {row['faithful x-ranges'].iloc[0]} "
                                f"({verdicts.beside(faithful, '.0%', FAITHFUL_MIN)} of points; "
                                f"{verdicts.beside(inside, '.0%', FAITHFUL_INSIDE)} of them in the paper's "
                                f"intervals), flat at {verdicts.beside(flat, '.0%', FLAT_MIN)}"
                                + (f"; {sensitivity}" if sensitivity else ""))


def claim_tie_aware_decreases(tie_aware: pd.DataFrame, ties: pd.DataFrame) -> reporting.Claim:
    """Mean all-three agreement, counting near-ties as ties, decreases from one D to the next."""
    by_d, why = _by_dimension_on_common_functions(tie_aware)
    if len(ties):
        top = int(ties["D"].max())
        why = "; ".join(filter(None, [
            why, f"∇f has tied most important features at {ties.loc[ties['D'] == top, '∇f tied share'].mean():.0%} "
                 f"of the D = {top} grid points (mean over the functions); strict argmax breaks such ties by round-off",
            _saturated(ties, top)]))
    return CLAIMS.claim("01-tie-aware-decreasing", ours=_per_dimension(by_d), why=why, evidence=len(by_d), minimum=3,
                           holds=_decreasing(by_d) if len(by_d) >= 3 and not reporting.missing(by_d) else None)


def _saturated(ties: pd.DataFrame, dimension: int) -> str:
    """How many functions agree at every point of the `dimension` grid when ties count as agreement ("" if none):
    on a coarse grid (3 points per axis at D = 4) most gradients tie, and tie-aware agreement saturates."""
    at = ties.loc[ties["D"] == dimension, "tie-aware agreement"]
    full = int((at >= 1 - 1e-12).sum())
    return (f"tie-aware agreement is 1 at every D = {dimension} grid point for {full} of the {len(at)} functions"
            if full else "")


def _minus(value: float, *bounds: float) -> str:
    """A number with two decimals (more where it takes them to lie on its side of `bounds`,
    :func:`~explainopt.verdicts.beside`) and a typographic minus ("n/a" when NaN)."""
    return verdicts.beside(value, ".2f", *bounds).replace("-", "−")


def claim_rough_functions_disagree(table: pd.DataFrame, by_dimension: pd.DataFrame | None = None) -> reporting.Claim:
    """Section 4: divergence is "particularly true ... for functions with steep or oscillatory gradients".

    Checked on :func:`roughness_vs_agreement`: Spearman's ρ between the total variation of ∇f and the mean
    all-three agreement (strict argmax, global constraint, every D >= 2 and u). Reproduced when
    ``ρ ≤ ROUGH_RHO``, partly when ``ROUGH_RHO < ρ < 0``, differs otherwise; *not run* with fewer than
    ROUGH_MIN_FUNCTIONS functions. `by_dimension` (:func:`rank_correlation_by_dimension`), when given, adds
    the ρ of each D to the reason.
    """
    fields = {"rho": _minus(ROUGH_RHO)}
    if not len(table):
        return CLAIMS.claim("01-rough-functions", fields=fields, ours="n/a", holds=None, evidence=0,
                            minimum=ROUGH_MIN_FUNCTIONS)
    rho = rank_correlation(table)
    order = ", ".join(f"{pretty(f)} {a:.2f}" for f, a in table["agreement"].items())
    ours = f"ρ = {_minus(rho, ROUGH_RHO, 0.0)} over {len(table)} functions (agreement, roughest first: {order})"
    if len(table) < ROUGH_MIN_FUNCTIONS:
        why = f"a rank correlation over fewer than {ROUGH_MIN_FUNCTIONS} functions says little"
    else:
        parts = []
        if not np.isnan(rho):
            parts.append(f"with {len(table)} functions, a ρ this far {'below' if rho < 0 else 'above'} 0 has "
                         f"one-sided p = {rank_correlation_p(table, rho):.2f} (exact, over the functions' orderings)")
        if "tie-aware agreement" in table:
            parts.append(f"tie-aware agreement gives ρ = {_minus(rank_correlation(table, 'tie-aware agreement'))}")
        if by_dimension is not None and len(by_dimension):
            per_d = by_dimension.drop(index="all", errors="ignore")
            parts.append("per D (argmax): " + ", ".join(f"D = {d}: {_minus(r)}" for d, r in per_d["ρ (argmax)"].items()))
        why = "; ".join(parts)
    holds = None if np.isnan(rho) else bool(rho < 0)
    return CLAIMS.claim("01-rough-functions", fields=fields, ours=ours, holds=holds, partly=bool(holds and rho > ROUGH_RHO),
                           why=why, evidence=len(table), minimum=ROUGH_MIN_FUNCTIONS)


def claims(solved: pd.DataFrame, strict: pd.DataFrame, tie_aware: pd.DataFrame, ties: pd.DataFrame,
                 profile: pd.DataFrame) -> list[reporting.Claim]:
    """The chapter's claims, each checked on this run's tables (results, agreement by strict argmax and
    tie-aware, :func:`tie_report`, Figure 2's :func:`profiles`)."""
    return [claim_on_constraint(solved), claim_high_agreement_in_2d(strict, ties),
            claim_low_agreement_in_4d(strict, tie_aware, ties),
            claim_agreement_decreases(strict, ties), claim_rough_functions_disagree(roughness_vs_agreement(strict, tie_aware),
                                           rank_correlation_by_dimension(strict, tie_aware)),
            claim_figure2(profile), claim_tie_aware_decreases(tie_aware, ties)]


def _relation(ours: pd.Series, other: pd.Series) -> str:
    """How `ours` compares with `other` at every D, in words."""
    if (ours > other).all():
        return "above the global constraint's at every D"
    if (ours <= other).all():
        return "not above the global constraint's at any D"
    return "above the global constraint's at some D only"


def _rough_lesson(rough: pd.DataFrame) -> str:
    """The summary's sentence on steep or oscillatory gradients (:func:`roughness_vs_agreement`)."""
    rho = rank_correlation(rough)
    order = ", ".join(pretty(f) for f in rough.index)
    least = rough["agreement"].idxmin()
    if np.isnan(rho):
        direction = "too few functions ran to rank them"
    elif rho <= ROUGH_RHO:
        direction = "the rougher the gradient, the lower the agreement, as the paper says"
    elif rho < 0:
        direction = "rougher gradients agree somewhat less, weakly"
    else:
        direction = "rougher gradients do not agree less: the paper's reading does not survive a ranking"
    return (f"- **Steep or oscillatory gradients.** By the total variation of ∇f the functions rank {order} "
            f"(roughest first); their mean all-three agreement over D ≥ 2 gives Spearman ρ = {_minus(rho)}: "
            f"{direction}. The least agreement is {pretty(least)}'s ({rough['agreement'].min():.2f}).")


def lessons(solved: pd.DataFrame, strict: pd.DataFrame, tie_aware: pd.DataFrame, ties: pd.DataFrame,
            compare: pd.DataFrame, *, solvers: Sequence[str], tie_rtol: float,
            rough: pd.DataFrame | None = None) -> str:
    """The "what we learned" summary as Markdown, every number and direction read from this run
    (`rough`: :func:`roughness_vs_agreement`, adds the sentence on steep or oscillatory gradients)."""
    lines = []
    glob = solved[~solved["pointwise"]] if len(solved) else solved
    if len(glob):
        ok = glob[glob["status"] == "optimal"]
        deviation = (ok["L_faithful / eta"] - 1).abs().max()
        sits = len(ok) == len(glob) and deviation <= ON_CONSTRAINT_RTOL
        count = f"All {len(glob)}" if len(ok) == len(glob) else f"{len(ok)} of the {len(glob)}"
        lines.append(f"- **Solutions {'sit' if sits else 'do not all sit'} on the constraint.** {count} globally "
                     f"constrained problems were solved ({', '.join(solvers) or 'no solver'}) with L_faithful/η "
                     f"within {deviation:.1e} of 1.")
    by_d, by_d_tied = agreement_by_dimension(strict), agreement_by_dimension(tie_aware)
    if len(by_d) >= 2 and len(ties):
        falls = _decreasing(by_d)
        lines.append(f"- **By the paper's measure, agreement {'falls steadily' if falls else 'does not fall steadily'} "
                     "with D:** strict-argmax agreement " + ", ".join(f"{v:.2f} at D = {d}" for d, v in by_d.items())
                     + ".")
        decline, decline_tied = by_d.iloc[0] - by_d.iloc[-1], by_d_tied.iloc[0] - by_d_tied.iloc[-1]
        ties_explain = decline > 0 and decline_tied < decline / 2
        header = ("Most of that decline is ties." if ties_explain else
                  "Ties explain less than half of that decline." if decline > 0 else "Ties in ∇f.")
        chance = ties.groupby("D")["chance agreement"].mean()
        lowest = ties.loc[ties["tie-aware agreement"].idxmin()]
        lines.append(f"- **{header}** Random tie-breaking alone predicts "
                     + ", ".join(f"{chance[d]:.2f}" for d in by_d.index) + " for the same dimensions; counting "
                     f"near-ties (rtol {tie_rtol:g}) as ties, agreement is "
                     + ", ".join(f"{v:.2f}" for v in by_d_tied.to_numpy()) + "."
                     + (" Strict argmax turns round-off between tied features into disagreement." if ties_explain else "")
                     + f" The lowest tie-aware agreement is {lowest['tie-aware agreement']:.2f} ({lowest['function']}, "
                     f"D = {lowest['D']}), and tie-aware agreement "
                     f"{'falls steadily' if _decreasing(by_d_tied) else 'does not fall steadily'} with D.")
    if rough is not None and len(rough):
        lines.append(_rough_lesson(rough))
    if len(compare):
        tied_pw, tied_gl = compare[("tie-aware agreement", "pointwise")], compare[("tie-aware agreement", "global")]
        strict_pw, strict_gl = compare[("argmax agreement", "pointwise")], compare[("argmax agreement", "global")]
        lines.append("- **Pointwise constraints** bound every point's deviation by η/N (max δ_n/(η/N) ≤ 1 by "
                     "construction; Figure 2, right). Tie-aware agreement under the pointwise constraint: "
                     + ", ".join(f"D = {d}: {tied_pw[d]:.2f} (global {tied_gl[d]:.2f})" for d in compare.index)
                     + "; by strict argmax: "
                     + ", ".join(f"D = {d}: {strict_pw[d]:.2f} (global {strict_gl[d]:.2f})" for d in compare.index)
                     + f", {_relation(strict_pw, strict_gl)}.")
    squared = bool(len(solved)) and bool((solved["metric"] == "average_sensitivity_squared").any())
    solver_note = ("MOSEK, as the paper" if "mosek" in solvers else
                   f"{', '.join(solvers) or 'no solver'} instead of MOSEK")
    lines.append(f"- **Where we differ from the paper's set-up:** {solver_note}; average sensitivity as in "
                 "Appendix C (unsquared)" + ("; Table 2's squared reading beside it" if squared else "")
                 + "; the radius rule read as u ≥ grid step; gradients in closed form. The paper's figures are not "
                 "in our copy, so per-cell numbers are compared only through its stated claims.")
    return "\n".join(lines)


# =========================================================================== figures

def agreement_heatmap_data(table: pd.DataFrame, dimension: int, *, column: str = "all three",
                           pointwise: bool = False, functions: Sequence[str] | None = None) -> pd.DataFrame:
    """Functions × radius matrix of one agreement column for one D (what Figures 1 and 3 show)."""
    sub = table[(table["D"] == dimension) & (table["pointwise"] == pointwise)]
    data = sub.pivot(index="function", columns="u", values=column)
    order = [f for f in (functions or FUNCTIONS) if f in data.index]
    data = data.loc[order]
    data.columns = [f"u = {u:g}" for u in data.columns]
    return data


