"""The model families robust regions support, in one table: for each, its adversarial problem, its
certified radius, how its domain closes, how the persistent master problem writes its copies, and the
options of Algorithm 1 that apply to it. The algorithm (:mod:`.algorithm`, :mod:`.certify`) reads a
model's record here and never asks which family it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ...encoders import model_family, model_predict
from . import adversarial as ap
from .boxes import tree_boxes
from .domain import network_domain, network_model_bound, tree_model_domain
from .master import NetworkCopies, TreeCopies, linear_region
from .sets import check_norm

LINEAR, TREE, ENSEMBLE, NETWORK = "linear", "tree", "ensemble", "network"


def _no_boxes(model) -> None:
    return None


@dataclass(frozen=True)
class Family:
    """How Algorithm 1 treats one model family.

    adversarial: the AP, ``(model, boxes, x_star, *, rho, norm, target, solver, time_limit, method, more,
    rng)`` (:mod:`.adversarial`). radius: the distance to the other class, ``(model, boxes, x, *, norm,
    target, cap, solver, time_limit)``. boxes: the model read as leaf boxes (trees) or None, once per
    call. domain: the domain box closed, ``(boxes, x0, lower, upper, *, rho, reach, bound)``;
    exact_domain: that box keeps the optimum at once (no widening, :mod:`.domain`). copies: the writer of
    the model's copies in :class:`~.master.PersistentMaster`. closed_form: the whole region in one convex
    problem (no loop), or None. distance_bound: an upper bound on the optimum from robust points
    (:func:`~.domain.network_distance_bound`), or None. objective_bound: the persistent master starts each
    solve from the last dual bound. single_tree: the single-leaf heuristic (eqs. 36-39) applies.
    """

    adversarial: Callable
    radius: Callable
    boxes: Callable = _no_boxes
    domain: Callable | None = None
    exact_domain: bool = False
    copies: type | None = None
    closed_form: Callable | None = None
    distance_bound: Callable | None = None
    objective_bound: bool = False
    single_tree: bool = False


#: The families (:func:`explainopt.encoders.model_family`) robust regions support. The objective bound is
#: on for networks only: measured (3 rows, HiGHS, l-inf): banknote NN50 (rho 0.01) 5.3 -> 4.2 s per region;
#: diabetes GBM10 (0.01) 2.8 -> 2.4 s, banknote RF10 (0.05) 7.7 -> 8.8 s.
FAMILY = {
    LINEAR: Family(ap.linear_ap, ap.linear_radius, closed_form=linear_region),
    TREE: Family(ap.tree_ap, ap.tree_radius, boxes=tree_boxes, domain=tree_model_domain, exact_domain=True,
                 copies=TreeCopies, single_tree=True),
    ENSEMBLE: Family(ap.ensemble_ap, ap.ensemble_radius, boxes=tree_boxes, domain=tree_model_domain,
                     exact_domain=True, copies=TreeCopies),
    NETWORK: Family(ap.network_ap, ap.network_radius, domain=network_domain, copies=NetworkCopies,
                    distance_bound=network_model_bound, objective_bound=True),
}
FAMILIES = tuple(FAMILY)


def family_of(model) -> Family:
    """The model's record, if robust regions support its family (TypeError naming the families otherwise)."""
    family = model_family(model)  # TypeError naming the supported models for an unknown type
    if family not in FAMILY:
        raise TypeError(f"robust regions support the model families {FAMILIES}; a {type(model).__name__} "
                        f"is of family {family!r}")
    return FAMILY[family]


def adversarial_problem(model, x_star, *, rho: float, norm: str = "linf", target: int = 1,
                        solver=None, time_limit: float | None = None, method: str = "auto") -> ap.AdversarialResult:
    """Solve (AP) for `x_star` exactly with the method of the model's family (:mod:`.adversarial`);
    `target`: the class index (0 or 1) the set must keep.

    method: ``auto``; for a decision tree also ``leaves`` (per-leaf problems, eqs. 31-35, default) or
    ``milp`` (the ensemble MILP of eqs. 41-45 with one tree).
    """
    check_norm(norm)
    family = family_of(model)
    return family.adversarial(model, family.boxes(model), np.asarray(x_star, dtype=float), rho=rho, norm=norm,
                              target=target, solver=solver, time_limit=time_limit, method=method)


def radius_of(model, family: Family, boxes, x, *, norm, target: int, cap, solver, time_limit=None) -> float:
    """The certified radius of `x` for the class index `target` (0 when `x` is not of that class)."""
    if model_predict(model, x)[0] != target:
        return 0.0
    return family.radius(model, boxes, x, norm=norm, target=target, cap=cap, solver=solver, time_limit=time_limit)
