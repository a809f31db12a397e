"""Decision trees and tree ensembles as mixed-integer constraints.

Default: the split-variable formulation of Mišić (2020), "Optimization of tree ensembles", Oper. Res.
68(5), eqs. (2a)-(2h): one binary ``s_{f,k}`` per distinct (feature f, threshold t_k) pair across the
ensemble (``s_{f,k} = 1`` iff ``x_f <= t_k``), the ordering chain ``s_{f,k} <= s_{f,k+1}`` (2f),
continuous leaf weights ``y`` summing to one per tree (2b), and per split node
``sum(left leaves) <= s`` (2c), ``sum(right leaves) <= 1 - s`` (2d). Option ``formulation="leaf"``:
one binary per leaf with big-M bounds for every split on its path (for comparison).

scikit-learn compares ``float32(x) <= t`` (t float64). Reading a model (:func:`tree_ensemble`) moves
every threshold to the middle of its float32 cell (:func:`float32_centred`): the decisions are exactly
the model's own, and two thresholds of one feature closer than a float32 spacing (Spambase has pairs
1e-10 apart) become one. Both branches get a margin ``eps`` (left: ``x <= t - eps``; right:
``x >= t + eps``), ``eps = max(1e-5, 4 * float32 spacing at t)`` capped at a quarter of the gap to the
neighbouring thresholds of the same feature. Features fixed by ``fixed=`` are folded into constants and
the leaves they make unreachable are dropped. A quarter gap can still be below a MILP solver's
feasibility tolerance (about 1e-7): :func:`snap_to_chosen_leaves` moves a feature the solver left a hair
on the wrong side of a split it chose back into the chosen cell; every counterfactual method calls it.

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


def float32_centred(thresholds) -> np.ndarray:
    """Each threshold moved to the middle of its float32 cell, with exactly the same decisions.

    scikit-learn sends x left iff ``float32(x) <= t``. Every ``t`` in ``[a, b)``, with ``a`` the largest
    float32 value ``<= t`` and ``b`` the next float32 value, gives the same decisions, so ``t' = (a + b) / 2``
    does too, and it lies half a spacing away from every float32 input. Why: two thresholds of one
    feature closer than a float32 spacing otherwise leave the encoder a margin (a quarter of their gap)
    too small for float32 rounding, and a MILP can pick a point no float32 input reaches; after centring,
    distinct thresholds are at least one spacing apart. Centring is idempotent.
    """
    t = np.asarray(thresholds, dtype=float)
    a = t.astype(np.float32)
    a = np.where(a.astype(np.float64) > t, np.nextafter(a, np.float32(-np.inf)), a)
    b = np.nextafter(a, np.float32(np.inf))
    return (a.astype(np.float64) + b.astype(np.float64)) / 2.0


@dataclass
class Tree:
    """One fitted tree of a model, in the model's input columns.

    Node ``i`` is a leaf iff ``left[i] == -1``; otherwise it sends x left iff ``float32(x[feature[i]]) <=
    threshold[i]``. feature: model input column per node (the tree's own indices mapped through
    IsolationForest's feature subsets); threshold: the model's thresholds centred in their float32 cells
    (``float32_centred``: the same decisions, half a float32 spacing from any input); leaf_value: the
    value per node that the model's output sums (leaves only).

    Examples
    --------
    >>> from sklearn.tree import DecisionTreeClassifier
    >>> from explainopt.encoders import tree_ensemble
    >>> tree = DecisionTreeClassifier(random_state=0).fit([[0.0], [1.0], [2.0], [3.0]], [0, 0, 1, 1])
    >>> read = tree_ensemble(tree).trees[0]
    >>> read.apply([[0.5], [2.5]]), read.path(int(read.apply([[2.5]])[0]))
    (array([1, 2]), [(0, 1.5000000596046448, False)])
    """

    left: np.ndarray
    right: np.ndarray
    feature: np.ndarray
    threshold: np.ndarray
    leaf_value: np.ndarray

    @classmethod
    def read(cls, tree, leaf_value, features=None) -> "Tree":
        """From a scikit-learn ``tree_`` object; `features` maps its feature indices to input columns."""
        left = np.asarray(tree.children_left)
        feature = np.asarray(tree.feature)
        if features is not None:
            feature = np.where(feature >= 0, np.asarray(features)[np.maximum(feature, 0)], -1)
        threshold = np.asarray(tree.threshold, dtype=float).copy()
        split = left != -1
        threshold[split] = float32_centred(threshold[split])
        return cls(left, np.asarray(tree.children_right), feature, threshold, np.asarray(leaf_value, dtype=float))

    def apply(self, X) -> np.ndarray:
        """The leaf each row of `X` reaches, by scikit-learn's rule ``float32(x) <= threshold``."""
        X = np.asarray(X, dtype=np.float32).astype(float)
        node = np.zeros(len(X), dtype=int)
        inner = self.left[node] != -1
        while inner.any():
            rows = np.flatnonzero(inner)
            at = node[rows]
            go_left = X[rows, self.feature[at]] <= self.threshold[at]
            node[rows] = np.where(go_left, self.left[at], self.right[at])
            inner = self.left[node] != -1
        return node

    def path(self, leaf: int) -> list[tuple[int, float, bool]]:
        """The splits from the root to `leaf`: (feature, threshold, goes left) per split node."""
        parent = np.full(len(self.left), -1)
        split = np.flatnonzero(self.left != -1)
        parent[self.left[split]] = split
        parent[self.right[split]] = split
        steps, node = [], int(leaf)
        while parent[node] != -1:
            up = int(parent[node])
            steps.append((int(self.feature[up]), float(self.threshold[up]), bool(self.left[up] == node)))
            node = up
        return steps[::-1]


@dataclass
class TreeEnsemble:
    """A fitted tree model read once: its trees and how their leaf values make the model's output.

    ``output(x) = constant + scale * sum over trees of leaf_value[leaf of x]``; the model predicts class
    1 (inlier) iff ``output > threshold`` (``>=`` when ``inclusive``). Every consumer of a tree model's
    structure (the encoder below, the robust-region adversarial problems) reads it from here.

    Examples
    --------
    >>> from sklearn.ensemble import GradientBoostingClassifier
    >>> from explainopt.encoders import tree_ensemble
    >>> X, y = [[0.0], [1.0], [2.0], [3.0]], [0, 0, 1, 1]
    >>> model = GradientBoostingClassifier(n_estimators=5, random_state=0).fit(X, y)
    >>> ensemble = tree_ensemble(model)
    >>> ensemble.threshold, ensemble.inclusive, bool(abs(ensemble.output(X) - model.decision_function(X)).max() < 1e-12)
    (0.0, True, True)
    """

    trees: list[Tree]
    constant: float
    scale: float
    threshold: float
    inclusive: bool

    def output(self, X) -> np.ndarray:
        """The model's output at the rows of `X`, computed from the trees (equal to the model's own)."""
        X = np.atleast_2d(np.asarray(X, dtype=float))
        return self.from_leaf_sum(sum(tree.leaf_value[tree.apply(X)] for tree in self.trees))

    def from_leaf_sum(self, total):
        """The output given the sum over the trees of their leaves' values (numbers or a cvxpy expression)."""
        return self.constant + self.scale * total

    def positive(self, output) -> np.ndarray:
        """Whether outputs mean class 1 (inlier): ``output > threshold`` (``>=`` when ``inclusive``)."""
        output = np.asarray(output, dtype=float)
        return output >= self.threshold if self.inclusive else output > self.threshold


@dataclass
class TreeStructure:
    """The reachable part of an ensemble after folding fixed features (:func:`walk`).

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


def walk(trees: list[Tree], fixed: dict, lo: np.ndarray, hi: np.ndarray) -> TreeStructure:
    """The reachable leaves and active splits of `trees` (:attr:`TreeEnsemble.trees`): the features in
    `fixed` (feature -> value) and the input box [lo, hi] decide the splits they can (sklearn's
    ``float32(x) <= t``); every other split stays active. The structure every tree formulation reads
    (the encoder here, the robust-region master problem)."""
    leaves, splits, paths = [], [], []
    for ti, tree in enumerate(trees):
        left, right = tree.left, tree.right

        def visit(node, path):
            if left[node] == -1:
                leaves.append((ti, node, float(tree.leaf_value[node])))
                paths.append(path)
                return [len(leaves) - 1]
            f, thr = int(tree.feature[node]), float(tree.threshold[node])
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
    return TreeStructure(leaves, splits, paths)


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


def split_keys(st: TreeStructure):
    """The distinct (feature, threshold) pairs of the active splits, sorted, with their features,
    thresholds and two-sided margins (module docstring) as arrays: (keys, feat, thr, eps)."""
    keys = sorted({(f, thr) for _, f, thr, _, _ in st.splits})
    feat = np.array([f for f, _ in keys], dtype=int)
    thr = np.array([t for _, t in keys], dtype=float)
    eps = np.concatenate([_margins(thr[feat == f]) for f in np.unique(feat)]) if keys else thr  # sorted by (f, t)
    return keys, feat, thr, eps


@dataclass
class SplitRows:
    """Mišić's (2020) rows (2b)-(2d) of a :class:`TreeStructure` as sparse blocks over its leaf weights
    ``y`` (one per reachable leaf) and split binaries ``s`` (one per key of :func:`split_keys`), for any
    consumer (the cvxpy encoder here, the robust-region master's :class:`~explainopt.solvers.MatrixMILP`):

    * (2b) ``one_leaf @ y == 1``: the leaf weights of each tree sum to one (row t: tree t);
    * (2c) ``left @ y <= s[node_key]`` and (2d) ``right @ y <= 1 - s[node_key]``, one row per active
      split node (in ``st.splits`` order): the leaves below its left (right) branch.

    keys, feat, thr, eps: the split keys with their features, thresholds and margins (:func:`split_keys`).
    """

    one_leaf: sp.csr_matrix
    left: sp.csr_matrix
    right: sp.csr_matrix
    node_key: np.ndarray
    keys: list
    feat: np.ndarray
    thr: np.ndarray
    eps: np.ndarray

    def node(self, k: int) -> tuple[np.ndarray, np.ndarray, int]:
        """Split node k: (its left leaves, its right leaves, its key index)."""
        lp, rp = self.left.indptr, self.right.indptr
        return self.left.indices[lp[k]:lp[k + 1]], self.right.indices[rp[k]:rp[k + 1]], int(self.node_key[k])


def split_rows(st: TreeStructure, n_trees: int) -> SplitRows:
    """The rows (2b)-(2d) of Mišić's split formulation for `st` (:class:`SplitRows`)."""
    n_leaves = len(st.leaves)
    tree_of = np.array([leaf[0] for leaf in st.leaves])
    one_leaf = sp.csr_matrix((np.ones(n_leaves), (tree_of, np.arange(n_leaves))), shape=(n_trees, n_leaves))
    keys, feat, thr, eps = split_keys(st)
    index = {key: k for k, key in enumerate(keys)}
    rows_l, cols_l, rows_r, cols_r, node_key = [], [], [], [], []
    for r, (_, f, t, ids_left, ids_right) in enumerate(st.splits):
        rows_l += [r] * len(ids_left)
        cols_l += ids_left
        rows_r += [r] * len(ids_right)
        cols_r += ids_right
        node_key.append(index[(f, t)])
    m = len(st.splits)
    left = sp.csr_matrix((np.ones(len(cols_l)), (rows_l, cols_l)), shape=(m, n_leaves))
    right = sp.csr_matrix((np.ones(len(cols_r)), (rows_r, cols_r)), shape=(m, n_leaves))
    return SplitRows(one_leaf, left, right, np.array(node_key, dtype=int), keys, feat, thr, eps)


def _split_formulation(x, st: TreeStructure, lo, hi, n_trees: int):
    """Mišić (2020) eqs. (2b)-(2f) with the margin linking of x to the split binaries."""
    n_leaves = len(st.leaves)
    y = cp.Variable(n_leaves, nonneg=True, name="leaf_weight")
    rows = split_rows(st, n_trees)
    cons = [rows.one_leaf @ y == 1]
    keys, feat, thr, eps = rows.keys, rows.feat, rows.thr, rows.eps
    variables = {"leaf_weight": y}
    if not keys:
        return y, cons, variables
    s = cp.Variable(len(keys), boolean=True, name="split")
    variables["split"] = s
    variables["split_keys"] = (feat, thr, eps)
    m = len(st.splits)
    E = sp.csr_matrix((np.ones(m), (np.arange(m), rows.node_key)), shape=(m, len(keys)))
    cons += [rows.left @ y <= E @ s, rows.right @ y <= 1 - E @ s]
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


def _leaf_formulation(x, st: TreeStructure, lo, hi, n_trees: int):
    """Leaf-indicator big-M: z_leaf binary, one leaf per tree, each split on the path enforced by big-M."""
    n_leaves = len(st.leaves)
    z = cp.Variable(n_leaves, boolean=True, name="leaf")
    cons = [split_rows(st, n_trees).one_leaf @ z == 1]
    keys, _, _, eps_k = split_keys(st)  # the same margins as the split formulation
    if keys:
        eps_of = dict(zip(keys, eps_k))
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


def _encode_trees(model, x, *, lower, upper, formulation, fixed) -> Encoding:
    ensemble = tree_ensemble(model)
    trees, constant, scale = ensemble.trees, ensemble.constant, ensemble.scale
    if formulation not in FORMULATIONS:
        raise ValueError(f"formulation must be one of {FORMULATIONS}, got {formulation!r}")
    n = int(model.n_features_in_)
    check_features(x, n, model)
    lo, hi = as_bounds(lower, upper, n)
    fixed_values = _fixed_values(fixed, n)
    st = walk(trees, fixed_values, lo, hi)
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
    return Encoding(model, x, output, cons, ensemble.threshold, inclusive=ensemble.inclusive,
                    output_bounds=(min(bounds), max(bounds)), variables=variables)


# ------------------------------------------------------------------------------------ reading models


def tree_ensemble(model) -> TreeEnsemble:
    """Read a fitted DecisionTree, RandomForest, ExtraTrees, GradientBoosting (binary) or IsolationForest.

    Raises TypeError for another model type and ValueError for an unfitted or multi-class one.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.ensemble import RandomForestClassifier
    >>> from explainopt.encoders import tree_ensemble
    >>> X, y = np.array([[0.0], [1.0], [2.0], [3.0]]), [0, 0, 1, 1]
    >>> forest = RandomForestClassifier(n_estimators=3, random_state=0).fit(X, y)
    >>> ensemble = tree_ensemble(forest)
    >>> len(ensemble.trees), np.allclose(ensemble.output(X), forest.predict_proba(X)[:, 1])
    (3, True)
    """
    if isinstance(model, DecisionTreeClassifier):
        check_fitted(model, "tree_")
        check_binary(model)
        t = model.tree_
        return TreeEnsemble([Tree.read(t, _class_one_fraction(t))], 0.0, 1.0, 0.5, False)
    if isinstance(model, (RandomForestClassifier, ExtraTreesClassifier)):
        check_fitted(model, "estimators_")
        check_binary(model)
        trees = [Tree.read(e.tree_, _class_one_fraction(e.tree_)) for e in model.estimators_]
        return TreeEnsemble(trees, 0.0, 1.0 / len(trees), 0.5, False)
    if isinstance(model, GradientBoostingClassifier):
        check_fitted(model, "estimators_")
        check_binary(model)
        trees = [Tree.read(e.tree_, e.tree_.value[:, 0, 0]) for e in model.estimators_[:, 0]]
        return TreeEnsemble(trees, gradient_boosting_offset(model), model.learning_rate, 0.0, True)
    if isinstance(model, IsolationForest):
        check_fitted(model, "estimators_")
        trees = [Tree.read(e.tree_, _path_lengths(e.tree_), feats)
                 for e, feats in zip(model.estimators_, model.estimators_features_)]
        c = float(_average_path_length(np.array([model.max_samples_]))[0])
        return TreeEnsemble(trees, 0.0, 1.0 / len(trees), float(-c * np.log2(-model.offset_)), True)
    raise TypeError(f"not a tree model: {type(model).__name__}")


def gradient_boosting_offset(model) -> float:
    """The init estimator's raw score: decision_function minus the trees' contribution (at x = 0).

    Examples
    --------
    >>> from sklearn.ensemble import GradientBoostingClassifier
    >>> from explainopt.encoders import gradient_boosting_offset
    >>> X, y = [[0.0], [1.0], [2.0], [3.0]], [0, 0, 1, 1]
    >>> model = GradientBoostingClassifier(n_estimators=5, random_state=0).fit(X, y)
    >>> round(gradient_boosting_offset(model), 6)  # log-odds of the class prior, 1/2
    0.0
    """
    X = np.zeros((1, model.n_features_in_))
    trees = sum(e.predict(X)[0] for e in model.estimators_[:, 0])
    return float(model.decision_function(X)[0] - model.learning_rate * trees)


def _average_path_length(n_samples: np.ndarray) -> np.ndarray:
    """c(n) of Liu et al. (2008), as sklearn.ensemble._iforest defines it."""
    n = np.asarray(n_samples, dtype=float)
    out = np.zeros_like(n)
    out[n == 2] = 1.0
    big = n > 2
    out[big] = 2.0 * (np.log(n[big] - 1.0) + np.euler_gamma) - 2.0 * (n[big] - 1.0) / n[big]
    return out


def _path_lengths(t) -> np.ndarray:
    """Per node of an isolation tree: its depth plus c(samples in it), the path length of a leaf."""
    depth = np.zeros(t.node_count)
    for node in range(t.node_count):  # children have larger ids than parents
        for child in (t.children_left[node], t.children_right[node]):
            if child != -1:
                depth[child] = depth[node] + 1
    return depth + _average_path_length(t.n_node_samples)


def mean_path_length(model, X) -> np.ndarray:
    """E[h(x)] recovered from sklearn's ``score_samples`` (the encoded output of an IsolationForest)."""
    c = float(_average_path_length(np.array([model.max_samples_]))[0])
    return -c * np.log2(-model.score_samples(X))


def cell_distance_bound(encoding, x0):
    """Lower bounds on ``|x_f - x0_f|`` that are linear in the split binaries, or None without them.

    Returns (features, bound): a cvxpy expression per feature with active splits. With the thresholds
    ``t_1 < ... < t_K`` of feature f, their margins, ``b_k = t_k + eps_k`` and ``a_k = t_k - eps_k``,
    ``s_k = 0`` puts x right of ``b_k`` (at least ``R_k = max(0, b_k - x0_f)`` away) and ``s_k = 1`` left
    of ``a_k`` (at least ``L_k = max(0, x0_f - a_k)`` away). The bound
    ``sum_k (R_k - R_{k-1}) (1 - s_k) + sum_k (L_k - L_{k+1}) s_k`` (``R_0 = L_{K+1} = 0``) telescopes, on
    every chain (2f) of binaries, to the distance from x0_f to the cell the binaries choose, so it is
    valid (never above ``|x_f - x0_f|``) and exact at integer points, while the big-M linking lets a
    fractional s move x by nothing (the incremental cost formulation of OCEAN, Parmentier & Vidal 2021).
    """
    keys = encoding.variables.get("split_keys")
    if keys is None:
        return None
    feat, thr, eps = keys
    x0 = np.asarray(x0, dtype=float)
    features = np.unique(feat)
    rows, cols, coef, constant = [], [], [], np.zeros(len(features))
    for r, f in enumerate(features):
        idx = np.flatnonzero(feat == f)  # sorted by threshold (split_keys)
        right = np.maximum(0.0, thr[idx] + eps[idx] - x0[f])
        left = np.maximum(0.0, x0[f] - (thr[idx] - eps[idx]))
        d_right, d_left = np.diff(right, prepend=0.0), left - np.append(left[1:], 0.0)
        constant[r] = d_right.sum()
        rows += [r] * idx.size
        cols += list(idx)
        coef += list(d_left - d_right)
    G = sp.csr_matrix((coef, (rows, cols)), shape=(len(features), len(feat)))
    return features, constant + G @ encoding.variables["split"]


# ------------------------------------------------------------------------------------ after the solve


def chosen_leaves(encoding) -> list[tuple[int, int]] | None:
    """(tree index, leaf id) of every leaf a solved tree encoding chose; None for another encoding or
    before a solve."""
    weights = encoding.variables.get("leaf_weight", encoding.variables.get("leaf"))
    if "leaves" not in encoding.variables or weights is None or weights.value is None:
        return None
    return [leaf for leaf, w in zip(encoding.variables["leaves"], np.ravel(weights.value)) if w >= 0.5]


def _chosen_cell(encoding, n_features: int) -> tuple[np.ndarray, np.ndarray] | None:
    """Bounds (lo, hi) with ``lo < float32(x) <= hi`` iff x reaches every leaf the solve chose."""
    leaves = chosen_leaves(encoding)
    if leaves is None:
        return None
    trees = tree_ensemble(encoding.model).trees
    lo, hi = np.full(n_features, -np.inf), np.full(n_features, np.inf)
    for ti, leaf in leaves:
        for f, t, goes_left in trees[ti].path(leaf):
            if goes_left:
                hi[f] = min(hi[f], t)
            else:
                lo[f] = max(lo[f], t)
    return lo, hi


def snap_to_chosen_leaves(x, encodings) -> tuple[np.ndarray, int]:
    """Move each feature a solver left on the wrong float32 side of a split it chose back into the
    chosen cell (the nearest float32 value inside it); returns (x, number of features moved).

    `encodings`: the solved encodings of models whose input is x (one or a list); those of models without
    trees are skipped, and a Pipeline's encoding repairs x itself
    (:meth:`~explainopt.encoders.pipelines.PipelineEncoding.repair`). Why: a split margin can be as small as
    a quarter of the gap between two thresholds of one feature, below the solver's feasibility tolerance
    (about 1e-7 to 1e-6), so the solver's point can reach other leaves than those it chose (seen on
    Spambase: score 0.6465 for a constraint 0.6501). The moved point reaches the chosen leaves, so the
    model's own output there is the encoded output. A feature is moved by at most the solver's tolerance.

    Examples
    --------
    >>> import cvxpy as cp
    >>> from sklearn.tree import DecisionTreeClassifier
    >>> from explainopt import solvers
    >>> from explainopt.encoders import encode, snap_to_chosen_leaves
    >>> tree = DecisionTreeClassifier(random_state=0).fit([[0.0], [1.0], [2.0], [3.0]], [0, 0, 1, 1])
    >>> x = cp.Variable(1)
    >>> enc = encode(tree, x, lower=0, upper=3)
    >>> problem = cp.Problem(cp.Minimize(cp.abs(x[0] - 1.0)), enc.constraints + enc.predicts(1))
    >>> solvers.solve(problem, solver="highs").status
    'optimal'
    >>> snapped, moved = snap_to_chosen_leaves(x.value, enc)
    >>> tree.predict([snapped]), moved
    (array([1]), 0)
    """
    x = np.array(x, dtype=float).ravel()
    moved = 0
    for encoding in [encodings] if hasattr(encodings, "variables") else encodings:
        repair = getattr(encoding, "repair", None)  # a Pipeline's: snaps in its model's input space
        if repair is not None:
            x, n_moved = repair(x)
            moved += n_moved
            continue
        cell = _chosen_cell(encoding, len(x))
        if cell is None:
            continue
        lo, hi = cell
        x32 = x.astype(np.float32).astype(np.float64)
        for j in np.flatnonzero((x32 <= lo) | (x32 > hi)):
            if x32[j] <= lo[j]:  # the smallest float32 above lo
                v = np.float32(lo[j])
                if float(v) <= lo[j]:
                    v = np.nextafter(v, np.float32(np.inf))
            else:  # the largest float32 at most hi
                v = np.float32(hi[j])
                if float(v) > hi[j]:
                    v = np.nextafter(v, np.float32(-np.inf))
            if lo[j] < float(v) <= hi[j]:
                x[j] = float(v)
                moved += 1
    return x, moved


# ------------------------------------------------------------------------------------ encoders


def _class_one_probability(model, X):
    return model.predict_proba(X)[:, 1]


def _decision_function(model, X):
    return model.decision_function(X)


def _inlier(model, X):
    return (model.predict(X) == 1).astype(int)


@register(DecisionTreeClassifier, family="tree", output=_class_one_probability, predict=predicted_index)
@register(RandomForestClassifier, ExtraTreesClassifier, family="ensemble", output=_class_one_probability,
          predict=predicted_index)
@register(GradientBoostingClassifier, family="ensemble", output=_decision_function, predict=predicted_index)
@register(IsolationForest, family="anomaly", output=mean_path_length, predict=_inlier)
def encode_tree_model(model, x, *, lower=None, upper=None, formulation="split", fixed=None) -> Encoding:
    """A tree model (see :func:`tree_ensemble` and the module docstring for each type's output).

    DecisionTree / RandomForest / ExtraTrees: the class-1 probability (``predict_proba[:, 1]``);
    GradientBoosting: ``decision_function`` (init + learning_rate * sum of leaf values); IsolationForest:
    the mean path length E[h(x)], an inlier iff ``output >= threshold`` (``enc.predicts(1)``).
    """
    return _encode_trees(model, x, lower=lower, upper=upper, formulation=formulation, fixed=fixed)
