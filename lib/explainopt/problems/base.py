"""The interface of a parametric optimization problem ``min f(x; θ) s.t. x ∈ X(θ)`` (eq. (2) of Otto et al.).

A :class:`ParametricProblem` knows its present parameters ``θ0``, samples parameters around them
(Algorithm 2: keep only feasible, bounded samples), solves an instance with its solution algorithm ``h``
and returns ``(f(x; θ), x)`` as a :class:`Solution`, evaluates the objective ``f(x; θ)`` and the constraint
violation ``δ(x, X(θ))`` of eq. (9). All three problems of the paper have an objective that is linear in
``x`` (``f(x; θ) = c(θ)ᵀx``) and a linear formulation ``A_eq(θ) x = b_eq(θ)``, ``A_in(θ) x ≤ b_in(θ)``;
:meth:`ParametricProblem.formulation` returns it, which is what CLEMO's coherence terms need.
:func:`solve_many` applies ``h`` to many parameter vectors, in interpreters of their own for problems
whose solver cannot share a process with the others (``isolate``).
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import joblib
import numpy as np

from ..isolation import map_isolated


@dataclass
class Solution:
    """What the solution algorithm returns for one θ: the objective value, the decision vector and the
    algorithm or solver that produced them (``"highs"``, ``"networkx-dijkstra"``, ``"ortools-routing"``)."""

    objective: float
    x: np.ndarray
    status: str = "optimal"
    extra: dict = field(default_factory=dict)
    solver: str = ""


@dataclass
class LinearFormulation:
    """``A_eq x = b_eq`` and ``A_in x ≤ b_in`` for one θ (rows may be empty arrays)."""

    A_eq: np.ndarray
    b_eq: np.ndarray
    A_in: np.ndarray
    b_in: np.ndarray


class ParametricProblem(ABC):
    """A parametric optimization problem with one solution algorithm.

    Subclasses set ``theta0`` (present parameters), ``feature_names``, ``decision_names``, ``binary``
    (per decision variable: is it 0/1?) and implement :meth:`solve`, :meth:`cost_vector` and
    :meth:`formulation`. ``isolate`` names a module that the solver needs loaded before any other in
    its process (see :func:`solve_many`); None for problems that solve anywhere.
    """

    name: str = "problem"
    theta0: np.ndarray
    feature_names: list[str]
    decision_names: list[str]
    binary: np.ndarray
    relative_std: float = 0.2
    isolate: str | None = None

    # ---------------------------------------------------------------- to implement
    @abstractmethod
    def solve(self, theta: np.ndarray) -> Solution:
        """Apply the solution algorithm h to the instance with parameters θ."""

    @abstractmethod
    def cost_vector(self, theta: np.ndarray) -> np.ndarray:
        """``c(θ)`` with ``f(x; θ) = c(θ)ᵀ x``."""

    @abstractmethod
    def formulation(self, theta: np.ndarray) -> LinearFormulation:
        """The linear description of ``X(θ)`` used for δ (eq. (9))."""

    # ---------------------------------------------------------------- shared behaviour
    def is_valid(self, theta: np.ndarray) -> bool:
        """Whether the instance with parameters θ is feasible and bounded (default: all parameters ≥ 0)."""
        return bool(np.all(np.asarray(theta) >= 0))

    def perturb(self, rng: np.random.Generator) -> np.ndarray:
        """One draw ``θ ~ N(θ0, (0.2·|θ0|)²)`` per component (Section 4, "Setup")."""
        theta0 = np.asarray(self.theta0, dtype=float)
        return theta0 + rng.normal(0.0, self.relative_std * np.abs(theta0))

    def sample(self, n_samples: int, *, random_state=None, max_tries: int | None = None) -> np.ndarray:
        """θ0 followed by ``n_samples - 1`` valid perturbations (Algorithm 2); shape (n_samples, k)."""
        if n_samples < 2:
            raise ValueError(f"n_samples={n_samples}: need at least 2 (θ0 and one sample)")
        rng = np.random.default_rng(random_state)
        rows, tries = [np.asarray(self.theta0, dtype=float)], 0
        max_tries = max_tries or 20 * n_samples
        while len(rows) < n_samples:
            tries += 1
            if tries > max_tries:
                raise RuntimeError(f"{self.name}: only {len(rows)} valid samples in {max_tries} draws")
            theta = self.perturb(rng)
            if self.is_valid(theta):
                rows.append(theta)
        return np.vstack(rows)

    def objective(self, x: np.ndarray, theta: np.ndarray) -> float:
        """``f(x; θ) = c(θ)ᵀ x``."""
        return float(self.cost_vector(theta) @ np.asarray(x, dtype=float))

    def violation(self, x: np.ndarray, theta: np.ndarray) -> float:
        """δ(x, X(θ)) of eq. (9): the sum of constraint violations (an equality counts as two inequalities)."""
        form, x = self.formulation(theta), np.asarray(x, dtype=float)
        eq = np.abs(form.A_eq @ x - form.b_eq).sum() if len(form.b_eq) else 0.0
        ineq = np.maximum(0.0, form.A_in @ x - form.b_in).sum() if len(form.b_in) else 0.0
        return float(eq + ineq)

    def features(self, thetas: np.ndarray) -> np.ndarray:
        """The surrogate's input features for parameters θ (identity unless a problem rescales)."""
        return np.asarray(thetas, dtype=float)

    def default_explained(self, present: Solution) -> np.ndarray:
        """Indices of the decision variables to explain (default: all)."""
        return np.arange(len(self.decision_names))


def _solve_chunk(problem: ParametricProblem, thetas) -> list[Solution]:
    return [problem.solve(theta) for theta in thetas]


def solve_many(problem: ParametricProblem, thetas, *, n_jobs: int = 1) -> list[Solution]:
    """The problem's algorithm on every row of `thetas`, in order.

    A problem with ``isolate`` set (the CVRP) is solved in fresh interpreters, `n_jobs` at a time, that
    import that module first (``explainopt.isolation.map_isolated``): OR-Tools and highspy (which
    cvxpy loads) bundle clashing HiGHS symbols, so whichever of the two a process imports second fails.
    Other problems run in this process (``n_jobs=1``) or in joblib workers.
    """
    thetas = np.atleast_2d(thetas)
    if problem.isolate:
        workers = max(1, n_jobs if n_jobs > 0 else (os.cpu_count() or 1))
        chunks = [c for c in np.array_split(thetas, min(len(thetas), workers)) if len(c)]
        parts = map_isolated(_solve_chunk, [(problem, c) for c in chunks], preload=problem.isolate, n_jobs=workers)
        return [s for part in parts for s in part]
    if n_jobs == 1:
        return _solve_chunk(problem, thetas)
    return joblib.Parallel(n_jobs=n_jobs)(joblib.delayed(problem.solve)(theta) for theta in thetas)
