import cvxpy as cp
import numpy as np
import pytest

from explainopt import solvers
from explainopt.solvers import SolverUnavailableError, choose_solver, problem_class, solve


def test_open_source_defaults_per_problem_class(monkeypatch):
    monkeypatch.delenv("EXPLAINOPT_SOLVER", raising=False)
    assert choose_solver("lp") == "highs"
    assert choose_solver("milp") == "highs"
    assert choose_solver("qp") == "clarabel"
    assert choose_solver("socp") == "clarabel"
    assert choose_solver("miqp") == "scip"


def test_environment_variable_overrides_the_default(monkeypatch):
    monkeypatch.setenv("EXPLAINOPT_SOLVER", "scip")
    assert choose_solver("milp") == "scip"
    assert choose_solver("milp", "highs") == "highs"  # an explicit argument wins


def test_commercial_falls_back_to_open_source_when_none_is_licensed(monkeypatch):
    monkeypatch.setattr(solvers, "solver_available", lambda name: name in ("highs", "clarabel"))
    assert choose_solver("milp", "commercial") == "highs"


def test_unknown_solver_name_is_a_value_error():
    with pytest.raises(ValueError, match="unknown solver 'cplex'"):
        choose_solver("milp", "cplex")


def test_solver_that_cannot_handle_the_class_is_refused():
    with pytest.raises(SolverUnavailableError, match="clarabel cannot solve milp"):
        choose_solver("milp", "clarabel")


def test_missing_solver_names_the_problem(monkeypatch):
    solvers.probe.cache_clear()
    monkeypatch.setattr(cp, "installed_solvers", lambda: ["HIGHS", "CLARABEL"])
    with pytest.raises(SolverUnavailableError, match="'gurobi' is not installed"):
        choose_solver("milp", "gurobi")
    solvers.probe.cache_clear()


def test_installed_but_unlicensed_solver_is_detected_by_the_probe(monkeypatch):
    solvers.probe.cache_clear()
    monkeypatch.setattr(cp, "installed_solvers", lambda: ["HIGHS", "GUROBI"])

    def refuse(self, *args, **kwargs):
        raise cp.error.SolverError("Model too large for size-limited license")

    monkeypatch.setattr(cp.Problem, "solve", refuse)
    ok, message = solvers.probe("gurobi")
    assert not ok and "licensed" in message and "size-limited" in message
    solvers.probe.cache_clear()


def test_problem_classes():
    x = cp.Variable(2)
    z = cp.Variable(2, integer=True)
    assert problem_class(cp.Problem(cp.Minimize(cp.sum(x)), [x >= 0])) == "lp"
    assert problem_class(cp.Problem(cp.Minimize(cp.sum_squares(x)), [x >= 1])) == "qp"
    assert problem_class(cp.Problem(cp.Minimize(cp.norm(x, 2)), [x >= 1])) == "socp"
    assert problem_class(cp.Problem(cp.Minimize(cp.sum(z)), [z >= 1])) == "milp"
    assert problem_class(cp.Problem(cp.Minimize(cp.norm1(z - 0.3)), [z >= 0])) == "milp"  # l1 is linear
    assert problem_class(cp.Problem(cp.Minimize(cp.sum_squares(z - 0.3)), [z >= 0])) == "miqp"


def test_statuses_optimal_infeasible_unbounded():
    x = cp.Variable(2)
    res = solve(cp.Problem(cp.Minimize(cp.sum(x)), [x >= 1]))
    assert res.status == "optimal" and res.has_solution and res.objective == pytest.approx(2.0)
    assert res.solver == "highs" and res.solve_time >= 0
    assert solve(cp.Problem(cp.Minimize(cp.sum(x)), [x >= 1, x <= 0])).status == "infeasible"
    assert solve(cp.Problem(cp.Minimize(cp.sum(x)), [x <= 1])).status in ("unbounded", "infeasible")


