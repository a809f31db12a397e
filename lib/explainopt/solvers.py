"""One place that chooses and calls optimization solvers through cvxpy.

Open-source defaults make every chapter reproducible on any machine: HiGHS for LP and MILP, Clarabel
for QP and SOCP, SCIP (when installed) for mixed-integer problems with quadratic or conic parts.
Commercial solvers (Gurobi, MOSEK) are used only when asked for (by argument or through the
``EXPLAINOPT_SOLVER`` environment variable) and only if they are importable *and* licensed; a tiny
probe problem, solved once per process, decides that.

Every solve returns a :class:`SolveResult` with one status vocabulary:

``optimal``      proven optimal (within the MIP gap);
``time_limit``   a limit was reached and a feasible incumbent is available;
``no_solution``  a limit was reached without any feasible point (values are junk and are discarded);
``infeasible``   proven infeasible;
``unbounded``    proven unbounded;
``licence_limit`` a commercial solver refused the model for its size (a size-limited licence);
``error``        the solver failed (message says why).

A model refused by a size-limited licence is, by default, solved again with the open-source solver
of its class: the result then names that solver and keeps ``fallback_from`` and the reason, so a
chapter can say which of its cells fell back instead of counting them as failures.

Beside the cvxpy path, :class:`MatrixMILP` is a MILP in matrix form that is only ever grown (add
columns, add rows) and kept alive in HiGHS or Gurobi across solves: each solve hands the solver only
what was added since the last one, with no modelling layer to recompile (cutting-plane loops such as
Algorithm 1 of Maragno et al. re-solve one growing model many times). Its :meth:`MatrixMILP.solve`
returns a :class:`MILPSolution` (a :class:`SolveResult` with the values and the proven dual bound), with
the same statuses and the same licence fallback (``fallback_from``).

Solver options are set in one place per solver: :data:`HIGHS_OPTIONS` and :data:`GUROBI_OPTIONS` (the
fixed ones, e.g. the random seed) apply to both paths, cvxpy's and :class:`MatrixMILP`'s.
"""

from __future__ import annotations

import functools
import logging
import math
import os
import time
import warnings
from dataclasses import dataclass

import cvxpy as cp
import numpy as np
import scipy.sparse as sp

try:
    import highspy
except ImportError:  # an interpreter without highspy: MatrixMILP has no HiGHS
    highspy = None
try:
    import gurobipy
except ImportError:  # Gurobi is optional
    gurobipy = None

log = logging.getLogger(__name__)

OPTIMAL, TIME_LIMIT, NO_SOLUTION = "optimal", "time_limit", "no_solution"
INFEASIBLE, UNBOUNDED, ERROR, LICENCE_LIMIT = "infeasible", "unbounded", "error", "licence_limit"

#: Solver names as users write them -> cvxpy's names.
CVXPY_NAMES = {
    "highs": "HIGHS",
    "clarabel": "CLARABEL",
    "scip": "SCIP",
    "gurobi": "GUROBI",
    "mosek": "MOSEK",
    "ecos": "ECOS",
    "scs": "SCS",
}
OPEN_SOURCE = ("highs", "clarabel", "scip", "ecos", "scs")
COMMERCIAL = ("gurobi", "mosek")

#: Which solvers can handle which problem class, in order of preference (open source first).
CAPABLE = {
    "lp": ("highs", "clarabel", "gurobi", "mosek", "scip"),
    "qp": ("clarabel", "highs", "gurobi", "mosek", "scip"),
    "socp": ("clarabel", "gurobi", "mosek", "ecos", "scs", "scip"),
    "milp": ("highs", "gurobi", "scip", "mosek"),
    "miqp": ("scip", "gurobi", "mosek"),
    "misocp": ("scip", "gurobi", "mosek"),
}


