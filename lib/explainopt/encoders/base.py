"""The one encoder API: a trained model -> constraints on a cvxpy expression of its input.

``encode(model, x, lower=..., upper=...)`` returns an :class:`Encoding` holding the constraints and an
affine expression of the model's output (trees and forests: the mean leaf probability of class 1, what
``predict_proba`` returns; linear models, gradient boosting and networks: the decision function or
logit). ``x`` may be any affine cvxpy expression of shape ``(n_features,)``, e.g. ``x + s`` for a
perturbation scenario, so several copies of a model can live in one problem.

Each model type registers its encoder with :func:`register`, together with its family (``linear``,
``tree``, ``ensemble``, ``network``, ``interval-network``, ``anomaly``, ``pipeline``: a scikit-learn
Pipeline of affine preprocessing before one of the others, :mod:`explainopt.encoders.pipelines`) and how
to read the model's own output and prediction; :func:`encode`, :func:`model_family`,
:func:`model_output` and :func:`model_predict` dispatch on the type, and nothing else in the library
asks what kind of model it holds. The last two are what every counterfactual is re-checked with: the
true model has the last word.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import cvxpy as cp
import numpy as np

_ENCODERS: dict[type, "_Family"] = {}


#: The model families (:func:`model_family`) that encoders register under.
FAMILIES = ("linear", "tree", "ensemble", "network", "interval-network", "anomaly", "pipeline")


@dataclass(frozen=True)
class _Family:
    name: str  # one of FAMILIES
    encode: Callable  # (model, x, lower=, upper=, **options) -> Encoding
    output: Callable  # (model, X) -> the model's own output on the encoding's scale, shape (n,)
    predict: Callable  # (model, X) -> predicted class index (0/1) by the model's own rule, shape (n,)


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

        Examples
        --------
        >>> import cvxpy as cp
        >>> from sklearn.linear_model import LogisticRegression
        >>> from explainopt.encoders import encode
        >>> model = LogisticRegression().fit([[0.0], [1.0], [2.0], [3.0]], [0, 0, 1, 1])
        >>> enc = encode(model, cp.Variable(1), lower=0, upper=3)
        >>> print(enc.threshold, len(enc.predicts(1)), len(enc.predicts(0, margin=0.5)))
        0.0 1 1
        """
        tau = self.threshold if threshold is None else threshold
        if target == 1:
            return [self.output >= tau + (0.0 if self.inclusive and threshold is None else margin)]
        if target == 0:
            return [self.output <= tau - margin]
        raise ValueError(f"target must be 0 or 1 for a binary classifier, got {target!r}")


def register(*model_types: type | str, family: str, output: Callable, predict: Callable) -> Callable:
    """Decorator registering an encoder function for `model_types` of a `family` (one of
    ``FAMILIES``), with the model's own `output` and `predict` functions (both
    ``(model, X) -> array``) used to verify what the encoding claims. A type may be given by its full
    name (``"torch.nn.modules.container.Sequential"``, see ``type_names``), so that its library is
    imported only where such a model is used.

    Examples
    --------
    >>> from explainopt.encoders import register
    >>> try:
    ...     register(object, family="spline", output=None, predict=None)
    ... except ValueError as error:
    ...     print(error)
    family 'spline' not in ('linear', 'tree', 'ensemble', 'network', 'interval-network', 'anomaly', 'pipeline')
    """
    if family not in FAMILIES:
        raise ValueError(f"family {family!r} not in {FAMILIES}")

    def wrap(func: Callable) -> Callable:
        for model_type in model_types:
            _ENCODERS[model_type] = _Family(family, func, output, predict)
        return func

    return wrap


def type_names(model) -> set[str]:
    """The full names (``module.QualifiedName``) of the model's type and its base classes."""
    return {f"{c.__module__}.{c.__qualname__}" for c in type(model).__mro__}


def _family(model) -> _Family:
    family = _ENCODERS.get(type(model))
    if family is None:
        family = next((f for t, f in _ENCODERS.items() if isinstance(t, type) and isinstance(model, t)), None)
    if family is None:
        names = type_names(model)
        family = next((f for t, f in _ENCODERS.items() if isinstance(t, str) and t in names), None)
    if family is None:
        raise TypeError(
            f"cannot encode a {type(model).__name__}; supported models: {', '.join(supported_models())}"
        )
    return family


def model_family(model) -> str:
    """The family of a supported model (``FAMILIES``); TypeError names the supported models.

    Examples
    --------
    >>> from sklearn.ensemble import RandomForestClassifier
    >>> from sklearn.linear_model import LogisticRegression
    >>> from explainopt.encoders import model_family
    >>> X, y = [[0.0], [1.0], [2.0], [3.0]], [0, 0, 1, 1]
    >>> model_family(LogisticRegression().fit(X, y)), model_family(RandomForestClassifier(n_estimators=3).fit(X, y))
    ('linear', 'ensemble')
    """
    return _family(model).name