def test_time_limit_without_incumbent_reports_no_solution_and_clears_values():
    rng = np.random.default_rng(0)
    z = cp.Variable(60, integer=True)
    A = rng.integers(1, 50, size=(30, 60))
    b = A @ rng.integers(0, 3, size=60)  # feasible, but hard to find a point at once
    res = solve(cp.Problem(cp.Minimize(0), [A @ z == b, z >= 0, z <= 5]), time_limit=1e-6)
    if res.status == "optimal":  # presolve found it: nothing to check on this machine
        pytest.skip("HiGHS solved the instance before the limit")
    assert res.status == "no_solution" and not res.has_solution
    assert z.value is None


def test_mixed_integer_quadratic_problem_is_solved_by_scip():
    z = cp.Variable(3, integer=True)
    res = solve(cp.Problem(cp.Minimize(cp.sum_squares(z - 0.4)), [cp.sum(z) >= 1]))
    assert res.status == "optimal" and res.solver == "scip"
    assert res.objective == pytest.approx(0.36 + 0.16 + 0.16)


def test_a_scip_search_stopped_by_a_limit_is_not_called_optimal():
    """cvxpy reports SCIP's limits (time, nodes) with an incumbent as OPTIMAL_INACCURATE: ours is a limit
    status with the incumbent kept. Before, a robust region's loop took such an adversarial problem for
    solved and converged on a region its certificate then refuted (chapter 2, book scale)."""
    rng = np.random.default_rng(0)
    n = 25
    A, c = rng.normal(size=(n, n)), 5 * rng.normal(size=n)
    z = cp.Variable(n, integer=True)
    problem = cp.Problem(cp.Minimize(cp.sum_squares(A @ z) / n + c @ z), [z >= -10, z <= 10])
    stopped = solve(problem, solver="scip", options={"scip_params": {"limits/nodes": 1}})
    assert problem.status == cp.OPTIMAL_INACCURATE and problem.solver_stats.extra_stats["scip_status"] == "nodelimit"
    assert stopped.status == "time_limit" and stopped.has_solution
    proven = solve(problem, solver="scip")
    assert proven.status == "optimal" and proven.objective <= stopped.objective + 1e-9


def test_auto_reads_the_environment_like_none(monkeypatch):
    monkeypatch.setenv("EXPLAINOPT_SOLVER", "scip")
    assert choose_solver("milp", "auto") == choose_solver("milp", None) == "scip"
    monkeypatch.delenv("EXPLAINOPT_SOLVER")
    assert choose_solver("milp", "auto") == "highs"


def _infeasible_milp():
    z = cp.Variable(2, integer=True)
    return cp.Problem(cp.Minimize(cp.sum(z)), [z >= 1, z <= 0.5, z <= 10, z >= -10])


def test_infeasible_or_unbounded_is_infeasible_when_the_caller_knows_the_set_is_bounded(monkeypatch):
    problem = _infeasible_milp()

    def presolve_answer(self, *args, **kwargs):  # what Gurobi's presolve says of an infeasible MILP
        self._status = cp.settings.INFEASIBLE_OR_UNBOUNDED

    monkeypatch.setattr(cp.Problem, "solve", presolve_answer)
    assert solve(problem, solver="highs", bounded=True).status == "infeasible"
    assert solve(problem, solver="highs").status == "error"  # undecided without the re-solve


@pytest.mark.skipif(not solvers.solver_available("gurobi"), reason="Gurobi is not installed and licensed here")
def test_gurobi_decides_infeasible_or_unbounded():
    assert solve(_infeasible_milp(), solver="gurobi").status == "infeasible"
    assert solve(_infeasible_milp(), solver="gurobi", bounded=True).status == "infeasible"


def test_a_model_refused_by_a_size_limited_licence_falls_back_to_open_source(monkeypatch):
    real_solve = cp.Problem.solve

    def refuse_gurobi(self, *args, solver=None, **kwargs):
        if solver == "GUROBI":
            raise cp.error.SolverError("Solver 'GUROBI' failed.")
        kwargs.pop("reoptimize", None)
        return real_solve(self, *args, solver=solver, **kwargs)

    monkeypatch.setattr(cp.Problem, "solve", refuse_gurobi)
    monkeypatch.setattr(solvers, "probe", lambda name: (True, "ok"))
    monkeypatch.setattr(solvers, "_licence_refusal", lambda problem, name: f"{name}: licence too small")
    x = cp.Variable(3, integer=True)
    problem = cp.Problem(cp.Minimize(cp.sum(x)), [x >= 1, x <= 3])
    res = solve(problem, solver="gurobi")
    assert res.status == "optimal" and res.solver == "highs" and res.fallback_from == "gurobi"
    assert "licence too small" in res.message and res.objective == pytest.approx(3.0)
    refused = solve(problem, solver="gurobi", fallback=False)
    assert refused.status == "licence_limit" and not refused.has_solution