#: The fixed HiGHS options of every solve, in HiGHS's own names (cvxpy's path and :class:`MatrixMILP`). The
#: MIP feasibility tolerance is 1e-9 (HiGHS's default: 1e-6), far below the margins that the encoders give
#: strict inequalities (split and score margins of about 1e-5). With the default, HiGHS 1.15.1 reported
#: "optimal" at distance 0.1826 for a chapter-5 forest counterfactual whose optimum is 0.1187
#: (tests/test_solver_regressions.py); with 1e-9 it finds 0.1187, at the same CPU time on 64 chapter-5
#: MILPs (143 s against 147 s).
HIGHS_OPTIONS = {"random_seed": 0, "mip_feasibility_tolerance": 1e-9}
#: The fixed Gurobi parameters of every solve (cvxpy's path and :class:`MatrixMILP`).
GUROBI_OPTIONS = {"Seed": 0}


class SolverUnavailableError(RuntimeError):
    """Raised when a requested solver is not installed, not licensed or cannot solve the problem class."""


@dataclass
class SolveResult:
    """Outcome of one solve, independent of the solver used."""

    status: str
    objective: float | None
    solver: str
    solve_time: float
    gap: float | None = None
    message: str = ""
    fallback_from: str | None = None  # the commercial solver that refused the model (licence size)

    @property
    def has_solution(self) -> bool:
        """True when the variables hold a feasible point (optimal or incumbent at a limit)."""
        return self.status in (OPTIMAL, TIME_LIMIT)


def problem_class(problem: cp.Problem) -> str:
    """Classify a cvxpy problem as lp, qp, socp, milp, miqp or misocp.

    Examples
    --------
    >>> import cvxpy as cp
    >>> from explainopt.solvers import problem_class
    >>> x, z = cp.Variable(2), cp.Variable(boolean=True)
    >>> problem_class(cp.Problem(cp.Minimize(cp.norm1(x)), [x >= 1]))  # an l1 objective is an LP
    'lp'
    >>> problem_class(cp.Problem(cp.Minimize(cp.norm2(x) + z)))
    'misocp'
    """
    integer = problem.is_mixed_integer()
    if problem.is_dcp() and problem.is_qp():
        kind = "lp" if problem.objective.expr.is_pwl() else "qp"  # l1 / l-inf objectives are LPs
    else:
        kind = "socp"
    if integer:
        return {"lp": "milp", "qp": "miqp", "socp": "misocp"}[kind]
    return kind


@functools.cache
def probe(name: str) -> tuple[bool, str]:
    """Solve a tiny problem with the solver once per process: (works, why not)."""
    cvx_name = CVXPY_NAMES[name]
    if cvx_name not in cp.installed_solvers():
        return False, f"solver {name!r} is not installed (pip install explainopt[{name}] or see the README)"
    x = cp.Variable(2, integer=name not in ("clarabel", "ecos", "scs"))
    prob = cp.Problem(cp.Minimize(cp.sum(x)), [x >= 1, x <= 3])
    try:
        prob.solve(solver=cvx_name)
    except Exception as exc:  # licence errors surface here as SolverError
        return False, f"solver {name!r} is installed but failed a probe solve ({exc}); is it licensed?"
    if prob.status != cp.OPTIMAL:
        return False, f"solver {name!r} is installed but its probe solve ended with status {prob.status}"
    return True, "ok"


def solver_available(name: str) -> bool:
    """Whether `name` is installed and licensed (probed once per process).

    Examples
    --------
    >>> from explainopt.solvers import solver_available
    >>> solver_available("highs"), solver_available("clarabel")  # the open-source solvers the library installs
    (True, True)
    """
    ok, message = probe(name)
    if not ok:
        log.info(message)
    return ok


