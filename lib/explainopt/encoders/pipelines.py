"""scikit-learn Pipelines: affine preprocessing before a supported model, encoded exactly in the input space.

A ``Pipeline`` whose steps before the model are ``StandardScaler``, ``MinMaxScaler`` (``clip=False``),
``MaxAbsScaler``, ``OneHotEncoder`` on raw numeric columns, ``'passthrough'``, or a ``ColumnTransformer``
(or nested Pipeline) of those, maps the user's features ``x`` column by column to the model's input
``z``: every column of ``z`` is ``a * x_i + c`` (scalers, passthrough) or ``a * [x_i == v] + c`` (a
one-hot column of category ``v``, then scaled). :func:`~explainopt.encoders.column_map` reads that map from the fitted
steps. The encoder (``encode(pipeline, x, ...)``) keeps the decision variable ``x`` in the user's space and encodes the
model on ``z = A x + B u + c``, where ``u`` holds one binary per category of each one-hot encoded
column (``sum u = 1``, ``x_i = categories @ u``), so that ``x_i`` takes one of its categories and every
indicator is exact. The model's big-M constants come from the bounds of ``z`` over the box of ``x``.
Distances, bounds and the counterfactual are all in the space of ``x``.

Anything else in a Pipeline (a non-affine transformer, an imputer, a clipping scaler) is refused with
a TypeError naming the step. After a solve, :meth:`PipelineEncoding.repair` sets each one-hot encoded
column to the category its binaries chose and snaps a tree model's input onto the side of every split
the solver chose (:func:`~explainopt.encoders.snap_to_chosen_leaves`, in the model's input
space, mapped back through the column's scale).
"""

from __future__ import annotations

from dataclasses import dataclass

import cvxpy as cp
import numpy as np
import pandas as pd
import scipy.sparse as sp
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer, MaxAbsScaler, MinMaxScaler, OneHotEncoder, StandardScaler

from .base import Encoding, as_bounds, check_features, encode, model_output, model_predict, register
from .trees import snap_to_chosen_leaves

#: The preprocessing steps a Pipeline may hold before its model.
SUPPORTED_STEPS = ("StandardScaler", "MinMaxScaler(clip=False)", "MaxAbsScaler", "OneHotEncoder (numeric categories)",
                   "ColumnTransformer", "Pipeline", "'passthrough'")


@dataclass(frozen=True)
class ColumnMap:
    """Column ``j`` of the preprocessed data is ``scale[j] * g_j(x[source[j]]) + offset[j]``, with
    ``g_j`` the identity where ``category[j]`` is NaN and the indicator ``[x == category[j]]`` otherwise.
    categories: the categories of every one-hot encoded input column (x takes one of them there)."""

    source: np.ndarray
    scale: np.ndarray
    offset: np.ndarray
    category: np.ndarray
    categories: dict

    @classmethod
    def identity(cls, n_features: int) -> "ColumnMap":
        ones = np.ones(n_features)
        return cls(np.arange(n_features), ones, 0 * ones, np.full(n_features, np.nan), {})

    @property
    def raw(self) -> np.ndarray:
        """Whether each column is still an input column itself."""
        return np.isnan(self.category) & (self.scale == 1) & (self.offset == 0)

    def affine(self, a, c) -> "ColumnMap":
        """Every column scaled by `a` and shifted by `c` (arrays over the columns)."""
        a, c = np.broadcast_to(np.asarray(a, float), self.scale.shape), np.asarray(c, float)
        return ColumnMap(self.source, a * self.scale, a * self.offset + c, self.category, self.categories)

    def select(self, columns) -> "ColumnMap":
        columns = np.asarray(columns, dtype=int)
        return ColumnMap(self.source[columns], self.scale[columns], self.offset[columns], self.category[columns],
                         self.categories)

    @staticmethod
    def concatenate(maps: list["ColumnMap"], n_sources: int) -> "ColumnMap":
        if not maps:
            return ColumnMap.identity(n_sources).select([])
        categories = {}
        for m in maps:
            _merge_categories(categories, m.categories)
        return ColumnMap(*(np.concatenate([getattr(m, f) for m in maps]) for f in ("source", "scale", "offset",
                                                                                   "category")), categories)


