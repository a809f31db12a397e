"""Regions of robust counterfactual explanations (Maragno et al., 2024): Algorithm 1 and its parts.

A robust counterfactual is the point ``x`` closest to the factual ``x0`` (the paper's x-hat) such that
every point of the uncertainty set ``x + S`` with ``S = {s : ||s|| <= rho}`` (eq. 5; l-infinity box or
l2 ball, ``regions.sets``) is classified as the target class (eqs. 3-4). Algorithm 1 (the adversarial /
cutting-set method of Mutapcic and Boyd, :func:`~explainopt.counterfactuals.robust_region`) alternates

* the **master problem** (MP, eq. 6, ``regions.master``): minimize ``d(x, x0)`` with one copy of the model
  per scenario ``s`` in a finite set ``Z``, and
* the **adversarial problem** (AP, ``regions.adversarial``): the worst scenario ``s in S`` for the current
  ``x*``, solved exactly per model family (linear: the dual norm of eq. 69, no loop; decision trees:
  eqs. 31-35 in closed form per leaf; ensembles: the MILP of eqs. 41-45; ReLU networks: eqs. 60-67).

Which method serves which family is one table, ``FAMILY`` (``regions.families``; its keys are
``FAMILIES``): the algorithm reads a model's record there and never branches on the family. Trees
are read once as leaf boxes (``regions.boxes``, from :func:`explainopt.encoders.tree_ensemble`).

The master problem of HiGHS and Gurobi (l1 and l-inf objectives) is kept alive in the solver across the
iterations (``PersistentMaster`` on :class:`explainopt.solvers.MatrixMILP`: a scenario adds
columns and rows, nothing is rebuilt or recompiled), written with the encoders' own formulations
(``explainopt.encoders.trees.split_rows``, ``explainopt.encoders.networks.relu_rows``); for trees
and ensembles it lives in the space of x, and with the l-inf box each adverse cell the AP finds is
excluded by one row ("the box of x misses the cell") instead of a model copy per scenario: every robust x
satisfies it, so the optimum is the same. Other solvers and the l2 objective use the cvxpy
``MasterProblem``. An unbounded domain is closed without changing the optimum
(:func:`tree_domain`); for ReLU networks the loop first looks for a robust point, proven by interval
propagation, on rays from x0 and past each master solution (:func:`network_distance_bound`):
its distance bounds the optimum, so the domain closes there, the master problem gets a distance row, and
each new copy's neuron bounds come from that smaller box and l1 ball (tighter big-M). (Measured and left
out: ordering the first-layer ReLU binaries of two copies by the sign of ``W_j (s_a - s_b)``, banknote
NN50 l-inf rho 0.01, 3 rows, HiGHS: 0.31 vs 0.34 s.)

The loop stops when the AP value is at most ``epsilon`` (Algorithm 1). On a time or iteration limit
the result is an *early stop*: every master solution is given its certified radius (the largest
radius for which it is robust, the distance to the other class) and the best one is returned with
``rho_bar`` (as the paper's Tables 1-2 report), :func:`certified_radius`.
:func:`~explainopt.counterfactuals.single_leaf_region` is the heuristic of eqs.
36-39 for decision trees. :func:`~explainopt.counterfactuals.certify_region` checks a returned region
independently: the AP once more, and thousands of sampled points of the box/ball (:func:`sample_set`)
classified by the model's own prediction.
"""

from .adversarial import CELL_SAMPLES, RADIUS_DEPTH, RADIUS_REACH, AdversarialResult
from .algorithm import (CELL_CUTS, CUTS, MAX_WIDENINGS, NETWORK_BOUND, OBJECTIVES, RHO_BAR_SLACK, robust_region,
                        single_leaf_region)
from .boxes import TreeBoxes, tree_boxes
from .certify import Certificate, certified_radius, certify_region
from .domain import BOUND_STEPS, TREE_DOMAIN_PAD, network_distance_bound, tree_domain
from .families import ENSEMBLE, FAMILIES, FAMILY, LINEAR, NETWORK, TREE, Family, adversarial_problem
from .master import MasterProblem, PersistentMaster
from .result import Iteration, RobustRegion
from .sets import DUAL_ORD, NORMS, sample_set

__all__ = [
    "AdversarialResult", "BOUND_STEPS", "CELL_CUTS", "CELL_SAMPLES", "CUTS", "Certificate", "DUAL_ORD", "ENSEMBLE",
    "FAMILIES", "FAMILY", "Family", "Iteration", "LINEAR", "MAX_WIDENINGS", "MasterProblem", "NETWORK",
    "NETWORK_BOUND", "NORMS", "OBJECTIVES", "PersistentMaster", "RADIUS_DEPTH", "RADIUS_REACH", "RHO_BAR_SLACK",
    "RobustRegion", "TREE", "TREE_DOMAIN_PAD", "TreeBoxes", "adversarial_problem", "certified_radius",
    "certify_region", "network_distance_bound", "robust_region", "sample_set", "single_leaf_region", "tree_boxes",
    "tree_domain",
]