def choose_solver(kind: str, solver: str | None = None) -> str:
    """Pick the solver for a problem class.

    Parameters
    ----------
    kind : one of ``lp, qp, socp, milp, miqp, misocp``.
    solver : a solver name (``highs``, ``clarabel``, ``scip``, ``gurobi``, ``mosek``), ``"commercial"``
        (a licensed commercial solver if any, else open source), or ``"auto"`` / None (both read
        ``EXPLAINOPT_SOLVER`` first; without it, open source first).

    Examples
    --------
    >>> from explainopt.solvers import choose_solver
    >>> choose_solver("milp", "highs"), choose_solver("socp", "clarabel")
    ('highs', 'clarabel')
    >>> try:
    ...     choose_solver("milp", "cplex")
    ... except ValueError as error:
    ...     print(error)
    unknown solver 'cplex'; expected one of [...], 'auto' or 'commercial'
    """
    if kind not in CAPABLE:
        raise ValueError(f"unknown problem class {kind!r}; expected one of {sorted(CAPABLE)}")
    solver = str(solver or "auto").lower()
    if solver == "auto":
        solver = os.environ.get("EXPLAINOPT_SOLVER", "auto").lower() or "auto"
    if solver == "commercial":
        for name in CAPABLE[kind]:
            if name in COMMERCIAL and solver_available(name):
                return name
        solver = "auto"
    if solver == "auto":
        for name in CAPABLE[kind]:
            if name in OPEN_SOURCE and solver_available(name):
                return name
        for name in CAPABLE[kind]:
            if solver_available(name):
                return name
        raise SolverUnavailableError(
            f"no installed solver handles {kind} problems; install one of {list(CAPABLE[kind])} "
            f"(e.g. `pip install pyscipopt` for SCIP)"
        )
    if solver not in CVXPY_NAMES:
        raise ValueError(f"unknown solver {solver!r}; expected one of {sorted(CVXPY_NAMES)}, 'auto' or 'commercial'")
    if solver not in CAPABLE[kind]:
        raise SolverUnavailableError(f"{solver} cannot solve {kind} problems; capable: {list(CAPABLE[kind])}")
    ok, message = probe(solver)
    if not ok:
        raise SolverUnavailableError(message)
    return solver


#: Each solver's own names for the common options (time limit in seconds, relative MIP gap, threads); a
#: solver missing a name ignores that option.
OPTION_NAMES = {
    "highs": {"time_limit": "time_limit", "mip_gap": "mip_rel_gap", "threads": "threads"},
    "gurobi": {"time_limit": "TimeLimit", "mip_gap": "MIPGap", "threads": "Threads"},
    "scip": {"time_limit": "limits/time", "mip_gap": "limits/gap"},
    "mosek": {"time_limit": "MSK_DPAR_OPTIMIZER_MAX_TIME", "mip_gap": "MSK_DPAR_MIO_TOL_REL_GAP"},
    "clarabel": {"time_limit": "time_limit"},
}
#: The solvers whose options cvxpy takes as one dict under this keyword (the others: as keywords).
OPTION_DICT = {"scip": "scip_params", "mosek": "mosek_params"}


def _options(name: str, time_limit: float | None, mip_gap: float | None, threads: int | None) -> dict:
    """Translate common options into the solver's own keywords (:data:`OPTION_NAMES`), with its fixed ones."""
    given = {"time_limit": time_limit, "mip_gap": mip_gap, "threads": threads}
    names = OPTION_NAMES.get(name, {})
    opts = {names[key]: int(value) if key == "threads" else float(value)
            for key, value in given.items() if value is not None and key in names}
    if name in OPTION_DICT:
        return {OPTION_DICT[name]: opts}
    return opts | {"highs": HIGHS_OPTIONS, "gurobi": GUROBI_OPTIONS}.get(name, {})


def _highs_info(problem: cp.Problem):
    """HiGHS's own info object (primal solution status, MIP gap), or None for other solvers."""
    info = getattr(problem.solver_stats, "extra_stats", None)
    return info if hasattr(info, "primal_solution_status") else None


#: SCIP's statuses of a proven optimum, the second one meaning within the MIP gap. cvxpy reports a search that
#: a limit stopped (time, nodes) as OPTIMAL_INACCURATE too when SCIP holds an incumbent.
SCIP_PROVEN = ("optimal", "gaplimit")


def _stopped_by_limit(problem: cp.Problem) -> bool:
    """Did SCIP stop before proving its point optimal? (cvxpy keeps SCIP's own status in its extra statistics.)"""
    extra = getattr(problem.solver_stats, "extra_stats", None)
    return isinstance(extra, dict) and extra.get("scip_status", "optimal") not in SCIP_PROVEN


def _has_incumbent(problem: cp.Problem) -> bool:
    """After a limit: do the variables hold a feasible point? (HiGHS returns junk values without one.)"""
    info = _highs_info(problem)
    if info is not None:
        return int(info.primal_solution_status) == 2  # kSolutionStatusFeasible
    value = problem.value
    return value is not None and math.isfinite(value)