def _merge_categories(into: dict, new: dict) -> None:
    for i, cats in new.items():
        if i in into and not np.array_equal(into[i], cats):
            raise TypeError(f"input column {i} is one-hot encoded twice with different categories")
        into[i] = cats


def _step_name(step) -> str:
    return type(step).__name__ if not isinstance(step, str) else repr(step)


def _unsupported(name: str, step, why: str = "") -> TypeError:
    return TypeError(f"unsupported step {name!r} ({_step_name(step)}) in the Pipeline{why}: only "
                     f"{', '.join(SUPPORTED_STEPS)} before the model encode exactly")


def _check_step_fitted(name: str, step) -> None:
    if not hasattr(step, "n_features_in_"):
        raise ValueError(f"step {name!r} ({_step_name(step)}) of the Pipeline is not fitted: call fit(X, y) first")


def _one_hot(name: str, encoder: OneHotEncoder, columns: ColumnMap) -> ColumnMap:
    if not columns.raw.all():
        raise _unsupported(name, encoder, ": a OneHotEncoder must see raw input columns (place it before any scaler)")
    if getattr(encoder, "_infrequent_enabled", False):
        raise _unsupported(name, encoder, " (infrequent categories: min_frequency/max_categories)")
    drop = encoder.drop_idx_ if encoder.drop_idx_ is not None else [None] * len(encoder.categories_)
    maps, categories = [], {}
    for k, (cats, dropped) in enumerate(zip(encoder.categories_, drop)):
        if not np.issubdtype(np.asarray(cats).dtype, np.number) or np.isnan(np.asarray(cats, float)).any():
            raise _unsupported(name, encoder, f": its column {k} has categories {list(cats)!r}; encode them as "
                                              "numbers (no NaN) so that the counterfactual can take them")
        cats = np.asarray(cats, float)
        kept = [c for c in range(cats.size) if dropped is None or c != dropped]
        source = int(columns.source[k])
        categories[source] = cats
        maps.append(ColumnMap(np.full(len(kept), source), np.ones(len(kept)), np.zeros(len(kept)), cats[kept], {}))
    result = ColumnMap.concatenate(maps, 0)
    _merge_categories(categories, columns.categories)
    return ColumnMap(result.source, result.scale, result.offset, result.category, categories)


def _column_indices(transformer: ColumnTransformer, columns) -> np.ndarray:
    """The input column indices a ColumnTransformer's (fitted) column selection names."""
    if isinstance(columns, slice):
        return np.arange(transformer.n_features_in_)[columns]
    columns = np.atleast_1d(np.asarray(columns))
    if columns.dtype == bool:
        return np.flatnonzero(columns)
    if columns.size and not np.issubdtype(columns.dtype, np.integer):
        names = list(transformer.feature_names_in_)
        return np.array([names.index(c) for c in columns], dtype=int)
    return columns.astype(int)


def _column_transformer(name: str, transformer: ColumnTransformer, columns: ColumnMap) -> ColumnMap:
    pieces = []
    for part, step, selected in transformer.transformers_:
        out = transformer.output_indices_[part]
        if isinstance(step, str) and step == "drop" or out.stop == out.start:
            continue
        piece = _apply(f"{name}/{part}", step, columns.select(_column_indices(transformer, selected)))
        if len(piece.source) != out.stop - out.start:
            raise _unsupported(f"{name}/{part}", step, ": its output width differs from the ColumnTransformer's")
        pieces.append((out.start, piece))
    return ColumnMap.concatenate([piece for _, piece in sorted(pieces, key=lambda p: p[0])], len(columns.source))


