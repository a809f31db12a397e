"""Input checked once, at the boundary: what every counterfactual method and chapter accepts.

Each public counterfactual method passes its inputs through these functions before any work starts, so
that a bad input gets a ``ValueError`` (or ``TypeError``) naming the argument, never a message from deep
inside NumPy, cvxpy or a solver:

* :func:`check_model`: a fitted, supported, binary classifier; its classes (:func:`classes`);
* :func:`check_factual`: ``x0`` as an array, a pandas Series or a one-row DataFrame, aligned by feature
  name with the model's ``feature_names_in_`` where both have names, finite, of the model's length;
* :func:`check_vector`: the same for any per-feature argument (``weights``, bounds);
* :func:`domain`: the feature box from ``lower``/``upper`` (arrays, Series or scalars) or from data
  ``X`` (its column minima and maxima; :func:`explainopt.featurespace.data_spec` gives the feature types),
  with an error when ``x0`` lies outside it;
* :func:`target_index`: ``target=None`` is the class other than the model's prediction at ``x0``; any
  other value must be one of ``model.classes_`` (labels of any type), and the methods work with its
  index;
* :func:`check_solver`: the solver's name, ``time_limit > 0`` and ``mip_gap >= 0``;
* :func:`check_seed`: a seed (None, a non-negative integer or a NumPy Generator).

Statuses. Every counterfactual result says how its method ended in one vocabulary, :data:`STATUSES`
(:func:`status_of` maps each method's own status, kept in the result's ``detail``):

``optimal``
    the method's optimization problem was solved to proven optimality (within the solver's gap);
``feasible``
    a counterfactual was found without an optimality proof (heuristic and gradient methods);
``limit``
    a time, iteration, round or budget limit ended the search before the method's goal was met; ``x``
    is the last or best point (None when there was none) and ``valid`` says whether it is one;
``infeasible``
    no counterfactual satisfies the method's constraints in the domain (``x`` is None);
``not_found``
    the method ended without a counterfactual and without a proof that none exists (``x`` is None);
``error``
    a solver failed (``x`` is None).
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

from .encoders import model_family, model_predict, network_layers

STATUSES = ("optimal", "feasible", "limit", "infeasible", "not_found", "error")

#: Each method's own status (a result's ``detail``) -> the shared vocabulary.
STATUS_OF = {
    # solvers (explainopt.solvers) and the methods that report them
    "optimal": "optimal", "time_limit": "limit", "no_solution": "error", "infeasible": "infeasible",
    "unbounded": "error", "error": "error", "licence_limit": "error",
    # robust regions, PROPLACE, MILP-R, Proto-R
    "converged": "optimal", "certified": "optimal", "iteration_limit": "limit", "max_iter": "limit",
    "neighbour": "feasible", "robust": "feasible", "not_robust": "limit",
    # gradient and sampling methods, RobX
    "valid": "feasible", "not_valid": "limit", "round_limit": "limit", "line_search": "feasible",
    "training_point": "feasible", "no_stable_point": "not_found", "not_found": "not_found",
}

#: Solver names a caller may give (besides None): cvxpy's solvers of :mod:`explainopt.solvers`, and the choices.
SOLVER_CHOICES = ("auto", "commercial", "highs", "clarabel", "scip", "gurobi", "mosek", "ecos", "scs")


def status_of(detail: str) -> str:
    """The shared status (:data:`STATUSES`) of a method's own status `detail`.

    Examples
    --------
    >>> status_of("converged"), status_of("time_limit"), status_of("not_valid")
    ('optimal', 'limit', 'limit')
    """
    try:
        return STATUS_OF[detail]
    except KeyError:
        raise ValueError(f"unknown method status {detail!r}; known: {sorted(STATUS_OF)}") from None


# --------------------------------------------------------------------------- models

def classes(model) -> np.ndarray:
    """The model's class labels: ``model.classes_``, or ``[0, 1]`` for a network given as torch module,
    layers or interval network (class 1 iff its logit is positive)."""
    found = getattr(model, "classes_", None)
    return np.asarray([0, 1]) if found is None else np.asarray(found)


def _fitted(model) -> bool:
    from sklearn.base import BaseEstimator
    from sklearn.exceptions import NotFittedError
    from sklearn.utils.validation import check_is_fitted

    if not isinstance(model, BaseEstimator):  # a torch module, layers or an interval network: fitted by nature
        return True
    try:
        check_is_fitted(model)
    except NotFittedError:
        return False
    return True


def check_model(model) -> str:
    """The family (:data:`explainopt.encoders.FAMILIES`) of a fitted binary classifier the encoders
    support; TypeError for an unsupported model, ValueError for an unfitted or multi-class one.

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> check_model(LogisticRegression().fit([[0.0], [1.0]], [0, 1]))
    'linear'
    >>> check_model(LogisticRegression())
    Traceback (most recent call last):
    ...
    ValueError: model: LogisticRegression is not fitted: call fit(X, y) first
    """
    family = model_family(model)
    if not _fitted(model):
        raise ValueError(f"model: {type(model).__name__} is not fitted: call fit(X, y) first")
    if len(classes(model)) != 2:
        raise ValueError(f"model: {type(model).__name__} has {len(classes(model))} classes; only binary "
                         "classifiers are supported (fit a one-vs-rest model for the class of interest)")
    return family


def feature_names(model) -> list[str] | None:
    """The names the model was fitted with (``feature_names_in_``), or None."""
    names = getattr(model, "feature_names_in_", None)
    return None if names is None else [str(n) for n in names]


def n_features(model) -> int | None:
    """How many features the model takes (``n_features_in_``, or a network's first layer), or None."""
    n = getattr(model, "n_features_in_", None)
    if n is not None:
        return int(n)
    if model_family(model) in ("network", "interval-network"):
        return int(network_layers(model)[0][0].shape[1])
    return None


# --------------------------------------------------------------------------- vectors

def check_vector(value, name: str, n: int | None, *, names=None, finite: bool = True) -> np.ndarray:
    """`value` (array, list, pandas Series or one-row DataFrame) as a float vector of `n` entries.

    A Series or DataFrame is aligned by its labels with `names` (the model's feature names) where both
    exist; ValueError naming `name` for a wrong length, missing or extra labels, or (with `finite`) NaN
    or infinite entries.

    Examples
    --------
    >>> import pandas as pd
    >>> check_vector(pd.Series({"b": 2.0, "a": 1.0}), "x0", 2, names=["a", "b"])
    array([1., 2.])
    >>> check_vector([1.0, float("nan")], "x0", 2)
    Traceback (most recent call last):
    ...
    ValueError: x0 contains NaN or infinite values (at position 1)
    """
    if hasattr(value, "columns"):  # a DataFrame: one row
        if len(value) != 1:
            raise ValueError(f"{name} must be one row; got a DataFrame of {len(value)} rows")
        value = value.iloc[0]
    if hasattr(value, "index") and hasattr(value, "to_numpy"):  # a Series
        labels = [str(k) for k in value.index]
        if names is not None and not all(isinstance(k, numbers.Integral) for k in value.index):
            missing, extra = sorted(set(names) - set(labels)), sorted(set(labels) - set(names))
            if missing or extra:
                raise ValueError(f"{name} does not have the model's features: missing {missing}, unexpected {extra}")
            value = value.set_axis(labels)[list(names)]
        value = value.to_numpy()
    out = _numeric(value, name)
    if out.ndim == 2 and 1 in out.shape:
        out = out.ravel()
    if out.ndim != 1 or (n is not None and out.size != n):
        raise ValueError(f"{name} must have {n if n is not None else 'one entry per'} features, got shape {out.shape}")
    if finite and not np.isfinite(out).all():
        raise ValueError(f"{name} contains NaN or infinite values (at position {int(np.argmin(np.isfinite(out)))})")
    return out.copy()


def check_factual(x0, model=None, n: int | None = None) -> np.ndarray:
    """`x0` as a finite float vector of the model's features (``check_vector``, aligned by name).

    Examples
    --------
    >>> check_factual([0.5, 1.0], n=2)
    array([0.5, 1. ])
    """
    if model is not None:
        n = n_features(model) if n is None else n
        return check_vector(x0, "x0", n, names=feature_names(model))
    return check_vector(x0, "x0", n)


def _numeric(value, name: str) -> np.ndarray:
    """`value` as a float array; a ValueError naming `name` when it is not numeric."""
    try:
        return np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be numeric; got {type(value).__name__} {value!r:.80}") from None


def check_bound(value, name: str, n: int, *, names=None) -> np.ndarray:
    """A bound (scalar, array or Series; +-inf allowed, NaN not) as a vector of `n` entries."""
    if value is None:
        raise ValueError(f"{name} is None")
    if np.ndim(value) == 0 and not hasattr(value, "index"):
        value = float(_numeric(value, name))
        if np.isnan(value):
            raise ValueError(f"{name} is NaN")
        return np.full(n, value)
    out = check_vector(value, name, n, names=names, finite=False)
    if np.isnan(out).any():
        raise ValueError(f"{name} contains NaN (at position {int(np.argmax(np.isnan(out)))})")
    return out


def domain(x0, n: int, *, lower=None, upper=None, X=None, names=None, default=None,
           unbounded: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The feature box ``(lower, upper)`` of a counterfactual of the checked factual `x0`.

    From `lower`/`upper` (scalars, arrays or Series aligned by `names`), else from the data `X` (its
    column minima and maxima), else `default` (a pair, e.g. ``(0.0, 1.0)`` for a method written for
    min-max scaled data); ValueError naming the argument when neither is given (and the method needs a
    box), when ``lower > upper``, or when `x0` lies outside the box. With `unbounded`, None or +-inf
    leaves a side open.

    Examples
    --------
    >>> domain(np.array([0.5, 2.0]), 2, lower=0.0, upper=[1.0, 3.0])
    (array([0., 0.]), array([1., 3.]))
    >>> domain(np.array([0.5, 2.0]), 2, lower=0.0, upper=1.0)
    Traceback (most recent call last):
    ...
    ValueError: x0 lies outside the box: x0[1]=2 > upper[1]=1; pass bounds that contain it (lower=, upper= or X=)
    """
    defaulted = False
    if X is not None and lower is None and upper is None:
        data = check_matrix(X, "X", n, names=names)
        lower, upper = data.min(axis=0), data.max(axis=0)
    else:
        defaulted = (lower is None or upper is None) and default is not None and not unbounded
    if defaulted:
        lower = default[0] if lower is None else lower
        upper = default[1] if upper is None else upper
    if (lower is None or upper is None) and not unbounded:
        raise ValueError("pass the feature box: lower= and upper= (scalars, arrays or Series) or the data X=")
    lo = np.full(n, -np.inf) if lower is None else check_bound(lower, "lower", n, names=names)
    hi = np.full(n, np.inf) if upper is None else check_bound(upper, "upper", n, names=names)
    if (lo > hi).any():
        j = int(np.argmax(lo > hi))
        raise ValueError(f"lower[{j}]={lo[j]:g} exceeds upper[{j}]={hi[j]:g}")
    outside = (x0 < lo) | (x0 > hi)
    if outside.any():
        j = int(np.argmax(outside))
        side = f"< lower[{j}]={lo[j]:g}" if x0[j] < lo[j] else f"> upper[{j}]={hi[j]:g}"
        hint = (f"this method searches the box [{default[0]:g}, {default[1]:g}] of min-max scaled features: scale "
                "the data to it (e.g. sklearn's MinMaxScaler)" if defaulted else
                "pass bounds that contain it (lower=, upper= or X=)")
        raise ValueError(f"x0 lies outside the box: x0[{j}]={x0[j]:g} {side}; {hint}")
    return lo, hi


def check_matrix(X, name: str, n: int | None, *, names=None) -> np.ndarray:
    """Data `X` (array or DataFrame, columns aligned by `names`) as a finite float matrix of `n` columns."""
    if hasattr(X, "columns") and names is not None:
        labels = [str(c) for c in X.columns]
        missing = sorted(set(names) - set(labels))
        if missing:
            raise ValueError(f"{name} lacks the model's features {missing}")
        X = X.set_axis(labels, axis=1)[list(names)]
    out = _numeric(X, name)
    if out.ndim != 2 or (n is not None and out.shape[1] != n) or not len(out):
        raise ValueError(f"{name} must be a non-empty matrix of {n} columns, got shape {out.shape}")
    if not np.isfinite(out).all():
        raise ValueError(f"{name} contains NaN or infinite values")
    return out


def check_spec(spec, x0) -> None:
    """A FeatureSpec list for the factual `x0`: its length, and `x0` within each feature's bounds and of
    its kind (0/1 for binary and categorical, an integer for discrete)."""
    if len(spec) != len(x0):
        raise ValueError(f"spec has {len(spec)} features, x0 has {len(x0)}")
    for j, (f, v) in enumerate(zip(spec, x0)):
        if not f.lower <= v <= f.upper:
            raise ValueError(f"x0 lies outside the spec's box: x0[{j}] ({f.name}) = {v:g} not in "
                             f"[{f.lower:g}, {f.upper:g}]")
        if f.kind in ("binary", "categorical", "discrete") and v != round(v):
            raise ValueError(f"x0[{j}] ({f.name}) = {v:g} is not an integer, but the spec declares it {f.kind}"
                             + (" and fixed: no counterfactual can keep it" if f.actionability == "fixed" else ""))


# --------------------------------------------------------------------------- targets

def _label(value):
    return value.item() if isinstance(value, np.generic) else value


def target_index(model, target, x0) -> int:
    """The index into the model's classes (:func:`classes`) of the class a counterfactual of `x0` must
    have: None means the class other than the model's prediction at `x0`; otherwise `target` must be
    one of the labels (any type, as ``model.classes_`` holds them).

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> model = LogisticRegression().fit([[0.0], [1.0]], ["no", "yes"])
    >>> target_index(model, None, np.array([0.0])), target_index(model, "no", np.array([0.0]))
    (1, 0)
    """
    labels = classes(model)
    if target is None:
        return 1 - int(model_predict(model, x0)[0])
    matches = [i for i, label in enumerate(labels) if _equal(label, target)]
    if not matches:
        raise ValueError(f"target={target!r} is not one of the model's classes {[_label(c) for c in labels]}; "
                         "target=None gives the class other than the model's prediction")
    return matches[0]


def _equal(label, target) -> bool:
    if isinstance(target, (bool, np.bool_)) != isinstance(label, (bool, np.bool_)):
        return False
    try:
        return bool(label == target)
    except (TypeError, ValueError):
        return False


def target_label(model, index: int):
    """The label (a Python scalar where NumPy holds one) of the class with `index`."""
    return _label(classes(model)[index])


# --------------------------------------------------------------------------- solvers and seeds

def check_solver(solver=None, *, time_limit=None, mip_gap=None) -> None:
    """The solver's name (None, ``auto``, ``commercial`` or one of :data:`SOLVER_CHOICES`), a positive
    `time_limit` and a non-negative `mip_gap` (each None for the default); ValueError naming the argument.

    Examples
    --------
    >>> check_solver("highs", time_limit=10, mip_gap=1e-4)
    >>> check_solver("cplex")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: solver='cplex' is not known; expected None or one of ('auto', 'commercial', 'highs', ...)
    """
    if solver is not None and (not isinstance(solver, str) or solver.lower() not in SOLVER_CHOICES):
        raise ValueError(f"solver={solver!r} is not known; expected None or one of {SOLVER_CHOICES}")
    for name, value, ok in (("time_limit", time_limit, lambda v: v > 0), ("mip_gap", mip_gap, lambda v: v >= 0)):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or np.isnan(value) or not ok(value):
            raise ValueError(f"{name} must be a {'positive' if name == 'time_limit' else 'non-negative'} number "
                             f"(or None), got {value!r}")


def check_seed(seed, name: str = "random_state") -> None:
    """A seed: None, a non-negative integer or a NumPy Generator; ValueError naming `name` otherwise.

    Examples
    --------
    >>> check_seed(0)
    >>> check_seed("x", "seed")
    Traceback (most recent call last):
    ...
    ValueError: seed must be None, a non-negative integer or a numpy Generator, got 'x'
    """
    if seed is None or isinstance(seed, np.random.Generator):
        return
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValueError(f"{name} must be None, a non-negative integer or a numpy Generator, got {seed!r}")


def check_positive(value, name: str, *, strict: bool = True) -> float:
    """A finite positive (non-negative without `strict`) number; ValueError naming `name` otherwise."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not np.isfinite(value) or (
            value <= 0 if strict else value < 0):
        raise ValueError(f"{name} must be a {'positive' if strict else 'non-negative'} number, got {value!r}")
    return float(value)


# --------------------------------------------------------------------------- one call per method

@dataclass
class Inputs:
    """A counterfactual method's checked inputs: the model's family, the factual as a float vector in the
    model's feature order, the target's class index, and the feature box (None where the method takes
    none)."""

    family: str
    x0: np.ndarray
    target: int
    lower: np.ndarray | None
    upper: np.ndarray | None


def counterfactual_inputs(model, x0, *, target=None, lower=None, upper=None, X=None, box: str = "required",
                          default=None, solver=None, time_limit=None, mip_gap=None, families=None) -> Inputs:
    """Check a counterfactual method's inputs once, before any work: the model (:func:`check_model`;
    `families`, when given, the families the method handles), `x0` (:func:`check_factual`), the solver
    and its options (:func:`check_solver`), the feature box (:func:`domain`; `box` ``"required"``,
    ``"optional"`` for methods whose domain may be unbounded, or ``"none"`` for methods that take none)
    and the target (:func:`target_index`).

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> model = LogisticRegression().fit([[0.0, 0.0], [1.0, 1.0]], ["no", "yes"])
    >>> checked = counterfactual_inputs(model, [0.1, 0.2], lower=0.0, upper=1.0)
    >>> checked.family, checked.target, checked.upper
    ('linear', 1, array([1., 1.]))
    """
    family = check_model(model)
    if families is not None and family not in families:
        raise TypeError(f"model: this method supports the model families {families}; a {type(model).__name__} is "
                        f"of family {family!r}" + (" (a ReLU MLPClassifier or torch nn.Sequential)" if families == (
                            "network",) else ""))
    check_solver(solver, time_limit=time_limit, mip_gap=mip_gap)
    x0 = check_factual(x0, model)
    lo = hi = None
    if box != "none":
        lo, hi = domain(x0, x0.size, lower=lower, upper=upper, X=X, names=feature_names(model), default=default,
                        unbounded=box == "optional")
    return Inputs(family, x0, target_index(model, target, x0), lo, hi)


def class_one_factual(model, x0, *, method: str, **inputs) -> np.ndarray:
    """The factual checked by :func:`counterfactual_inputs` (with `inputs`) for a method written for class 1
    only (the favourable class of its paper, named `method` in errors): a target other than class index 1
    is refused with a ValueError saying so, never the factual returned as its own counterfactual."""
    checked = counterfactual_inputs(model, x0, **inputs)
    if checked.target != 1:
        raise ValueError(f"{method} searches counterfactuals of class 1 (the second of the model's classes, the "
                         "favourable one of its paper); here the target is class 0 (x0 is predicted as class 1, "
                         "or target asked for class 0)")
    return checked.x0


__all__ = ["Inputs", "STATUSES", "STATUS_OF", "SOLVER_CHOICES", "check_bound", "check_factual", "check_matrix",
           "check_model", "check_positive", "check_seed", "check_solver", "check_spec", "check_vector", "classes",
           "counterfactual_inputs", "domain", "feature_names", "n_features", "class_one_factual", "status_of",
           "target_index", "target_label"]
