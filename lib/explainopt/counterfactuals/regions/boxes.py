"""Tree models as leaf boxes: every leaf of a decision tree or tree ensemble is the box
``{x : lo < x <= hi}`` of the splits on its path (scikit-learn sends x left iff ``x <= t``), read once
from :func:`explainopt.encoders.tree_ensemble`; and how deep a point of the uncertainty set can lie
inside a box (eqs. 31-35 in closed form)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...encoders import Tree, TreeEnsemble, tree_ensemble


@dataclass
class TreeBoxes:
    """Every tree of a model as leaf boxes: leaf ``i`` is ``{x : lo_i < x <= hi_i}`` (sklearn: left iff
    ``x <= t``), with value ``v_i``; the model's score and class are those of `ensemble`
    (:class:`explainopt.encoders.TreeEnsemble`: ``constant + scale * sum_trees v_leaf(x)``, class 1 iff
    above its threshold)."""

    lo: list[np.ndarray]
    hi: list[np.ndarray]
    value: list[np.ndarray]
    ensemble: TreeEnsemble

    def adverse(self, score, target: int) -> np.ndarray:
        """Whether a score means the class other than `target`."""
        positive = self.ensemble.positive(score)
        return positive if target == 0 else ~positive

    def score(self, X) -> np.ndarray:
        """The model's score evaluated from the boxes (used by tests against the model)."""
        X = np.atleast_2d(np.asarray(X, dtype=float))
        total = np.zeros(len(X))
        for lo, hi, v in zip(self.lo, self.hi, self.value):
            inside = np.all((X[:, None, :] > lo[None]) & (X[:, None, :] <= hi[None]), axis=2)
            total += inside.astype(float) @ v
        return self.ensemble.from_leaf_sum(total)

    def adverse_leaves(self, target: int) -> np.ndarray:
        """For a single decision tree: which of its leaves predict the class other than `target`."""
        return self.adverse(self.ensemble.from_leaf_sum(self.value[0]), target)


def _leaf_boxes(tree: Tree, n_features: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Leaf boxes and values of one tree by depth-first traversal."""
    los, his, vals = [], [], []
    stack = [(0, np.full(n_features, -np.inf), np.full(n_features, np.inf))]
    while stack:
        node, lo, hi = stack.pop()
        left, right = tree.left[node], tree.right[node]
        if left == -1:
            los.append(lo), his.append(hi), vals.append(tree.leaf_value[node])
            continue
        f, t = tree.feature[node], tree.threshold[node]
        hi_left, lo_right = hi.copy(), lo.copy()
        hi_left[f] = min(hi[f], t)
        lo_right[f] = max(lo[f], t)
        stack.append((left, lo, hi_left))
        stack.append((right, lo_right, hi))
    return np.array(los), np.array(his), np.array(vals, dtype=float)


def tree_boxes(model) -> TreeBoxes:
    """The leaf boxes of a decision tree or tree ensemble, read by :func:`explainopt.encoders.tree_ensemble`."""
    ensemble = tree_ensemble(model)
    parts = [_leaf_boxes(tree, int(model.n_features_in_)) for tree in ensemble.trees]
    return TreeBoxes([p[0] for p in parts], [p[1] for p in parts], [p[2] for p in parts], ensemble)


def leaf_depths(x, lo, hi, *, rho, norm) -> np.ndarray:
    """For each box: the largest depth alpha <= rho such that some y with ||y - x|| <= rho satisfies
    lo + alpha <= y <= hi - alpha (eqs. 31-35 in closed form); -inf when the box is out of reach."""
    half = np.where(np.isfinite(hi - lo), (hi - lo) / 2, np.inf).min(axis=1)
    cap = np.minimum(half, rho)

    def gap(alpha):  # per feature: distance from x to [lo + alpha, hi - alpha]
        a = np.asarray(alpha)[:, None]
        return np.maximum(0, np.maximum((lo + a) - x, x - (hi - a)))

    if norm == "linf":
        reach = np.minimum(x + rho - lo, hi - x + rho).min(axis=1)
        depth = np.minimum(reach, cap)
        return np.where(depth >= 0, depth, -np.inf)
    reachable = (np.nan_to_num(gap(np.zeros(len(lo))), posinf=np.inf) ** 2).sum(axis=1) <= rho ** 2
    low, high = np.zeros(len(lo)), np.where(reachable, cap, 0.0)
    for _ in range(60):  # bisection on the monotone reach condition
        mid = (low + high) / 2
        ok = (gap(mid) ** 2).sum(axis=1) <= rho ** 2
        low, high = np.where(ok, mid, low), np.where(ok, high, mid)
    return np.where(reachable, low, -np.inf)


def deepest_points(x, lo, hi, depth, order) -> list:
    """The scenarios ``s`` putting ``x + s`` at `depth` inside each box, for the boxes in `order`."""
    return [np.clip(x, lo[j] + depth[j], hi[j] - depth[j]) - x for j in order]
