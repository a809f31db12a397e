"""Parametric optimization problems explained by CLEMO (Otto, Kurtz, Birbil): one interface, three problems.

:class:`~.base.ParametricProblem` samples θ around θ0, solves with its algorithm (returning the objective
value, the decision vector and the solver that ran), and evaluates f(x; θ) and the violation δ of eq. (9);
:func:`solve_many` solves many θ. Problems: :class:`ShortestPath` (Dijkstra, Section 4.1),
:class:`Knapsack` (continuous LP through :mod:`explainopt.solvers`, HiGHS by default, Section 4.2; with
:func:`pisinger_instance`), :class:`CVRP` (OR-Tools routing heuristic, Section 4.3).
"""

from .base import LinearFormulation, ParametricProblem, Solution, solve_many
from .knapsack import TYPES as KNAPSACK_TYPES, Knapsack, greedy_fractional, pisinger_instance, read_kp
from .shortest_path import ShortestPath
from .vrp import CVRP, distance_matrix

__all__ = ["ParametricProblem", "Solution", "LinearFormulation", "solve_many", "ShortestPath", "Knapsack", "CVRP",
           "KNAPSACK_TYPES", "pisinger_instance", "greedy_fractional", "read_kp", "distance_matrix"]
