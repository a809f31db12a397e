"""Decision trees and tree ensembles as mixed-integer constraints.

Default: the split-variable formulation of Mišić (2020), "Optimization of tree ensembles", Oper. Res.
68(5), eqs. (2a)-(2h): one binary ``s_{f,k}`` per distinct (feature f, threshold t_k) pair across the
ensemble (``s_{f,k} = 1`` iff ``x_f <= t_k``), the ordering chain ``s_{f,k} <= s_{f,k+1}`` (2f),
continuous leaf weights ``y`` summing to one per tree (2b), and per split node
``sum(left leaves) <= s`` (2c), ``sum(right leaves) <= 1 - s`` (2d). Option ``formulation="leaf"``:
one binary per leaf with big-M bounds for every split on its path (for comparison).

scikit-learn compares ``float32(x) <= t`` (t float64). Both branches get a margin ``eps`` (left:
``x <= t - eps``; right: ``x >= t + eps``), ``eps = max(1e-5, 4 * float32 spacing at t)`` capped at a
quarter of the gap to the neighbouring thresholds of the same feature. Features fixed by ``fixed=``
are folded into constants and the leaves they make unreachable are dropped.

Outputs (see :mod:`explainopt.encoders.base`): DecisionTree / RandomForest / ExtraTrees: the mean leaf
fraction of class 1 (``predict_proba[:, 1]``), class 1 iff ``> 0.5`` (argmax takes class 0 on ties);
GradientBoosting: the raw ``decision_function`` including the init estimator, class 1 iff ``>= 0``;
IsolationForest: the mean path length ``E[h(x)]`` (affine in the leaf weights); the sample is an
inlier (``predict == 1``) iff ``E[h(x)] >= threshold``, the monotone image of sklearn's rule
``score_samples(x) >= offset_`` with ``score_samples = -2^(-E[h]/c(psi))``.
"""

from __future__ import annotations

from dataclasses import dataclass

import cvxpy as cp
import numpy as np
import scipy.sparse as sp
from sklearn.ensemble import (
    ExtraTreesClassifier,
    GradientBoostingClassifier,
    IsolationForest,
    RandomForestClassifier,
)
from sklearn.tree import DecisionTreeClassifier

from .base import Encoding, as_bounds, check_binary, check_features, check_fitted, predicted_index, register

FORMULATIONS = ("split", "leaf")


@dataclass
class _Tree:
    """One fitted tree with its leaf values and weight in the ensemble output.

    features: maps the tree's own feature indices to model input columns (IsolationForest subsets).
    """

    tree: object
    leaf_value: np.ndarray  # value per node (only leaves used)
    features: np.ndarray


@dataclass
class _Structure:
    """The reachable part of an ensemble after folding fixed features.

    leaves: (tree index, node id, value) of each reachable leaf.
    splits: (tree index, feature, threshold, left leaf ids, right leaf ids) per active split node,
        where leaf ids index ``leaves``.
    paths: per leaf, list of (feature, threshold, goes_left) along its path (active splits only).
    """

    leaves: list
    splits: list
    paths: list


def _class_one_fraction(tree) -> np.ndarray:
    value = tree.value[:, 0, :]
    return value[:, 1] / value.sum(axis=1)


# ------------------------------------------------------------------------------- structure walk


def _fixed_values(fixed, n: int):
    """``fixed`` as a dict feature -> value: accepts a dict or a length-n array with NaN for free."""
    if fixed is None:
        return {}
    if isinstance(fixed, dict):
        return {int(k): float(v) for k, v in fixed.items()}
    values = np.asarray(fixed, dtype=float)
    if values.shape != (n,):
        raise ValueError(f"fixed must be a dict or an array of {n} values (NaN = free), got shape {values.shape}")
    return {j: float(v) for j, v in enumerate(values) if not np.isnan(v)}


