"""The one encoder API: a trained model -> constraints on a cvxpy expression of its input.

``encode(model, x, lower=..., upper=...)`` returns an :class:`Encoding` holding the constraints and an
affine expression of the model's output (trees and forests: the mean leaf probability of class 1, what
``predict_proba`` returns; linear models, gradient boosting and networks: the decision function or
logit). ``x`` may be any affine cvxpy expression of shape ``(n_features,)``, e.g. ``x + s`` for a
perturbation scenario, so several copies of a model can live in one problem.

Each model family registers its encoder with :func:`register`; :func:`encode` dispatches on the type.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import cvxpy as cp
import numpy as np

_ENCODERS: dict[type, Callable] = {}


@dataclass
class Encoding:
    """A model encoded as constraints.

    output: affine scalar expression of the model's output (score or logit, see module docstring).
    threshold: the model predicts class 1 iff ``output > threshold`` (or ``>=`` when ``inclusive``).
    output_bounds: bounds on ``output`` valid over the input box (used for big-M by callers).
    variables: named auxiliary variables (binaries, leaf weights, activations) for inspection.
    """

    model: object
    input: cp.Expression
    output: cp.Expression
    constraints: list
    threshold: float
    inclusive: bool = False
    output_bounds: tuple[float, float] = (-np.inf, np.inf)
    variables: dict = field(default_factory=dict)

    def predicts(self, target: int = 1, *, margin: float = 1e-4, threshold: float | None = None) -> list:
        """Constraints forcing the encoded model to predict `target` (binary), `margin` past the threshold.

        `threshold` overrides the model's own decision threshold on ``output`` (e.g. a robust score
        threshold tau of Forel et al.); it must be on the scale of ``output``.
        """
        tau = self.threshold if threshold is None else threshold
        if target == 1:
            return [self.output >= tau + (0.0 if self.inclusive and threshold is None else margin)]
        if target == 0:
            return [self.output <= tau - margin]
        raise ValueError(f"target must be 0 or 1 for a binary classifier, got {target!r}")


def register(*model_types: type) -> Callable:
    """Class decorator-style registration: ``@register(LogisticRegression)`` above an encoder function."""

    def wrap(func: Callable) -> Callable:
        for model_type in model_types:
            _ENCODERS[model_type] = func
        return func

    return wrap


def supported_models() -> list[str]:
    """Names of the model types :func:`encode` accepts."""
    return sorted(t.__name__ for t in _ENCODERS)


def as_bounds(lower, upper, n_features: int) -> tuple[np.ndarray, np.ndarray]:
    """Validate input-domain bounds into two float arrays of length `n_features`."""
    if lower is None or upper is None:
        raise ValueError("this encoder needs input-domain bounds: pass lower= and upper= (arrays)")
    lo = np.broadcast_to(np.asarray(lower, dtype=float), (n_features,)).copy()
    hi = np.broadcast_to(np.asarray(upper, dtype=float), (n_features,)).copy()
    if np.isnan(lo).any() or np.isnan(hi).any():
        raise ValueError("lower/upper bounds contain NaN")
    if (lo > hi).any():
        j = int(np.argmax(lo > hi))
        raise ValueError(f"lower[{j}]={lo[j]} exceeds upper[{j}]={hi[j]}")
    return lo, hi


def encode(model, x: cp.Expression, *, lower=None, upper=None, **options) -> Encoding:
    """Encode a fitted binary classifier (or an IsolationForest score) as constraints on `x`.

    Raises TypeError for an unsupported model type, ValueError for an unfitted model, a multi-class
    model or a feature-count mismatch.
    """
    encoder = next((f for t, f in _ENCODERS.items() if type(model) is t), None)
    if encoder is None:
        encoder = next((f for t, f in _ENCODERS.items() if isinstance(model, t)), None)
    if encoder is None:
        raise TypeError(
            f"cannot encode a {type(model).__name__}; supported models: {', '.join(supported_models())}"
        )
    if not isinstance(x, cp.Expression):
        raise TypeError(f"x must be a cvxpy expression (e.g. cp.Variable(n_features)), got {type(x).__name__}")
    return encoder(model, x, lower=lower, upper=upper, **options)
