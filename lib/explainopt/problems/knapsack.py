"""Continuous knapsack (Section 4.2 of Otto et al.): ``max vᵀx s.t. wᵀx ≤ 1, x ∈ [0, 1]^p``, θ = (v, w).

Instances: the kplib-style files of the authors' repository (``clemo/knapsack/<type>/sNNN.kp``: n, capacity
b, then "value weight" per item), of which the authors use the first 25 items with values and weights
scaled by 2/b (capacity 1). :func:`pisinger_instance` generates Pisinger's (2005) four types for other
sizes; the runtime study (Table 3) scales the weights so that their sum is U(1.1, 1.3) times the capacity.
The LP is solved by HiGHS (``scipy.optimize.linprog``); Dantzig's greedy fractional rule is the exact
alternative used as a check.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linprog

from .base import LinearFormulation, ParametricProblem, Solution

TYPES = ("uncorrelated", "weakly_correlated", "strongly_correlated", "inverse_strongly_correlated")
TYPE_FOLDERS = dict(zip(TYPES, ("00Uncorrelated", "01WeaklyCorrelated", "02StronglyCorrelated",
                                "03InverseStronglyCorrelated")))


def read_kp(path) -> tuple[np.ndarray, np.ndarray, float]:
    """(values, weights, capacity) of a kplib ``.kp`` file."""
    tokens = open(path).read().split()
    n, capacity = int(tokens[0]), float(tokens[1])
    pairs = np.array(tokens[2:2 + 2 * n], dtype=float).reshape(n, 2)
    return pairs[:, 0], pairs[:, 1], capacity


def greedy_fractional(values, weights, capacity: float = 1.0) -> np.ndarray:
    """Dantzig's rule: items by decreasing v/w, the critical item taken fractionally (optimal for the LP)."""
    values, weights = np.asarray(values, float), np.asarray(weights, float)
    x, room = np.zeros(len(values)), capacity
    for j in np.argsort(-values / weights, kind="stable"):
        if values[j] <= 0 or room <= 0:
            break
        x[j] = min(1.0, room / weights[j])
        room -= x[j] * weights[j]
    return x


class Knapsack(ParametricProblem):
    """Parametric continuous knapsack with capacity 1; θ = (v_1..v_p, w_1..w_p)."""

    name = "knapsack"

    def __init__(self, values, weights, *, algorithm: str = "highs", include_bounds: bool = False):
        if algorithm not in ("highs", "greedy"):
            raise ValueError(f"algorithm={algorithm!r}: expected 'highs' or 'greedy'")
        self.values, self.weights = np.asarray(values, float), np.asarray(weights, float)
        if self.values.shape != self.weights.shape or self.values.ndim != 1:
            raise ValueError("values and weights must be 1-d arrays of the same length")
        p = len(self.values)
        self.p, self.algorithm, self.include_bounds = p, algorithm, include_bounds
        self.theta0 = np.concatenate([self.values, self.weights])
        self.feature_names = [f"v{j}" for j in range(p)] + [f"w{j}" for j in range(p)]
        self.decision_names = [f"x{j}" for j in range(p)]
        self.binary = np.zeros(p, dtype=bool)

    @classmethod
    def from_registry(cls, kind: str = "uncorrelated", instance: int = 0, *, n_items: int = 25, **options):
        """The authors' instance: first `n_items` items of ``sNNN.kp``, scaled by 2/b (capacity 1)."""
        from ..datasets import fetch

        if kind not in TYPE_FOLDERS:
            raise ValueError(f"kind={kind!r}: expected one of {TYPES}")
        v, w, b = read_kp(fetch(f"clemo/knapsack/{TYPE_FOLDERS[kind]}/s{instance:03d}.kp"))
        return cls(v[:n_items] * 2 / b, w[:n_items] * 2 / b, **options)

    def split(self, theta):
        theta = np.asarray(theta, float)
        return theta[:self.p], theta[self.p:]

    def is_valid(self, theta):
        """Feasible (x = 0) and bounded (x ∈ [0,1]) always; we keep positive weights so v/w is defined."""
        v, w = self.split(theta)
        return bool(np.all(w > 0))

    def solve(self, theta) -> Solution:
        v, w = self.split(theta)
        if self.algorithm == "greedy":
            x = greedy_fractional(v, w)
        else:
            res = linprog(-v, A_ub=w[None, :], b_ub=[1.0], bounds=[(0, 1)] * self.p, method="highs")
            if res.status != 0:
                return Solution(float("nan"), np.full(self.p, np.nan), status="error", extra={"message": res.message})
            x = res.x
        return Solution(float(v @ x), x)

    def cost_vector(self, theta):
        return self.split(theta)[0]

    def formulation(self, theta) -> LinearFormulation:
        """``wᵀx ≤ 1`` (and ``0 ≤ x ≤ 1`` when ``include_bounds``; the authors' code leaves them out)."""
        _, w = self.split(theta)
        A, b = w[None, :], np.ones(1)
        if self.include_bounds:
            eye = np.eye(self.p)
            A, b = np.vstack([A, eye, -eye]), np.concatenate([b, np.ones(self.p), np.zeros(self.p)])
        return LinearFormulation(np.zeros((0, self.p)), np.zeros(0), A, b)


def pisinger_instance(n_items: int, kind: str = "uncorrelated", *, R: int = 1000,
                      capacity_ratio=(1.1, 1.3), random_state=None) -> Knapsack:
    """A Pisinger (2005) instance with capacity 1: weights scaled so that Σw = U(capacity_ratio).

    Types: uncorrelated (v, w ~ U{1..R}), weakly correlated (v ~ U[w − R/10, w + R/10], v ≥ 1), strongly
    correlated (v = w + R/10), inverse strongly correlated (v ~ U{1..R}, w = v + R/10). Values get the
    same scale factor as the weights.
    """
    if kind not in TYPES:
        raise ValueError(f"kind={kind!r}: expected one of {TYPES}")
    if n_items < 1:
        raise ValueError(f"n_items={n_items}: need at least one item")
    rng = np.random.default_rng(random_state)
    w = rng.integers(1, R + 1, n_items).astype(float)
    if kind == "uncorrelated":
        v = rng.integers(1, R + 1, n_items).astype(float)
    elif kind == "weakly_correlated":
        v = np.maximum(1.0, w + rng.integers(-R // 10, R // 10 + 1, n_items))
    elif kind == "strongly_correlated":
        v = w + R / 10
    else:
        v = rng.integers(1, R + 1, n_items).astype(float)
        w = v + R / 10
    scale = rng.uniform(*capacity_ratio) / w.sum()
    return Knapsack(v * scale, w * scale)