def _walk(trees: list[_Tree], fixed: dict, lo: np.ndarray, hi: np.ndarray) -> _Structure:
    """Reachable leaves and active splits; fixed features and the input box decide their splits."""
    leaves, splits, paths = [], [], []
    for ti, item in enumerate(trees):
        t = item.tree
        left, right = t.children_left, t.children_right

        def visit(node, path):
            if left[node] == -1:
                leaves.append((ti, node, float(item.leaf_value[node])))
                paths.append(path)
                return [len(leaves) - 1]
            f, thr = int(item.features[t.feature[node]]), float(t.threshold[node])
            if f in fixed:
                go_left = np.float32(fixed[f]) <= thr
                return visit(left[node] if go_left else right[node], path)
            if hi[f] <= thr:  # the whole box lies left (float32(x) <= x <= hi <= thr)
                return visit(left[node], path)
            if lo[f] > thr and np.float32(lo[f]) > thr:
                return visit(right[node], path)
            ids_left = visit(left[node], path + [(f, thr, True)])
            ids_right = visit(right[node], path + [(f, thr, False)])
            splits.append((ti, f, thr, ids_left, ids_right))
            return ids_left + ids_right

        visit(0, [])
    return _Structure(leaves, splits, paths)


def _margins(thresholds: np.ndarray) -> np.ndarray:
    """Two-sided margin per sorted threshold of one feature (module docstring)."""
    spacing = np.abs(np.spacing(thresholds.astype(np.float32))).astype(float)
    eps = np.maximum(1e-5, 4 * spacing)
    gaps = np.diff(thresholds)
    cap = np.full(thresholds.shape, np.inf)
    if gaps.size:
        cap[:-1] = np.minimum(cap[:-1], gaps / 4)
        cap[1:] = np.minimum(cap[1:], gaps / 4)
    return np.minimum(eps, cap)


# ------------------------------------------------------------------------------- formulations


def _split_formulation(x, st: _Structure, lo, hi, n_trees: int):
    """Mišić (2020) eqs. (2b)-(2f) with the margin linking of x to the split binaries."""
    n_leaves = len(st.leaves)
    y = cp.Variable(n_leaves, nonneg=True, name="leaf_weight")
    tree_of = np.array([leaf[0] for leaf in st.leaves])
    cons = [sp.csr_matrix((np.ones(n_leaves), (tree_of, np.arange(n_leaves))), shape=(n_trees, n_leaves)) @ y == 1]
    keys = sorted({(f, thr) for _, f, thr, _, _ in st.splits})
    variables = {"leaf_weight": y}
    if not keys:
        return y, cons, variables
    index = {key: k for k, key in enumerate(keys)}
    s = cp.Variable(len(keys), boolean=True, name="split")
    variables["split"] = s
    feat = np.array([f for f, _ in keys])
    thr = np.array([t for _, t in keys])
    eps = np.concatenate([_margins(thr[feat == f]) for f in np.unique(feat)])  # keys sorted by (f, t)
    # (2c)/(2d): rows per split node
    rows_l, cols_l, rows_r, cols_r, node_key = [], [], [], [], []
    for r, (_, f, t, ids_left, ids_right) in enumerate(st.splits):
        rows_l += [r] * len(ids_left)
        cols_l += ids_left
        rows_r += [r] * len(ids_right)
        cols_r += ids_right
        node_key.append(index[(f, t)])
    m = len(st.splits)
    A_left = sp.csr_matrix((np.ones(len(cols_l)), (rows_l, cols_l)), shape=(m, n_leaves))
    A_right = sp.csr_matrix((np.ones(len(cols_r)), (rows_r, cols_r)), shape=(m, n_leaves))
    E = sp.csr_matrix((np.ones(m), (np.arange(m), node_key)), shape=(m, len(keys)))
    cons += [A_left @ y <= E @ s, A_right @ y <= 1 - E @ s]
    # (2f) ordering chain within a feature
    same = np.flatnonzero(feat[:-1] == feat[1:])
    if same.size:
        k = np.arange(same.size)
        D = sp.csr_matrix(
            (np.r_[np.ones(k.size), -np.ones(k.size)], (np.r_[k, k], np.r_[same, same + 1])),
            shape=(k.size, len(keys)),
        )
        cons.append(D @ s <= 0)
    # linking with margins: s = 1 -> x_f <= t - eps ; s = 0 -> x_f >= t + eps
    xf = x[feat]
    cons += [
        xf <= (thr - eps) + cp.multiply(hi[feat] - thr + eps, 1 - s),
        xf >= (thr + eps) - cp.multiply(thr + eps - lo[feat], s),
    ]
    return y, cons, variables