@pytest.mark.skipif(not solvers.solver_available("gurobi") or solvers.licence_size_limit("gurobi") is None,
                    reason="needs Gurobi with a size-limited licence")
def test_gurobi_size_limited_licence_is_a_clear_status():
    x = cp.Variable(3000, integer=True)
    problem = cp.Problem(cp.Minimize(cp.sum(x)), [x >= 1, x <= 3])
    refused = solve(problem, solver="gurobi", fallback=False)
    assert refused.status == "licence_limit" and "3000 variables" in refused.message
    res = solve(problem, solver="gurobi")
    assert res.status == "optimal" and res.solver == "highs" and res.fallback_from == "gurobi"


def test_solver_options_in_the_solvers_own_names_reach_the_solver():
    A = np.random.default_rng(0).random((30, 20))

    def problem():
        x = cp.Variable(20)
        return cp.Problem(cp.Minimize(cp.sum(x)), [A @ x >= 1, x >= 0])

    assert solve(problem(), solver="highs").status == "optimal"
    stopped = solve(problem(), solver="highs", options={"simplex_iteration_limit": 0, "presolve": "off"})
    assert stopped.status == "no_solution"
    assert solve(problem(), solver="clarabel", options={"max_iter": 1}).status == "time_limit"


# --------------------------------------------------------------------------- MatrixMILP: a MILP kept alive in the solver

def _knapsack(**kwargs) -> solvers.MatrixMILP:
    """max 5a + 4b + 3c (minimize the negative) s.t. 2a + 3b + c <= 5, binaries: optimum a = b = 1, -9."""
    m = solvers.MatrixMILP(**kwargs)
    v = m.add_columns(3, upper=1.0, cost=[-5.0, -4.0, -3.0], integer=True)
    m.add_row(v, [2.0, 3.0, 1.0], upper=5.0)
    return m


MATRIX = [s for s in ("highs", "gurobi") if solvers.solver_available(s) and solvers.matrix_solver(s) == s]


@pytest.mark.parametrize("name", MATRIX)
def test_matrix_milp_is_optimal_with_values_and_a_dual_bound_and_grows_between_solves(name):
    m = _knapsack()
    res = m.solve(solver=name)
    assert res.status == solvers.OPTIMAL and res.solver == name and res.fallback_from is None
    assert res.objective == pytest.approx(-9.0) and res.dual_bound <= res.objective + 1e-6
    np.testing.assert_allclose(res.values, [1, 1, 0], atol=1e-6)
    m.add_row([0, 1], [1.0, 1.0], upper=1.0)  # a + b <= 1: now a + c
    res = m.solve(solver=name)
    assert res.objective == pytest.approx(-8.0)
    extra = m.add_columns(1, upper=1.0, cost=-10.0, integer=True)  # a new item that fits nothing else
    m.add_row(np.r_[[0, 1, 2], extra], [2.0, 3.0, 1.0, 5.0], upper=5.0)
    res = m.solve(solver=name)
    assert res.objective == pytest.approx(-10.0) and len(res.values) == 4


@pytest.mark.parametrize("name", MATRIX)
def test_matrix_milp_status_vocabulary(name):
    m = _knapsack(bounded=True)
    m.add_row([0, 1, 2], 1.0, lower=4.0)  # three binaries summing to 4: infeasible
    res = m.solve(solver=name)
    assert res.status == solvers.INFEASIBLE and res.values is None and res.objective is None
    free = solvers.MatrixMILP()  # minimize -v, v >= 0 integer: unbounded (decided without presolve's shortcut)
    free.add_columns(1, cost=-1.0, integer=True)
    free.add_row([0], 1.0, lower=0.0)
    assert free.solve(solver=name).status == solvers.UNBOUNDED
    assert not free.solve(solver=name).has_solution


