"""What every counterfactual method shares: its result's common fields and the checks of its inputs.

Each method's result is a dataclass derived from :class:`Counterfactual`, so that ``x`` (the
counterfactual, None when none was found), ``status``, ``time`` and ``solver`` mean the same thing
whichever method produced it. The factual instance is called ``x0`` throughout the library.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..encoders import model_output, model_predict


@dataclass
class Counterfactual:
    """x: the counterfactual (None without one); status: how the method ended (a solver status such as
    ``optimal``, ``time_limit``, ``infeasible``, or the method's own, e.g. ``converged``); time: seconds of
    the whole call (model building, compilation, solves, checks); solver: the solver(s) that produced
    it (``"highs+scip"`` names two); fallback_from: a commercial solver that refused the model for its
    licence's size, so that the open-source solver named in ``solver`` was used instead."""

    x: np.ndarray | None
    status: str
    time: float
    solver: str
    fallback_from: str | None = field(default=None, kw_only=True)

    @property
    def found(self) -> bool:
        return self.x is not None


def check_factual(x0, n_features: int | None) -> np.ndarray:
    """`x0` as a float vector of `n_features` finite values; ValueError naming the problem otherwise."""
    x0 = x0.to_numpy(float).ravel() if hasattr(x0, "to_numpy") else np.asarray(x0, dtype=float).ravel()
    if n_features is not None and x0.shape != (n_features,):
        raise ValueError(f"x0 must have {n_features} features (the model's n_features_in_), got shape {x0.shape}")
    if not np.isfinite(x0).all():
        raise ValueError("x0 contains NaN or infinite values")
    return x0


def is_valid(model, x, target: int, threshold: float | None = None) -> bool:
    """Whether the true model gives `x` the class index `target` (or, with a score `threshold` on the
    encoding's output scale, ``output >= threshold`` for target 1 and ``<= threshold`` for target 0)."""
    if threshold is None:
        return bool(model_predict(model, x)[0] == target)
    out = model_output(model, x)[0]
    return bool(out >= threshold if target == 1 else out <= threshold)