def _apply(name: str, step, columns: ColumnMap) -> ColumnMap:
    """`columns` followed by one preprocessing step."""
    if step is None or isinstance(step, str) and step == "passthrough":
        return columns
    if isinstance(step, Pipeline):
        for sub_name, sub_step in step.steps:
            columns = _apply(f"{name}/{sub_name}", sub_step, columns)
        return columns
    if isinstance(step, FunctionTransformer) and step.func is None and step.inverse_func is None:
        return columns  # how ColumnTransformer stores remainder="passthrough"
    if not isinstance(step, (StandardScaler, MinMaxScaler, MaxAbsScaler, OneHotEncoder, ColumnTransformer)):
        raise _unsupported(name, step)
    _check_step_fitted(name, step)
    if isinstance(step, StandardScaler):
        a = 1.0 / step.scale_ if step.scale_ is not None else 1.0
        return columns.affine(a, -step.mean_ * a if step.mean_ is not None else 0.0)
    if isinstance(step, MinMaxScaler):
        if step.clip:
            raise _unsupported(name, step, " (clip=True is not affine)")
        return columns.affine(step.scale_, step.min_)
    if isinstance(step, MaxAbsScaler):
        return columns.affine(1.0 / step.scale_, 0.0)
    if isinstance(step, OneHotEncoder):
        return _one_hot(name, step, columns)
    return _column_transformer(name, step, columns)


def column_map(pipeline: Pipeline) -> ColumnMap:
    """The preprocessing of a fitted `pipeline` (every step but the last) as a
    :class:`~explainopt.encoders.pipelines.ColumnMap`;
    TypeError naming the first step that is not affine preprocessing.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from explainopt.encoders import column_map
    >>> X, y = np.array([[0.0, 10.0], [1.0, 30.0], [2.0, 10.0], [3.0, 30.0]]), [0, 0, 1, 1]
    >>> columns = column_map(make_pipeline(StandardScaler(), LogisticRegression()).fit(X, y))
    >>> columns.source, np.round(columns.scale, 4), np.round(columns.offset, 4)
    (array([0, 1]), array([0.8944, 0.1   ]), array([-1.3416, -2.    ]))
    """
    if not hasattr(pipeline, "n_features_in_"):
        raise ValueError("the Pipeline is not fitted: call fit(X, y) before encoding it")
    columns = ColumnMap.identity(int(pipeline.n_features_in_))
    for name, step in pipeline.steps[:-1]:
        columns = _apply(name, step, columns)
    return columns


def preprocess(pipeline: Pipeline, X) -> np.ndarray:
    """The pipeline's own preprocessing (every step but the last) of the rows of `X`, as a dense array;
    rows are given the pipeline's feature names where it was fitted on a DataFrame.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import MinMaxScaler
    >>> from explainopt.encoders import preprocess
    >>> pipeline = make_pipeline(MinMaxScaler(), LogisticRegression()).fit([[0.0, 10.0], [4.0, 30.0]], [0, 1])
    >>> preprocess(pipeline, [1.0, 20.0])
    array([[0.25, 0.5 ]])
    """
    X = np.atleast_2d(np.asarray(X, dtype=float))
    names = getattr(pipeline, "feature_names_in_", None)
    Z = pipeline[:-1].transform(pd.DataFrame(X, columns=names) if names is not None else X)
    return np.asarray(Z.toarray() if sp.issparse(Z) else Z, dtype=float)


def _pipeline_output(pipeline, X):
    return model_output(pipeline[-1], preprocess(pipeline, X))


def _pipeline_predict(pipeline, X):
    return model_predict(pipeline[-1], preprocess(pipeline, X))


def _category_bounds(cats: np.ndarray, lo: float, hi: float) -> tuple[np.ndarray, np.ndarray]:
    """Bounds of each category's indicator when x lies in [lo, hi]."""
    possible = (cats >= lo) & (cats <= hi)
    return (possible & (possible.sum() == 1)).astype(float), possible.astype(float)


@dataclass
class PipelineEncoding(Encoding):
    """The encoding of a Pipeline: ``input`` is x in the user's space; ``variables["model"]`` holds the
    encoding of the pipeline's model on the preprocessed ``variables["preprocessed"]`` and
    ``variables["categories"]`` the binaries of each one-hot encoded column (``{column: (categories,
    binaries)}``)."""

    columns: ColumnMap | None = None

    def repair(self, x) -> tuple[np.ndarray, int]:
        """`x` (a solver's point) with every one-hot encoded column set to the category its binaries
        chose, and a tree model's input snapped onto the side of every split the solver chose (mapped
        back to x through the column's scale); returns (x, number of features moved)."""
        x = np.array(x, dtype=float).ravel()
        moved = 0
        for i, (cats, binaries) in self.variables["categories"].items():
            chosen = float(cats[int(np.argmax(binaries.value))])
            moved += int(x[i] != chosen)
            x[i] = chosen
        z = preprocess(self.model, x)[0]
        snapped, _ = snap_to_chosen_leaves(z, self.variables["model"])
        for j in np.flatnonzero((snapped != z) & np.isnan(self.columns.category)):
            x[self.columns.source[j]] = (snapped[j] - self.columns.offset[j]) / self.columns.scale[j]
            moved += 1
        return x, moved