def solve(
    problem: cp.Problem,
    *,
    solver: str | None = None,
    time_limit: float | None = None,
    mip_gap: float | None = None,
    threads: int | None = None,
    bounded: bool = False,
    fallback: bool = True,
    verbose: bool = False,
    warm_start: bool = True,
    options: dict | None = None,
) -> SolveResult:
    """Solve `problem` with the chosen solver and return a :class:`SolveResult`.

    Solver outcomes are statuses, not exceptions: only an unusable request (unknown or unavailable
    solver) raises. After ``time_limit`` without an incumbent the status is ``no_solution`` and the
    variables' values are cleared so that junk cannot be mistaken for a solution.

    bounded : the caller knows the feasible set is bounded, so a presolve answer "infeasible or
        unbounded" (Gurobi's INF_OR_UNBD) means infeasible; otherwise Gurobi re-solves without dual
        reductions to decide.
    fallback : when a commercial solver refuses the model for its licence's size, solve it with the
        open-source solver of its class (``fallback_from`` names the refusing solver); with False the
        result has status ``licence_limit``.
    warm_start : cvxpy's ``warm_start`` (its default, True): a problem object solved before hands the
        solver its last solution as a start (HiGHS: the MIP's incumbent where it is feasible; a fresh
        problem object has none). Re-solving one problem object whose data changed only through cvxpy
        Parameters also skips its compilation (cvxpy caches it per problem object).
    options : solver-specific options in the solver's own names (e.g. ``{"mip_heuristic_effort": 0}``
        for HiGHS), applied over the ones above to the solver that runs; a fallback solver gets none.

    Examples
    --------
    >>> import cvxpy as cp
    >>> from explainopt.solvers import solve
    >>> x = cp.Variable(2, integer=True)
    >>> result = solve(cp.Problem(cp.Minimize(cp.sum(x)), [x >= 1.5, x <= 4]), solver="highs")
    >>> result.status, float(result.objective), result.solver, x.value
    ('optimal', 4.0, 'highs', array([2., 2.]))
    """
    kind = problem_class(problem)
    name = choose_solver(kind, solver)
    result = _solve_with(problem, name, kind, time_limit=time_limit, mip_gap=mip_gap, threads=threads,
                         bounded=bounded, verbose=verbose, warm_start=warm_start, options=options)
    if result.status == LICENCE_LIMIT and fallback:
        log.info(result.message)
        refused = result
        result = _solve_with(problem, choose_solver(kind, _open_source_of(kind)), kind, time_limit=time_limit,
                             mip_gap=mip_gap, threads=threads, bounded=bounded, verbose=verbose)
        result.fallback_from, result.message = name, refused.message
        result.solve_time += refused.solve_time
    return result


def _open_source_of(kind: str) -> str:
    return next(n for n in CAPABLE[kind] if n in OPEN_SOURCE and solver_available(n))


_STATUS = {
    cp.OPTIMAL: OPTIMAL,
    cp.OPTIMAL_INACCURATE: OPTIMAL,
    cp.INFEASIBLE: INFEASIBLE,
    cp.INFEASIBLE_INACCURATE: INFEASIBLE,
    cp.UNBOUNDED: UNBOUNDED,
    cp.UNBOUNDED_INACCURATE: UNBOUNDED,
    cp.USER_LIMIT: TIME_LIMIT,
}


