"""What every counterfactual method shares: its result's common fields.

Each method's result is a dataclass derived from :class:`Counterfactual`, so that these fields mean the
same thing whichever method produced it (the contract of every counterfactual method; the inputs are
checked by :mod:`explainopt.validation` before any work starts):

* ``x``: the counterfactual, on the caller's feature scale (None when none was found);
* ``status``: how the method ended, in one vocabulary (``explainopt.validation.STATUSES``:
  ``optimal``, ``feasible``, ``limit``, ``infeasible``, ``not_found``, ``error``); ``detail``: the
  method's own status (a solver status such as ``time_limit``, or e.g. ``converged``), which
  :func:`explainopt.validation.status_of` maps to ``status``;
* ``distance``: the distance from the factual ``x0`` to ``x`` that the method minimizes, on the caller's
  feature scale: the l1 norm ``sum_j |x_j - x0_j|`` unless the method was given another norm or feature
  weights (then that norm, weighted); None without ``x``;
* ``valid``: the model's own ``predict`` gives ``x`` the target class (re-checked, never taken from
  the method);
* ``target`` (in the results of methods that take one): that class, a label of ``model.classes_``
  (0/1 for a network without ``classes_``); the other methods search class 1, the favourable class of
  their papers;
* ``time``: seconds of the whole call; ``solver``: the solver(s) or optimiser that produced ``x``
  (``"highs+scip"`` names two); ``fallback_from``: a commercial solver that refused the model for its
  licence's size, so that the open-source solver named in ``solver`` was used instead.

The factual instance is called ``x0`` throughout the library.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..encoders import model_output, model_predict
from ..validation import check_factual, status_of, target_label
from .costs import l1


@dataclass
class Counterfactual:
    """The fields every counterfactual result shares (module docstring): x, detail (the method's own
    status; ``status`` is its shared name), time, solver; keyword-only: fallback_from, distance, valid."""

    x: np.ndarray | None
    detail: str
    time: float
    solver: str
    fallback_from: str | None = field(default=None, kw_only=True)
    distance: float | None = field(default=None, kw_only=True)
    valid: bool = field(default=False, kw_only=True)

    @property
    def status(self) -> str:
        """How the method ended, in the vocabulary of ``explainopt.validation.STATUSES``."""
        return status_of(self.detail)

    @property
    def found(self) -> bool:
        return self.x is not None


def contract(result: Counterfactual, model, x0, target: int) -> Counterfactual:
    """`result` with the shared fields its method does not set itself: ``valid`` (the model's own
    prediction at x is class index `target`), ``target`` (its label, where the result has the field) and,
    where the method left it unset, ``distance`` (l1 to `x0`). Returns `result`."""
    if hasattr(result, "target"):
        result.target = target_label(model, target)
    result.valid = result.x is not None and bool(model_predict(model, result.x)[0] == target)
    if result.x is not None and (result.distance is None or math.isnan(result.distance)):
        result.distance = l1(result.x, x0)
    return result


def is_valid(model, x, target: int, threshold: float | None = None) -> bool:
    """Whether the true model gives `x` the class index `target` (or, with a score `threshold` on the
    encoding's output scale, ``output >= threshold`` for target 1 and ``<= threshold`` for target 0)."""
    if threshold is None:
        return bool(model_predict(model, x)[0] == target)
    out = model_output(model, x)[0]
    return bool(out >= threshold if target == 1 else out <= threshold)


__all__ = ["Counterfactual", "check_factual", "contract", "is_valid"]
