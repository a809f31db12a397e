"""Capacitated VRP (Section 4.3 of Otto et al.) solved by the OR-Tools routing heuristic.

Instance ``clemo/cvrp_instance.json``: depot 0 and 16 clients, 4 vehicles of capacity 150. θ = (client
demands d_1..d_16, client-to-depot arc costs c_01..c_016); a sample perturbs both by N(0, (0.2·value)²)
and truncates to integers (as the authors' notebook does), keeping demand vectors whose total is at most
80% of the fleet capacity. The depot row and column of the distance matrix are both replaced (symmetric).

Solver: OR-Tools routing, PATH_CHEAPEST_ARC first solution + GUIDED_LOCAL_SEARCH. The paper stops each
search after 5 s of wall-clock time, so its routes depend on the machine and its load; here the search
stops after ``solution_limit`` solutions (the first one included), which gives the same routes on any
machine. :data:`PAPER_SOLUTION_LIMIT` solutions take about the paper's 5 s. A wall-clock ``time_cap`` only
guards against a stalled search; a search it ends is marked (``extra["time_capped"]``, status
``time_limit``), since its routes are not reproducible. Decision vector: arc indicators x_jk for all
ordered pairs j ≠ k. Objective values and arc costs are reported in thousands of distance units and
features are θ/100, as in the authors' code.

**Quirk** of the authors' notebook: their "Manhattan" distance is ``int(|Σ(a − b)|)``, the absolute value
of the summed coordinate differences, not ``Σ|a − b|``. ``distance="notebook"`` (default) reproduces it;
``distance="manhattan"`` is the true Manhattan distance.
"""

from __future__ import annotations

import json
import time

import numpy as np

from ..datasets import fetch
from .base import LinearFormulation, ParametricProblem, Solution

OBJECTIVE_UNIT = 1000.0   # objective and arc costs in thousands
FEATURE_UNIT = 100.0      # features θ / 100
#: Solutions per search that take about the paper's 5 s per solve on this instance: over 40 samples, 1000
#: solutions took 5.2 to 6.6 s on average on a loaded 2-core machine, where a 5 s limit stopped after 850 to
#: 980 of them with the same mean objective.
PAPER_SOLUTION_LIMIT = 1000
#: Wall-clock seconds after which a search stops whatever its solution limit: a guard, far above the
#: about 5 s that :data:`PAPER_SOLUTION_LIMIT` solutions take.
TIME_CAP_S = 60.0


def distance_matrix(coordinates, *, kind: str = "notebook") -> np.ndarray:
    """Pairwise integer distances: ``notebook`` = ``int(|Σ(a−b)|)`` (the authors' quirk) or ``manhattan``."""
    c = np.asarray(coordinates, dtype=float)
    diff = c[:, None, :] - c[None, :, :]
    if kind == "notebook":
        return np.abs(diff.sum(axis=2)).astype(int)
    if kind == "manhattan":
        return np.abs(diff).sum(axis=2).astype(int)
    raise ValueError(f"kind={kind!r}: expected 'notebook' or 'manhattan'")