def _solve_with(problem, name, kind, *, time_limit, mip_gap, threads, bounded, verbose,
                warm_start=True, options=None) -> SolveResult:
    options = _options(name, time_limit, mip_gap, threads) | dict(options or {})
    if name == "gurobi" and not bounded:
        options["reoptimize"] = True  # INF_OR_UNBD: cvxpy re-solves with DualReductions=0
    start = time.perf_counter()
    try:
        with warnings.catch_warnings():  # statuses are classified below; cvxpy's accuracy warning is noise
            warnings.filterwarnings("ignore", message="Solution may be inaccurate")
            warnings.filterwarnings("ignore", message="\\s*The problem is either infeasible or unbounded")
            problem.solve(solver=CVXPY_NAMES[name], verbose=verbose, warm_start=warm_start, **options)
    except cp.error.SolverError as exc:
        elapsed = time.perf_counter() - start
        too_large = _licence_refusal(problem, name)
        if too_large:
            return SolveResult(LICENCE_LIMIT, None, name, elapsed, message=too_large)
        return SolveResult(ERROR, None, name, elapsed, message=str(exc))
    elapsed = time.perf_counter() - start
    status = _STATUS.get(problem.status, ERROR)
    if status == OPTIMAL and name == "scip" and _stopped_by_limit(problem):
        status = TIME_LIMIT  # an incumbent, not a proven optimum
    if problem.status == cp.settings.INFEASIBLE_OR_UNBOUNDED:
        status = INFEASIBLE if bounded else ERROR
    if status == TIME_LIMIT and not _has_incumbent(problem):
        status = NO_SOLUTION
        for variable in problem.variables():
            variable.value = None
    objective = problem.value if status in (OPTIMAL, TIME_LIMIT) else None
    message = "" if status != ERROR else f"solver {name} returned cvxpy status {problem.status!r}"
    return SolveResult(status, objective, name, elapsed, gap=_gap(problem), message=message)


@functools.cache
def licence_size_limit(name: str) -> int | None:
    """The largest number of variables or constraints the installed licence of `name` accepts, or
    None when it is not size-limited (probed once per process; Gurobi's pip licence: 2000)."""
    if name != "gurobi" or gurobipy is None or not solver_available(name):
        return None
    with gurobipy.Env(params={"OutputFlag": 0}) as env, gurobipy.Model(env=env) as model:
        model.addMVar(2001)
        try:
            model.optimize()
        except gurobipy.GurobiError as exc:
            if exc.errno == gurobipy.GRB.Error.SIZE_LIMIT_EXCEEDED:
                return 2000
            raise
    return None


def _licence_refusal(problem: cp.Problem, name: str) -> str:
    """Why `name` refused `problem` when its licence is too small for it ('' otherwise)."""
    limit = licence_size_limit(name)
    if limit is None:
        return ""
    data = problem.get_problem_data(solver=CVXPY_NAMES[name])[0]
    n_vars = int(data["c"].size if "c" in data else data["q"].size)
    n_rows = sum(int(data[k].shape[0]) for k in ("A", "F") if k in data and data[k] is not None)
    if max(n_vars, n_rows) <= limit:
        return ""
    return (f"{name}: licence too small ({n_vars} variables, {n_rows} constraints; the licence allows {limit} "
            f"of each)")


def _gap(problem: cp.Problem) -> float | None:
    info = _highs_info(problem)
    gap = getattr(info, "mip_gap", None) if problem.is_mixed_integer() else None
    if gap is None or not math.isfinite(gap) or gap > 1e20:
        return None
    return float(gap)


# =========================================================================== a MILP kept alive in the solver

@dataclass
class MILPSolution(SolveResult):
    """A :class:`SolveResult` of :meth:`MatrixMILP.solve` with the column values (None without a
    solution) and the solver's proven lower bound on the optimum (None without one)."""

    values: np.ndarray | None = None
    dual_bound: float | None = None


class LicenceLimitError(RuntimeError):
    """A size-limited commercial licence refused a :class:`MatrixMILP` (raised by its backends only)."""