def _leaf_formulation(x, st: _Structure, lo, hi, n_trees: int):
    """Leaf-indicator big-M: z_leaf binary, one leaf per tree, each split on the path enforced by big-M."""
    n_leaves = len(st.leaves)
    z = cp.Variable(n_leaves, boolean=True, name="leaf")
    tree_of = np.array([leaf[0] for leaf in st.leaves])
    cons = [sp.csr_matrix((np.ones(n_leaves), (tree_of, np.arange(n_leaves))), shape=(n_trees, n_leaves)) @ z == 1]
    # margins from the same per-feature threshold sets as the split formulation
    keys = sorted({(f, thr) for _, f, thr, _, _ in st.splits})
    if keys:
        feat_k = np.array([f for f, _ in keys])
        thr_k = np.array([t for _, t in keys])
        eps_k = np.concatenate([_margins(thr_k[feat_k == f]) for f in np.unique(feat_k)])
        eps_of = {key: e for key, e in zip(keys, eps_k)}
        rows = [(leaf, f, t, go_left) for leaf, path in enumerate(st.paths) for f, t, go_left in path]
        leaf_i = np.array([r[0] for r in rows])
        feat = np.array([r[1] for r in rows])
        thr = np.array([r[2] for r in rows])
        left = np.array([r[3] for r in rows])
        eps = np.array([eps_of[(r[1], r[2])] for r in rows])
        P = sp.csr_matrix((np.ones(len(rows)), (np.arange(len(rows)), leaf_i)), shape=(len(rows), n_leaves))
        zl = P @ z
        L, R = np.flatnonzero(left), np.flatnonzero(~left)
        if L.size:
            cons.append(x[feat[L]] <= thr[L] - eps[L] + cp.multiply(hi[feat[L]] - thr[L] + eps[L], 1 - zl[L]))
        if R.size:
            cons.append(x[feat[R]] >= thr[R] + eps[R] - cp.multiply(thr[R] + eps[R] - lo[feat[R]], 1 - zl[R]))
    return z, cons, {"leaf": z}


def _encode_trees(model, x, trees, *, lower, upper, constant, scale, threshold, inclusive, formulation, fixed):
    if formulation not in FORMULATIONS:
        raise ValueError(f"formulation must be one of {FORMULATIONS}, got {formulation!r}")
    n = int(model.n_features_in_)
    check_features(x, n, model)
    lo, hi = as_bounds(lower, upper, n)
    fixed_values = _fixed_values(fixed, n)
    st = _walk(trees, fixed_values, lo, hi)
    build = _split_formulation if formulation == "split" else _leaf_formulation
    w, cons, variables = build(x, st, lo, hi, len(trees))
    values = np.array([leaf[2] for leaf in st.leaves])
    output = constant + scale * (values @ w)
    cons = [x >= lo, x <= hi] + cons
    for j, v in fixed_values.items():
        cons.append(x[j] == v)
    # output bounds: per tree min/max over reachable leaves
    tree_of = np.array([leaf[0] for leaf in st.leaves])
    mins = np.array([values[tree_of == t].min() for t in range(len(trees))])
    maxs = np.array([values[tree_of == t].max() for t in range(len(trees))])
    bounds = (constant + scale * mins.sum(), constant + scale * maxs.sum())
    variables["leaves"] = [(leaf[0], leaf[1]) for leaf in st.leaves]
    return Encoding(model, x, output, cons, threshold, inclusive=inclusive,
                    output_bounds=(min(bounds), max(bounds)), variables=variables)


# ------------------------------------------------------------------------------------ encoders


@register(DecisionTreeClassifier, output=lambda m, X: m.predict_proba(X)[:, 1], predict=predicted_index)
def encode_decision_tree(model, x, *, lower=None, upper=None, formulation="split", fixed=None) -> Encoding:
    """A decision tree: output = class-1 fraction of the active leaf (``predict_proba[:, 1]``)."""
    check_fitted(model, "tree_")
    check_binary(model)
    t = model.tree_
    trees = [_Tree(t, _class_one_fraction(t), np.arange(model.n_features_in_))]
    return _encode_trees(model, x, trees, lower=lower, upper=upper, constant=0.0, scale=1.0, threshold=0.5,
                         inclusive=False, formulation=formulation, fixed=fixed)


@register(RandomForestClassifier, ExtraTreesClassifier, output=lambda m, X: m.predict_proba(X)[:, 1],
          predict=predicted_index)
