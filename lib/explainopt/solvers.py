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


#: HiGHS options of every solve. The MIP feasibility tolerance (HiGHS's default 1e-6) sits far below the
#: margins that the encoders give strict inequalities (split margins, score margins of 1e-5): with the
#: default, HiGHS 1.15.1 reported "optimal" at distance 0.1826 for a chapter-5 forest counterfactual whose
#: optimum is 0.1187 (tests/test_solver_regressions.py); with 1e-9 it finds 0.1187, at the same CPU time on
#: 64 chapter-5 MILPs (143 s against 147 s).
HIGHS_DEFAULTS = {"random_seed": 0, "mip_feasibility_tolerance": 1e-9}


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
    """Classify a cvxpy problem as lp, qp, socp, milp, miqp or misocp."""
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
    """Whether `name` is installed and licensed (probed once per process)."""
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


def _options(name: str, time_limit: float | None, mip_gap: float | None, threads: int | None) -> dict:
    """Translate common options into the solver's own keywords."""
    opts: dict = {}
    if name == "highs":
        if time_limit is not None:
            opts["time_limit"] = float(time_limit)
        if mip_gap is not None:
            opts["mip_rel_gap"] = float(mip_gap)
        if threads is not None:
            opts["threads"] = int(threads)
        opts |= HIGHS_DEFAULTS
    elif name == "gurobi":
        if time_limit is not None:
            opts["TimeLimit"] = float(time_limit)
        if mip_gap is not None:
            opts["MIPGap"] = float(mip_gap)
        if threads is not None:
            opts["Threads"] = int(threads)
        opts["Seed"] = 0
    elif name == "scip":
        params = {}
        if time_limit is not None:
            params["limits/time"] = float(time_limit)
        if mip_gap is not None:
            params["limits/gap"] = float(mip_gap)
        opts["scip_params"] = params
    elif name == "mosek":
        params = {}
        if time_limit is not None:
            params["MSK_DPAR_OPTIMIZER_MAX_TIME"] = float(time_limit)
        if mip_gap is not None:
            params["MSK_DPAR_MIO_TOL_REL_GAP"] = float(mip_gap)
        opts["mosek_params"] = params
    elif name == "clarabel":
        if time_limit is not None:
            opts["time_limit"] = float(time_limit)
    return opts


def _highs_info(problem: cp.Problem):
    """HiGHS's own info object (primal solution status, MIP gap), or None for other solvers."""
    info = getattr(problem.solver_stats, "extra_stats", None)
    return info if hasattr(info, "primal_solution_status") else None


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
    if name != "gurobi" or not solver_available(name):
        return None
    import gurobipy

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