class MatrixMILP:
    """Minimize ``cost @ v`` subject to ``row_lower <= A v <= row_upper`` and ``lower <= v <= upper``
    (some columns integer), a model that is only ever grown and kept alive in the solver.

    :meth:`add_columns` and :meth:`add_row` grow it; :meth:`solve` hands the solver (HiGHS or Gurobi,
    :data:`MATRIX_SOLVERS`) only the columns and rows added since its last solve, so a re-solve
    starts from the solver's state (no rebuilding, no compilation). A model that a size-limited licence
    refuses is moved to HiGHS for good (``fallback_from`` names the refusing solver), as :func:`solve`
    does for cvxpy problems.

    bounded : the caller knows the feasible set is bounded, so a presolve answer "infeasible or
        unbounded" means infeasible; otherwise the solver decides it once more without that reduction.

    Examples
    --------
    >>> from explainopt.solvers import MatrixMILP
    >>> milp = MatrixMILP(bounded=True)
    >>> cols = milp.add_columns(2, upper=10, cost=[1.0, 2.0], integer=True)
    >>> milp.add_row(cols, [1.0, 1.0], lower=2.5)  # x0 + x1 >= 2.5
    >>> first = milp.solve(solver="highs")
    >>> first.status, first.objective, first.values
    ('optimal', 3.0, array([3., 0.]))
    >>> milp.add_row(cols[:1], [1.0], upper=1.0)  # grown: x0 <= 1, solved from the solver's state
    >>> second = milp.solve(solver="highs")
    >>> second.objective, second.values
    (5.0, array([1., 2.]))
    """

    def __init__(self, *, bounded: bool = False):
        self.bounded = bounded
        self.col_lower, self.col_upper, self.cost, self.integer = [], [], [], []
        self.i, self.j, self.a, self.row_lower, self.row_upper = [], [], [], [], []
        self.backend = None
        self.fallback_from: str | None = None
        self.message = ""

    @property
    def n_cols(self) -> int:
        return len(self.cost)

    @property
    def n_rows(self) -> int:
        return len(self.row_lower)

    def add_columns(self, n: int, *, lower=0.0, upper=math.inf, cost=0.0, integer: bool = False) -> np.ndarray:
        """Add `n` columns (scalars or arrays of length `n` for the bounds and costs); their indices."""
        first = self.n_cols
        self.col_lower.extend(np.broadcast_to(np.asarray(lower, float), (n,)).tolist())
        self.col_upper.extend(np.broadcast_to(np.asarray(upper, float), (n,)).tolist())
        self.cost.extend(np.broadcast_to(np.asarray(cost, float), (n,)).tolist())
        self.integer.extend([integer] * n)
        return np.arange(first, first + n)

    def add_row(self, cols, coefs, *, lower=-math.inf, upper=math.inf) -> None:
        """Add the row ``lower <= sum_k coefs[k] v[cols[k]] <= upper`` (coefs: one per column or a scalar)."""
        r = self.n_rows
        cols = np.atleast_1d(cols)
        self.i.extend([r] * len(cols))
        self.j.extend(int(c) for c in cols)
        self.a.extend(np.broadcast_to(np.asarray(coefs, float), (len(cols),)).tolist())
        self.row_lower.append(float(lower))
        self.row_upper.append(float(upper))

    def rows_since(self, first_row: int, first_entry: int) -> sp.csr_matrix:
        """The rows from `first_row` on (their entries start at `first_entry`) over every column."""
        i = np.asarray(self.i[first_entry:], dtype=np.int64) - first_row
        return sp.csr_matrix((self.a[first_entry:], (i, self.j[first_entry:])),
                             shape=(self.n_rows - first_row, self.n_cols))

    def solve(self, *, solver: str | None = None, time_limit: float | None = None,
              fallback: bool = True) -> MILPSolution:
        """Solve with `solver` (as :func:`choose_solver` reads it; it must be one of
        :data:`MATRIX_SOLVERS`), keeping the solver's model for the next solve."""
        name = "highs" if self.fallback_from else choose_solver("milp", solver)
        if name not in MATRIX_SOLVERS or not _matrix_importable(name):
            raise SolverUnavailableError(f"MatrixMILP runs on {sorted(MATRIX_SOLVERS)}, not {name!r}")
        if self.backend is None or self.backend.name != name:
            self.backend = MATRIX_SOLVERS[name](self)
        start = time.perf_counter()
        try:
            solution = self.backend.solve(time_limit)
        except LicenceLimitError as exc:
            if not fallback:
                return MILPSolution(LICENCE_LIMIT, None, name, time.perf_counter() - start, message=str(exc))
            log.info(str(exc))
            self.fallback_from, self.message = name, str(exc)
            self.backend = MATRIX_SOLVERS["highs"](self)
            solution = self.backend.solve(time_limit)
        solution.solve_time = time.perf_counter() - start
        solution.fallback_from, solution.message = self.fallback_from, self.message or solution.message
        return solution