def model_input(model, X):
    """The rows of `X` as the model takes them: a float matrix, or a DataFrame of its feature names when it
    was fitted with names (so that scikit-learn does not warn about missing names).

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn.linear_model import LogisticRegression
    >>> from explainopt.encoders.base import model_input
    >>> model = LogisticRegression().fit(pd.DataFrame({"age": [20.0, 30, 40, 50]}), [0, 0, 1, 1])
    >>> model_input(model, [35.0])
        age
    0  35.0
    """
    X = np.asarray(X, dtype=float)
    X = X.reshape(1, -1) if X.ndim == 1 else X
    names = getattr(model, "feature_names_in_", None)
    if names is None:
        return X
    import pandas as pd

    return pd.DataFrame(X, columns=names)


def model_output(model, X) -> np.ndarray:
    """The model's own output at the rows of `X`, on the scale of ``encode(model, ...).output``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> from explainopt.encoders import model_output
    >>> model = LogisticRegression().fit([[0.0], [1.0], [2.0], [3.0]], [0, 0, 1, 1])
    >>> np.allclose(model_output(model, [[0.5], [2.5]]), model.decision_function([[0.5], [2.5]]))
    True
    """
    return np.asarray(_family(model).output(model, model_input(model, X)), dtype=float).ravel()


def model_predict(model, X) -> np.ndarray:
    """The class index (0 or 1) the model itself predicts at the rows of `X` (inlier = 1 for anomaly
    detectors).

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> from explainopt.encoders import model_predict
    >>> model = LogisticRegression().fit([[0.0], [1.0], [2.0], [3.0]], ["no", "no", "yes", "yes"])
    >>> model_predict(model, [[0.5], [2.5]]), model.classes_
    (array([0, 1]), array(['no', 'yes'], dtype='<U3'))
    """
    return np.asarray(_family(model).predict(model, model_input(model, X)), dtype=int).ravel()


def supported_models() -> list[str]:
    """Names of the model types :func:`encode` accepts.

    Examples
    --------
    >>> from explainopt.encoders import supported_models
    >>> "RandomForestClassifier" in supported_models(), "Pipeline" in supported_models()
    (True, True)
    """
    return sorted(t.__name__ if isinstance(t, type) else t.rpartition(".")[2] for t in _ENCODERS)


def check_fitted(model, attribute: str) -> None:
    if not hasattr(model, attribute):
        raise ValueError(f"{type(model).__name__} is not fitted: call fit(X, y) before encoding it")


def check_binary(model) -> None:
    if len(model.classes_) != 2:
        raise ValueError(
            f"{type(model).__name__} has {len(model.classes_)} classes; only binary classifiers are "
            "supported (fit a one-vs-rest binary model for the target class)"
        )


def check_features(x: cp.Expression, n: int, model) -> None:
    if x.ndim != 1 or x.shape[0] != n:
        raise ValueError(f"{type(model).__name__} expects {n} features but x has shape {x.shape}")


def predicted_index(model, X) -> np.ndarray:
    """Index into ``classes_`` of scikit-learn's own ``predict``."""
    return np.searchsorted(model.classes_, model.predict(X))


def as_bounds(lower, upper, n_features: int) -> tuple[np.ndarray, np.ndarray]:
    """Validate input-domain bounds into two float arrays of length `n_features`.

    Examples
    --------
    >>> from explainopt.encoders import as_bounds
    >>> as_bounds(0, [1, 2, 3], 3)
    (array([0., 0., 0.]), array([1., 2., 3.]))
    """
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

    Examples
    --------
    >>> import cvxpy as cp
    >>> from sklearn.linear_model import LogisticRegression
    >>> from explainopt import solvers
    >>> from explainopt.encoders import encode
    >>> model = LogisticRegression().fit([[0.0], [1.0], [2.0], [3.0]], [0, 0, 1, 1])
    >>> x = cp.Variable(1)
    >>> enc = encode(model, x, lower=0, upper=3)
    >>> problem = cp.Problem(cp.Minimize(cp.abs(x[0] - 0.5)), enc.constraints + enc.predicts(1))
    >>> solvers.solve(problem, solver="highs").status, model.predict([x.value])
    ('optimal', array([1]))
    """
    family = _family(model)
    if not isinstance(x, cp.Expression):
        raise TypeError(f"x must be a cvxpy expression (e.g. cp.Variable(n_features)), got {type(x).__name__}")
    return family.encode(model, x, lower=lower, upper=upper, **options)
