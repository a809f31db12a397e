"""Linear classifiers: the decision function ``w @ x + b`` is already affine, so no auxiliary variables.

scikit-learn's linear classifiers predict class 1 iff ``decision_function(x) > 0`` (strictly).
"""

from __future__ import annotations

import numpy as np
from sklearn.linear_model import LogisticRegression, SGDClassifier
from sklearn.svm import LinearSVC

from .base import Encoding, as_bounds, check_binary, check_features, check_fitted, predicted_index, register


def linear_weights(model) -> tuple[np.ndarray, float]:
    """(w, b) of a fitted binary linear classifier, validated.

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> from explainopt.encoders import linear_weights
    >>> model = LogisticRegression().fit([[0.0, 1.0], [1.0, 0.0], [2.0, 1.0], [3.0, 0.0]], [0, 0, 1, 1])
    >>> w, b = linear_weights(model)
    >>> w.shape, type(b).__name__
    ((2,), 'float')
    """
    check_fitted(model, "coef_")
    check_binary(model)
    return np.asarray(model.coef_, dtype=float).ravel(), float(np.ravel(model.intercept_)[0])


@register(LogisticRegression, LinearSVC, SGDClassifier, family="linear",
          output=lambda m, X: m.decision_function(X), predict=predicted_index)
def encode_linear(model, x, *, lower=None, upper=None) -> Encoding:
    """A binary linear classifier: output = ``decision_function`` (the logit for LogisticRegression)."""
    w, b = linear_weights(model)
    check_features(x, w.size, model)
    output = w @ x + b
    cons = []
    bounds = (-np.inf, np.inf)
    if lower is not None and upper is not None:
        lo, hi = as_bounds(lower, upper, w.size)
        cons = [x >= lo, x <= hi]
        bounds = (b + np.minimum(w * lo, w * hi).sum(), b + np.maximum(w * lo, w * hi).sum())
    return Encoding(model, x, output, cons, threshold=0.0, inclusive=False, output_bounds=bounds)