def matrix_solver(solver: str | None = None) -> str | None:
    """The solver :meth:`MatrixMILP.solve` would use for `solver`, or None when it has no
    :class:`MatrixMILP` backend (a cvxpy model must serve then).

    Examples
    --------
    >>> from explainopt.solvers import matrix_solver
    >>> matrix_solver("highs")
    'highs'
    """
    name = choose_solver("milp", solver)
    return name if name in MATRIX_SOLVERS and _matrix_importable(name) else None


def _matrix_importable(name: str) -> bool:
    return {"highs": highspy, "gurobi": gurobipy}.get(name) is not None


def one_sided(lower, upper):
    """The rows ``lower <= a x <= upper`` as one-sided ones: yields ``(sense, rows, rhs)`` for the senses
    ``'='``, ``'>'`` and ``'<'`` (at least) that have rows, ``rows`` their indices.

    Examples
    --------
    >>> import numpy as np
    >>> from explainopt.solvers import one_sided
    >>> for sense, rows, rhs in one_sided([1.0, 0.0, -np.inf], [1.0, 2.0, 3.0]):
    ...     print(sense, rows.tolist(), rhs.tolist())
    = [0] [1.0]
    > [1] [0.0]
    < [1, 2] [2.0, 3.0]
    """
    lower, upper = np.asarray(lower, float), np.asarray(upper, float)
    equal = lower == upper
    for sense, keep, rhs in (("=", equal, lower), (">", ~equal & np.isfinite(lower), lower),
                             ("<", ~equal & np.isfinite(upper), upper)):
        rows = np.flatnonzero(keep)
        if rows.size:
            yield sense, rows, rhs[rows]


def _solution(status, objective, name, values, dual_bound, message="") -> MILPSolution:
    """A backend's answer; values and objective only where a feasible point is held."""
    if status not in (OPTIMAL, TIME_LIMIT):
        objective = values = None
    return MILPSolution(status, objective, name, 0.0, message=message, values=values, dual_bound=dual_bound)


class _HighsMatrix:
    """:class:`MatrixMILP` in HiGHS through highspy (its defaults and :data:`HIGHS_OPTIONS`)."""

    name = "highs"

    def __init__(self, m: MatrixMILP):
        self.m, self.h = m, highspy.Highs()
        self.h.setOptionValue("output_flag", False)
        for key, value in HIGHS_OPTIONS.items():
            self.h.setOptionValue(key, value)
        self.cols = self.rows = self.entries = 0

    def _sync(self) -> None:
        m, n = self.m, self.m.n_cols - self.cols
        if n:
            s = slice(self.cols, m.n_cols)
            self.h.addCols(n, np.array(m.cost[s]), np.array(m.col_lower[s]), np.array(m.col_upper[s]), 0,
                           np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0))
            idx = np.flatnonzero(m.integer[s])
            if len(idx):
                self.h.changeColsIntegrality(len(idx), (self.cols + idx).astype(np.int32),
                                             np.full(len(idx), highspy.HighsVarType.kInteger))
        if m.n_rows > self.rows:
            A = m.rows_since(self.rows, self.entries)
            self.h.addRows(A.shape[0], np.array(m.row_lower[self.rows:]), np.array(m.row_upper[self.rows:]), A.nnz,
                           A.indptr.astype(np.int32), A.indices.astype(np.int32), A.data)
        self.cols, self.rows, self.entries = m.n_cols, m.n_rows, len(m.a)

    def solve(self, time_limit) -> MILPSolution:
        self._sync()
        self.h.setOptionValue("time_limit", math.inf if time_limit is None else float(time_limit))
        self.h.run()
        S = highspy.HighsModelStatus
        if self.h.getModelStatus() == S.kUnboundedOrInfeasible and not self.m.bounded:
            self.h.setOptionValue("presolve", "off")  # decide between the two without presolve's reduction
            self.h.run()
            self.h.setOptionValue("presolve", "choose")
        status, info = self.h.getModelStatus(), self.h.getInfo()
        feasible = int(info.primal_solution_status) == 2  # kSolutionStatusFeasible
        if status == S.kOptimal:
            code = OPTIMAL
        elif status == S.kInfeasible or status == S.kUnboundedOrInfeasible and self.m.bounded:
            code = INFEASIBLE
        elif status == S.kUnbounded:
            code = UNBOUNDED
        elif status in (S.kTimeLimit, S.kIterationLimit, S.kSolutionLimit, S.kInterrupt):
            code = TIME_LIMIT if feasible else NO_SOLUTION
        else:
            code = ERROR
        bound = float(info.mip_dual_bound) if any(self.m.integer) else float(info.objective_function_value)
        return _solution(code, float(info.objective_function_value), self.name,
                         np.array(self.h.getSolution().col_value), bound if math.isfinite(bound) else None,
                         message="" if code != ERROR else f"HiGHS model status {self.h.modelStatusToString(status)}")