class CVRP(ParametricProblem):
    """CVRP with parameters θ = (demands, client-to-depot costs), solved by OR-Tools routing."""

    name = "cvrp"
    #: OR-Tools and highspy (loaded by cvxpy) bundle clashing HiGHS symbols: whichever is imported second
    #: fails. :func:`~explainopt.problems.solve_many` therefore runs these solves in fresh interpreters that load
    #: OR-Tools first.
    isolate = "ortools.constraint_solver.pywrapcp"

    def __init__(self, coordinates, demands, *, num_vehicles: int = 4, capacity: int = 150,
                 solution_limit: int = PAPER_SOLUTION_LIMIT, time_cap: float = TIME_CAP_S,
                 distance: str = "notebook", max_load_share: float = 0.8):
        self.coordinates = np.asarray(coordinates, dtype=float)
        self.dist0 = distance_matrix(coordinates, kind=distance)
        self.demands0 = np.asarray(demands, dtype=int)
        self.n = len(self.demands0)
        if self.dist0.shape != (self.n, self.n):
            raise ValueError("coordinates and demands must describe the same nodes")
        if solution_limit < 1:
            raise ValueError(f"solution_limit={solution_limit}: a search needs at least its first solution")
        self.num_vehicles, self.capacity = num_vehicles, capacity
        self.solution_limit, self.time_cap = int(solution_limit), float(time_cap)
        self.max_load_share = max_load_share
        self.arcs = [(j, k) for j in range(self.n) for k in range(self.n) if j != k]
        self.theta0 = np.concatenate([self.demands0[1:], self.dist0[0, 1:]]).astype(float)
        self.feature_names = [f"d{j}" for j in range(1, self.n)] + [f"c0,{j}" for j in range(1, self.n)]
        self.decision_names = [f"x({j},{k})" for j, k in self.arcs]
        self.binary = np.ones(len(self.arcs), dtype=bool)

    @classmethod
    def from_registry(cls, path: str = "clemo/cvrp_instance.json", **options) -> "CVRP":
        """The registry's instance. Its ``time_limit_s`` (the paper's 5 s per solve) is not used: the default
        ``solution_limit``, ``PAPER_SOLUTION_LIMIT``, stands in for it."""
        data = json.loads(fetch(path).read_text())
        return cls(data["coordinates"], data["demands"], num_vehicles=data["num_vehicles"],
                   capacity=data["vehicle_capacity"], **options)

    # ------------------------------------------------------------------ parameters
    def split(self, theta):
        theta = np.asarray(theta, float)
        demands = np.concatenate([[0.0], theta[:self.n - 1]]).astype(int)
        dist = self.dist0.copy()
        dist[0, 1:] = dist[1:, 0] = np.asarray(theta[self.n - 1:]).astype(int)
        return demands, dist

    def perturb(self, rng):
        """Normal perturbation of demands and depot costs, truncated to integers (the authors' ``int(...)``)."""
        return np.trunc(super().perturb(rng))

    def is_valid(self, theta):
        """Total demand ≤ 80% of the fleet capacity (the authors' feasibility rule), non-negative values."""
        demands, dist = self.split(theta)
        return bool(np.all(demands >= 0) and np.all(dist >= 0)
                    and demands.sum() <= self.max_load_share * self.capacity * self.num_vehicles)

    def features(self, thetas):
        return np.asarray(thetas, float) / FEATURE_UNIT

    def cost_vector(self, theta):
        _, dist = self.split(theta)
        return np.array([dist[j, k] for j, k in self.arcs], dtype=float) / OBJECTIVE_UNIT

    def default_explained(self, present: Solution) -> np.ndarray:
        """Arcs into the depot used by the present solution (the paper explains x_j0)."""
        return np.array([i for i, (j, k) in enumerate(self.arcs) if k == 0 and present.x[i] > 0.5])

    # ------------------------------------------------------------------ solving
    def solve(self, theta) -> Solution:
        """OR-Tools routing: PATH_CHEAPEST_ARC + GUIDED_LOCAL_SEARCH, stopped after ``solution_limit`` solutions.

        The same θ and limit give the same routes on any machine and under any load. ``extra["time_capped"]``
        says whether ``time_cap`` ended the search first (status ``time_limit``, or ``no_solution`` when it
        came before the first solution); only such a search depends on the machine. No retry (the old
        wall-clock limit was raised when it ended a search before its first solution): the first solution
        does not depend on ``solution_limit``, so a second search with a larger one would find none either.
        """
        # imported here, not at the top: a process that has loaded highspy (cvxpy does) cannot load OR-Tools;
        # solve_many calls this in fresh interpreters that load OR-Tools first (see `isolate`)
        from ortools.constraint_solver import pywrapcp

        demands, dist = self.split(theta)
        manager = pywrapcp.RoutingIndexManager(self.n, self.num_vehicles, 0)
        routing = self._routing_model(manager, demands, dist)
        start = time.perf_counter()
        solution = routing.SolveWithParameters(self._search_parameters())
        time_capped = self._stopped_by_time_cap(routing.solver().Solutions(), time.perf_counter() - start)
        if solution is None:
            return Solution(float("nan"), np.full(len(self.arcs), np.nan), status="no_solution",
                            extra={"time_capped": time_capped}, solver="ortools-routing")
        x, load, routes = self._read_routes(manager, routing, solution, demands)
        return Solution(self.objective(x, theta), x, status="time_limit" if time_capped else "optimal",
                        extra={"routes": routes, "load": load, "time_capped": time_capped}, solver="ortools-routing")

    def _stopped_by_time_cap(self, n_solutions: int, seconds: float) -> bool:
        """Did ``time_cap`` end a search that found `n_solutions` in `seconds` (before its solution limit)?"""
        return n_solutions < self.solution_limit and seconds >= self.time_cap

    def _routing_model(self, manager, demands, dist):
        """The routing model of one θ: arc costs `dist`, one capacity dimension over `demands`."""
        from ortools.constraint_solver import pywrapcp

        routing = pywrapcp.RoutingModel(manager)
        transit = routing.RegisterTransitCallback(
            lambda a, b: int(dist[manager.IndexToNode(a), manager.IndexToNode(b)]))
        routing.SetArcCostEvaluatorOfAllVehicles(transit)
        demand = routing.RegisterUnaryTransitCallback(lambda a: int(demands[manager.IndexToNode(a)]))
        routing.AddDimensionWithVehicleCapacity(demand, 0, [self.capacity] * self.num_vehicles, True, "Capacity")
        return routing

    def _search_parameters(self):
        """PATH_CHEAPEST_ARC + GUIDED_LOCAL_SEARCH, stopped by ``solution_limit``; ``time_cap`` bounds both the
        search and each neighbour's completion (OR-Tools' ``lns_time_limit``, by default a wall-clock 0.1 s
        that a loaded machine could reach and so reject a neighbour)."""
        from ortools.constraint_solver import pywrapcp, routing_enums_pb2

        params = pywrapcp.DefaultRoutingSearchParameters()
        params.first_solution_strategy = routing_enums_pb2.FirstSolutionStrategy.PATH_CHEAPEST_ARC
        params.local_search_metaheuristic = routing_enums_pb2.LocalSearchMetaheuristic.GUIDED_LOCAL_SEARCH
        params.solution_limit = self.solution_limit
        cap_ms = max(1, int(round(1000 * self.time_cap)))
        params.time_limit.FromMilliseconds(cap_ms)
        params.lns_time_limit.FromMilliseconds(cap_ms)
        return params

    def _read_routes(self, manager, routing, solution, demands):
        """The arc vector, the load on arrival at each client and the non-empty routes of a solution."""
        x, load, routes = np.zeros(len(self.arcs)), np.zeros(self.n), []
        index_of = {arc: i for i, arc in enumerate(self.arcs)}
        for vehicle in range(self.num_vehicles):
            index, route, cum = routing.Start(vehicle), [0], 0
            while not routing.IsEnd(index):
                index = solution.Value(routing.NextVar(index))
                node = 0 if routing.IsEnd(index) else manager.IndexToNode(index)
                if node != route[-1]:
                    x[index_of[(route[-1], node)]] = 1.0
                route.append(node)
                cum += demands[node]
                load[node] = cum if node else load[node]
            if len(route) > 2:
                routes.append(route)
        return x, load, routes

    def routes(self, x) -> list[list[int]]:
        """The depot-to-depot routes of an arc vector x (the successor of each node along used arcs)."""
        successors = {}
        for i in np.flatnonzero(np.asarray(x) > 0.5):
            j, k = self.arcs[i]
            successors.setdefault(j, []).append(k)
        routes = []
        for first in successors.get(0, []):
            route = [0, first]
            while route[-1] != 0 and len(route) <= self.n:
                route.append(successors[route[-1]][0])
            routes.append(route)
        return routes

    def formulation(self, theta) -> LinearFormulation:
        """Degree constraints of the MTZ model (eq. (13)): out = in = 1 at clients, out_0 = in_0 ≤ m.

        The load (u) and subtour rows involve the auxiliary loads, which CLEMO does not explain; at the
        solver's own loads they are satisfied, so they do not enter δ here.
        """
        p = len(self.arcs)
        out_rows, in_rows = np.zeros((self.n, p)), np.zeros((self.n, p))
        for i, (j, k) in enumerate(self.arcs):
            out_rows[j, i], in_rows[k, i] = 1.0, 1.0
        A_eq = np.vstack([out_rows[1:], in_rows[1:], out_rows[:1] - in_rows[:1]])
        b_eq = np.concatenate([np.ones(2 * (self.n - 1)), [0.0]])
        return LinearFormulation(A_eq, b_eq, out_rows[:1], np.array([float(self.num_vehicles)]))