@register(Pipeline, family="pipeline", output=_pipeline_output, predict=_pipeline_predict)
def encode_pipeline(pipeline, x, *, lower=None, upper=None, **options) -> PipelineEncoding:
    """A Pipeline of affine preprocessing and a supported model (module docstring): the model's own
    encoding and output, with x in the user's space. `options` go to the model's encoder, except
    ``fixed``/``ball``, which would name the preprocessed space (fix features by ``lower == upper``).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from explainopt.counterfactuals import nearest_counterfactual
    >>> X, y = np.array([[0.0, 10.0], [1.0, 30.0], [2.0, 10.0], [3.0, 30.0]]), [0, 0, 1, 1]
    >>> pipeline = make_pipeline(StandardScaler(), LogisticRegression()).fit(X, y)
    >>> result = nearest_counterfactual(pipeline, X[0], lower=X.min(axis=0), upper=X.max(axis=0), target=1)
    >>> result.status, result.valid, pipeline.predict([result.x])
    ('optimal', True, array([1]))
    >>> bool(np.isclose(result.distance, np.abs(result.x - X[0]).sum()))  # in the user's units
    True
    """
    refused = sorted({"fixed", "ball"} & set(options))
    if refused:
        raise ValueError(f"{', '.join(refused)} cannot be given for a Pipeline: they would refer to the "
                         "preprocessed features; bound the user's features with lower/upper instead")
    columns = column_map(pipeline)
    n = int(pipeline.n_features_in_)
    check_features(x, n, pipeline)
    bounded = lower is not None and upper is not None
    lo, hi = as_bounds(lower, upper, n) if bounded else (np.full(n, -np.inf), np.full(n, np.inf))
    cons = [x >= lo, x <= hi] if bounded else []
    binaries, position = {}, {}
    for i, cats in columns.categories.items():
        u = cp.Variable(cats.size, boolean=True, name=f"category{i}")
        binaries[i] = (cats, u)
        cons += [cp.sum(u) == 1, x[i] == cats @ u]
        position.update({(i, v): len(position) + k for k, v in enumerate(cats)})
    m = len(columns.source)
    identity = np.flatnonzero(np.isnan(columns.category))
    indicator = np.flatnonzero(~np.isnan(columns.category))
    A = sp.csr_matrix((columns.scale[identity], (identity, columns.source[identity])), shape=(m, n))
    z = A @ x + columns.offset
    g_lo, g_hi = lo[columns.source], hi[columns.source]  # bounds of g_j: x_i's, or its indicator's
    if indicator.size:
        u_all = cp.hstack([u for _, u in binaries.values()])
        cols = [position[(int(columns.source[j]), columns.category[j])] for j in indicator]
        B = sp.csr_matrix((columns.scale[indicator], (indicator, cols)), shape=(m, len(position)))
        z = z + B @ u_all
        for j in indicator:
            cats = columns.categories[int(columns.source[j])]
            k = int(np.flatnonzero(cats == columns.category[j])[0])
            bounds = _category_bounds(cats, lo[columns.source[j]], hi[columns.source[j]])
            g_lo[j], g_hi[j] = bounds[0][k], bounds[1][k]
    z_bounds = {}
    if bounded or not identity.size:
        ends = np.stack([columns.scale * g_lo + columns.offset, columns.scale * g_hi + columns.offset])
        z_bounds = dict(lower=ends.min(axis=0), upper=ends.max(axis=0))
    inner = encode(pipeline[-1], z, **z_bounds, **options)
    return PipelineEncoding(pipeline, x, inner.output, cons + inner.constraints, inner.threshold,
                            inclusive=inner.inclusive, output_bounds=inner.output_bounds,
                            variables={"model": inner, "preprocessed": z, "categories": binaries}, columns=columns)