class _GurobiMatrix:
    """:class:`MatrixMILP` in Gurobi through gurobipy (:data:`GUROBI_OPTIONS`; other parameters from a
    ``gurobi.env`` where present, as cvxpy's Gurobi interface does). A size-limited licence raises
    :class:`LicenceLimitError`."""

    name = "gurobi"

    def __init__(self, m: MatrixMILP):
        self.m = m
        self.env = gurobipy.Env(params={"OutputFlag": 0})
        self.model = gurobipy.Model(env=self.env)
        for key, value in GUROBI_OPTIONS.items():
            self.model.setParam(key, value)
        self.vars: list = []
        self.rows = self.entries = 0

    def _sync(self) -> None:
        m, s = self.m, slice(len(self.vars), self.m.n_cols)
        if m.n_cols > len(self.vars):
            kinds = [gurobipy.GRB.INTEGER if k else gurobipy.GRB.CONTINUOUS for k in m.integer[s]]
            new = self.model.addMVar(m.n_cols - len(self.vars), lb=np.array(m.col_lower[s]),
                                     ub=np.array(m.col_upper[s]), obj=np.array(m.cost[s]), vtype=kinds)
            self.model.update()
            self.vars.extend(new.tolist())
        if m.n_rows > self.rows:
            A = m.rows_since(self.rows, self.entries)
            lower, upper = np.array(m.row_lower[self.rows:]), np.array(m.row_upper[self.rows:])
            v = gurobipy.MVar.fromlist(self.vars)
            for sense, keep, rhs in one_sided(lower, upper):
                self.model.addMConstr(A[keep], v, sense, rhs)
        self.rows, self.entries = m.n_rows, len(m.a)

    def _optimize(self) -> None:
        try:
            self.model.optimize()
        except gurobipy.GurobiError as exc:
            if exc.errno == gurobipy.GRB.Error.SIZE_LIMIT_EXCEEDED:
                raise LicenceLimitError(f"gurobi: licence too small ({self.m.n_cols} variables, "
                                        f"{self.m.n_rows} constraints): {exc}") from exc
            raise

    def solve(self, time_limit) -> MILPSolution:
        self._sync()
        self.model.Params.TimeLimit = math.inf if time_limit is None else float(time_limit)
        self._optimize()
        G = gurobipy.GRB
        if self.model.Status == G.INF_OR_UNBD and not self.m.bounded:
            self.model.Params.DualReductions = 0  # decide between the two
            self._optimize()
            self.model.Params.DualReductions = 1
        status, found = self.model.Status, self.model.SolCount > 0
        if status == G.OPTIMAL:
            code = OPTIMAL
        elif status == G.INFEASIBLE or status == G.INF_OR_UNBD and self.m.bounded:
            code = INFEASIBLE
        elif status == G.UNBOUNDED:
            code = UNBOUNDED
        elif status in (G.TIME_LIMIT, G.NODE_LIMIT, G.ITERATION_LIMIT, G.SOLUTION_LIMIT, G.INTERRUPTED):
            code = TIME_LIMIT if found else NO_SOLUTION
        else:
            code = ERROR
        values = np.array([v.X for v in self.vars]) if found else None
        bound = float(self.model.ObjBound) if self.model.IsMIP and found else (
            float(self.model.ObjVal) if found else None)
        return _solution(code, float(self.model.ObjVal) if found else None, self.name, values, bound,
                         message="" if code != ERROR else f"Gurobi status {status}")


#: The solvers that hold a :class:`MatrixMILP` alive, by name.
MATRIX_SOLVERS = {"highs": _HighsMatrix, "gurobi": _GurobiMatrix}