def test_matrix_milp_without_a_backend_for_the_solver_says_so(monkeypatch):
    monkeypatch.setattr(solvers, "choose_solver", lambda kind, solver=None: "scip")
    assert solvers.matrix_solver("scip") is None
    with pytest.raises(SolverUnavailableError, match="MatrixMILP runs on"):
        _knapsack().solve(solver="scip")


class _RefusingGurobi(solvers._HighsMatrix):
    """Gurobi with a size-limited licence, simulated: it refuses models of more than 3 columns."""

    name = "gurobi"
    calls = 0

    def solve(self, time_limit):
        type(self).calls += 1
        if self.m.n_cols > 3:
            raise solvers.LicenceLimitError("gurobi: licence too small (simulated)")
        return super().solve(time_limit)


@pytest.fixture
def refusing_gurobi(monkeypatch):
    real_choose = solvers.choose_solver
    monkeypatch.setattr(solvers, "choose_solver",
                        lambda kind, solver=None: "gurobi" if solver == "gurobi" else real_choose(kind, solver))
    monkeypatch.setitem(solvers.MATRIX_SOLVERS, "gurobi", _RefusingGurobi)
    monkeypatch.setattr(solvers, "gurobipy", solvers.gurobipy or object())
    _RefusingGurobi.calls = 0


def test_matrix_milp_refused_by_the_licence_moves_to_highs_for_good(refusing_gurobi):
    m = _knapsack()
    res = m.solve(solver="gurobi")
    assert res.solver == "gurobi" and res.fallback_from is None and res.objective == pytest.approx(-9.0)
    extra = m.add_columns(1, upper=1.0, cost=-10.0, integer=True)
    m.add_row(np.r_[[0, 1, 2], extra], [2.0, 3.0, 1.0, 5.0], upper=5.0)
    res = m.solve(solver="gurobi")
    assert res.status == solvers.OPTIMAL and res.objective == pytest.approx(-10.0)
    assert res.solver == "highs" and res.fallback_from == "gurobi" and "licence too small" in res.message
    calls = _RefusingGurobi.calls
    res = m.solve(solver="gurobi")  # the model stays with HiGHS: Gurobi is not asked again
    assert _RefusingGurobi.calls == calls and res.solver == "highs" and res.fallback_from == "gurobi"


def test_matrix_milp_refused_by_the_licence_without_fallback_is_a_licence_limit(refusing_gurobi):
    m = _knapsack()
    m.add_columns(1, cost=0.0, upper=1.0)
    res = m.solve(solver="gurobi", fallback=False)
    assert res.status == solvers.LICENCE_LIMIT and not res.has_solution and res.values is None


def test_highs_options_come_from_one_place_for_both_paths(monkeypatch):
    monkeypatch.setitem(solvers.HIGHS_OPTIONS, "random_seed", 7)  # a change made there reaches both paths
    assert solvers._options("highs", None, None, None)["random_seed"] == 7
    got = solvers._HighsMatrix(_knapsack()).h.getOptionValue("random_seed")
    assert (got[-1] if isinstance(got, tuple) else got) == 7


def test_one_sided_splits_two_sided_rows_by_sense_and_drops_free_rows():
    lower = np.array([1.0, -np.inf, 0.0, 2.0, -np.inf])
    upper = np.array([1.0, 3.0, np.inf, 5.0, np.inf])
    got = {sense: (rows.tolist(), rhs.tolist()) for sense, rows, rhs in solvers.one_sided(lower, upper)}
    assert got == {"=": ([0], [1.0]), ">": ([2, 3], [0.0, 2.0]), "<": ([1, 3], [3.0, 5.0])}
    assert list(solvers.one_sided([-np.inf], [np.inf])) == []


def test_common_options_reach_each_solver_under_its_own_name():
    assert solvers._options("gurobi", 10, 0.01, 2) == {"TimeLimit": 10.0, "MIPGap": 0.01, "Threads": 2,
                                                       **solvers.GUROBI_OPTIONS}
    assert solvers._options("scip", 10, None, 2) == {"scip_params": {"limits/time": 10.0}}
    assert solvers._options("mosek", None, None, None) == {"mosek_params": {}}
    assert solvers._options("ecos", 10, 0.01, 2) == {}
