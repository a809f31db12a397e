"""Parametric shortest path (Section 4.1 of Otto et al.): edge costs ``c + θ·ĉ``, one parameter θ.

The instance (9-node grid, source ``s``, target ``t``) is ``clemo/spp_instance.json``; the solution
algorithm is Dijkstra's (networkx). Edges are arcs oriented as listed in the instance (every s–t path of
the grid runs right/up), so the decision vector is the arc-incidence vector of the path and the
formulation is eq. (12): flow conservation ``out − in = 1`` at s, ``−1`` at t, ``0`` elsewhere.
"""

from __future__ import annotations

import json

import networkx as nx
import numpy as np

from ..datasets import fetch
from .base import LinearFormulation, ParametricProblem, Solution


class ShortestPath(ParametricProblem):
    """SPP-θ: ``min (c + θ ĉ)ᵀ x`` over s–t paths; θ ~ U(low, high) around θ0 = 0."""

    name = "shortest_path"

    def __init__(self, *, nodes, edges, source, target, positions=None, theta_range=(-1.0, 1.0)):
        self.nodes = list(nodes)
        self.arcs = [(e["u"], e["v"]) for e in edges]
        self.cost = np.array([e["cost"] for e in edges], dtype=float)
        self.perturbation = np.array([e["perturbation"] for e in edges], dtype=float)
        self.source, self.target = source, target
        self.positions = positions or {}
        self.theta_range = tuple(theta_range)
        self.theta0 = np.array([0.0])
        self.feature_names = ["θ"]
        self.decision_names = [f"x({u},{v})" for u, v in self.arcs]
        self.binary = np.ones(len(self.arcs), dtype=bool)

    @classmethod
    def from_registry(cls, path: str = "clemo/spp_instance.json") -> "ShortestPath":
        """The paper's instance, read through the dataset registry."""
        data = json.loads(fetch(path).read_text())
        return cls(nodes=data["nodes"], edges=data["edges"], source=data["source_node"],
                   target=data["target_node"], positions=data.get("positions"),
                   theta_range=data.get("theta_range", (-1.0, 1.0)))

    def perturb(self, rng):
        """θ ~ U(theta_range) (the SPP experiment samples uniformly, not normally)."""
        return np.array([rng.uniform(*self.theta_range)])

    def is_valid(self, theta):
        """Bounded (no negative cycle): all edge costs positive."""
        return bool(np.all(self.cost_vector(theta) > 0))

    def cost_vector(self, theta):
        return self.cost + float(np.ravel(theta)[0]) * self.perturbation

    def graph(self, theta) -> nx.DiGraph:
        g = nx.DiGraph()
        g.add_nodes_from(self.nodes)
        for (u, v), c in zip(self.arcs, self.cost_vector(theta)):
            g.add_edge(u, v, weight=float(c))
        return g

    def path_to_x(self, path) -> np.ndarray:
        used = set(zip(path[:-1], path[1:]))
        return np.array([1.0 if arc in used else 0.0 for arc in self.arcs])

    def solve(self, theta) -> Solution:
        """Dijkstra's algorithm (networkx)."""
        path = nx.dijkstra_path(self.graph(theta), self.source, self.target, weight="weight")
        x = self.path_to_x(path)
        return Solution(self.objective(x, theta), x, extra={"path": path}, solver="networkx-dijkstra")

    def formulation(self, theta) -> LinearFormulation:
        """Flow conservation of eq. (12): node–arc incidence (out − in) = 1 at s, −1 at t, 0 elsewhere."""
        A = np.zeros((len(self.nodes), len(self.arcs)))
        index = {n: k for k, n in enumerate(self.nodes)}
        for j, (u, v) in enumerate(self.arcs):
            A[index[u], j] += 1.0
            A[index[v], j] -= 1.0
        b = np.zeros(len(self.nodes))
        b[index[self.source]], b[index[self.target]] = 1.0, -1.0
        return LinearFormulation(A, b, np.zeros((0, len(self.arcs))), np.zeros(0))