def encode_forest(model, x, *, lower=None, upper=None, formulation="split", fixed=None) -> Encoding:
    """A soft-voting forest: output = mean over trees of the leaf class-1 fraction (``predict_proba``)."""
    check_fitted(model, "estimators_")
    check_binary(model)
    n = model.n_features_in_
    trees = [_Tree(e.tree_, _class_one_fraction(e.tree_), np.arange(n)) for e in model.estimators_]
    return _encode_trees(model, x, trees, lower=lower, upper=upper, constant=0.0, scale=1.0 / len(trees),
                         threshold=0.5, inclusive=False, formulation=formulation, fixed=fixed)


def _gbm_init_offset(model) -> float:
    """The init estimator's raw score: decision_function minus the trees' contribution (at x = 0)."""
    X = np.zeros((1, model.n_features_in_))
    trees = sum(e.predict(X)[0] for e in model.estimators_[:, 0])
    return float(model.decision_function(X)[0] - model.learning_rate * trees)


@register(GradientBoostingClassifier, output=lambda m, X: m.decision_function(X), predict=predicted_index)
def encode_gradient_boosting(model, x, *, lower=None, upper=None, formulation="split", fixed=None) -> Encoding:
    """Binary gradient boosting: output = init + learning_rate * sum of leaf values (``decision_function``)."""
    check_fitted(model, "estimators_")
    check_binary(model)
    n = model.n_features_in_
    trees = [_Tree(e.tree_, e.tree_.value[:, 0, 0], np.arange(n)) for e in model.estimators_[:, 0]]
    return _encode_trees(model, x, trees, lower=lower, upper=upper, constant=_gbm_init_offset(model),
                         scale=model.learning_rate, threshold=0.0, inclusive=True, formulation=formulation,
                         fixed=fixed)


def _average_path_length(n_samples: np.ndarray) -> np.ndarray:
    """c(n) of Liu et al. (2008), as sklearn.ensemble._iforest defines it."""
    n = np.asarray(n_samples, dtype=float)
    out = np.zeros_like(n)
    out[n == 2] = 1.0
    big = n > 2
    out[big] = 2.0 * (np.log(n[big] - 1.0) + np.euler_gamma) - 2.0 * (n[big] - 1.0) / n[big]
    return out


def mean_path_length(model, X) -> np.ndarray:
    """E[h(x)] recovered from sklearn's ``score_samples`` (the encoded output of an IsolationForest)."""
    c = float(_average_path_length(np.array([model.max_samples_]))[0])
    return -c * np.log2(-model.score_samples(X))


@register(IsolationForest, output=mean_path_length, predict=lambda m, X: (m.predict(X) == 1).astype(int))
def encode_isolation_forest(model, x, *, lower=None, upper=None, formulation="split", fixed=None) -> Encoding:
    """An isolation forest: output = mean path length E[h(x)]; inlier iff output >= threshold.

    sklearn: ``score_samples = -2^(-E[h]/c(psi))`` and ``predict == 1`` iff ``score_samples >= offset_``,
    i.e. iff ``E[h] >= -c(psi) * log2(-offset_)``. Use ``enc.predicts(1)`` to require an inlier.
    """
    check_fitted(model, "estimators_")
    trees = []
    for e, feats in zip(model.estimators_, model.estimators_features_):
        t = e.tree_
        depth = np.zeros(t.node_count)
        for node in range(t.node_count):  # children have larger ids than parents
            for child in (t.children_left[node], t.children_right[node]):
                if child != -1:
                    depth[child] = depth[node] + 1
        trees.append(_Tree(t, depth + _average_path_length(t.n_node_samples), np.asarray(feats)))
    c = float(_average_path_length(np.array([model.max_samples_]))[0])
    threshold = -c * np.log2(-model.offset_)
    return _encode_trees(model, x, trees, lower=lower, upper=upper, constant=0.0, scale=1.0 / len(trees),
                         threshold=float(threshold), inclusive=True, formulation=formulation, fixed=fixed)


def isolation_score(model, mean_path_length):
    """sklearn's ``score_samples`` from the encoded output E[h(x)] of :func:`encode_isolation_forest`."""
    c = float(_average_path_length(np.array([model.max_samples_]))[0])
    return -(2.0 ** (-np.asarray(mean_path_length, dtype=float) / c))
