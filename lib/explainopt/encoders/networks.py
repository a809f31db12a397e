"""ReLU networks, and interval networks (Jiang et al.), as mixed-integer constraints.

A network is read into a list of affine layers ``(W, b)`` (``W`` of shape ``(out, in)``) with a ReLU
after every layer but the last, whose single output is the logit (class 1 iff logit > 0).

Each hidden neuron with pre-activation bounds ``l < 0 < u`` gets one binary ``sigma`` and the big-M
constraints ``h >= z, h >= 0, h <= z - l (1 - sigma), h <= u sigma``; neurons provably always off
(``u <= 0``) or on (``l >= 0``) need none. Bounds come from interval bound propagation over the input
box, optionally tightened layer by layer with the LP relaxation (``tighten="lp"``, :func:`lp_bounds`,
computed once per network and box by :func:`network_bounds`): cvxpy has no indicator constraints, so
every big-M needs a derived bound. Tighter bounds leave the feasible set, hence the optimum, unchanged.
A smaller domain gives tighter bounds: the l1 ball around a factual whose radius is the distance of a
counterfactual known (:func:`counterfactual_ball`: points of segments to training points, improved by
an LP per linear region) contains the nearest counterfactual, so bounds over the box and that ball
(``encode_network(..., tighten="lp", ball=...)``, the ball joining the constraints) keep its optimum.

Interval network (Jiang et al. 2023, Definitions 5-6 of PROPLACE): every weight and bias shifted within
``[theta - delta, theta + delta]``. For non-negative inputs every layer's input is non-negative, so
the interval lower (upper) bound of a neuron is attained at the weights' lower (upper) ends, choosing
the lower or upper bound of each input by the sign of that end. The lower/upper bounds of all neurons
therefore form an ordinary ReLU network of twice the width, encoded exactly as above. Its forward pass
gives the logit's bounds (:meth:`IntervalNetwork.bounds`), whose lower end is the Delta-robustness test
of PROPLACE (:func:`delta_robust`, Definition 7); :func:`propagate_bounds` with ``delta`` gives the same
bounds for every neuron at a point (:meth:`IntervalNetwork.layer_bounds`).
"""

from __future__ import annotations

import copy
import hashlib
import operator
from collections import OrderedDict
from dataclasses import dataclass

import cvxpy as cp
import numpy as np
import highspy
import scipy.sparse as sp
from sklearn.neural_network import MLPClassifier

from ..solvers import one_sided
from .base import (Encoding, as_bounds, check_binary, check_features, check_fitted, predicted_index, register,
                   type_names)

#: torch's Sequential, registered by name: torch (an extra, ``pip install explainopt[torch]``) is imported
#: only where a torch model is used.
TORCH_SEQUENTIAL = "torch.nn.modules.container.Sequential"


def _torch():
    try:
        import torch
    except ImportError:
        raise ImportError("torch networks need torch: pip install 'explainopt[torch]'") from None
    return torch


def is_torch_sequential(model) -> bool:
    """Whether `model` is a torch ``nn.Sequential`` (without importing torch)."""
    return TORCH_SEQUENTIAL in type_names(model)

TIGHTENING = (None, "lp")


# ------------------------------------------------------------------------------ reading networks


def _mlp_layers(model: MLPClassifier) -> list[tuple[np.ndarray, np.ndarray]]:
    check_fitted(model, "coefs_")
    check_binary(model)
    if model.activation != "relu":
        raise ValueError(f"only ReLU networks are supported; this MLPClassifier uses activation={model.activation!r}")
    return [(np.asarray(W, float).T, np.asarray(b, float)) for W, b in zip(model.coefs_, model.intercepts_)]


def _torch_layers(model) -> list[tuple[np.ndarray, np.ndarray]]:
    nn = _torch().nn
    last = len(model) - 1
    for i, m in enumerate(model):  # an activation other than ReLU would be dropped from the encoding: refuse it
        if not isinstance(m, (nn.Linear, nn.ReLU, nn.Identity, nn.Flatten)) and not (
                i == last and isinstance(m, (nn.Sigmoid, nn.Softmax))):
            raise ValueError(f"model: unsupported {type(m).__name__} at position {i} of the nn.Sequential; "
                             "expected nn.Sequential(Linear, ReLU, ..., Linear[, Sigmoid or Softmax])")
    modules = [m for m in model if isinstance(m, (nn.Linear, nn.ReLU))]
    kinds = ["Linear" if isinstance(m, nn.Linear) else "ReLU" for m in modules]
    expected = ["Linear" if i % 2 == 0 else "ReLU" for i in range(len(modules))]
    if kinds != expected or kinds[-1] != "Linear":
        raise ValueError(f"expected nn.Sequential(Linear, ReLU, ..., Linear[, Sigmoid]); got {kinds}")
    layers = [(m.weight.detach().double().numpy().copy(),
               (m.bias.detach().double().numpy().copy() if m.bias is not None else np.zeros(m.out_features)))
              for m in modules if isinstance(m, nn.Linear)]
    W, b = layers[-1]
    if W.shape[0] == 2:  # two logits: class 1 iff logit_1 > logit_0 (argmax takes class 0 on ties)
        layers[-1] = (W[1:] - W[:1], b[1:] - b[:1])
    elif W.shape[0] != 1:
        raise ValueError(f"the last Linear layer has {W.shape[0]} outputs; binary classifiers need 1 or 2")
    return layers


def network_layers(model) -> list[tuple[np.ndarray, np.ndarray]]:
    """The affine layers ``[(W, b), ...]`` of an MLPClassifier (ReLU), a torch ``nn.Sequential``, an
    :class:`IntervalNetwork` (its doubled network), or such a list itself.

    Examples
    --------
    >>> from sklearn.neural_network import MLPClassifier
    >>> from explainopt.encoders import network_layers
    >>> X, y = [[0, 0], [1, 1], [0, 1], [1, 0]], [0, 0, 1, 1]
    >>> model = MLPClassifier(hidden_layer_sizes=(4,), max_iter=2000, random_state=0).fit(X, y)
    >>> [W.shape for W, b in network_layers(model)]
    [(4, 2), (1, 4)]
    """
    if isinstance(model, (list, tuple)):
        return [(np.asarray(W, float), np.asarray(b, float)) for W, b in model]
    if isinstance(model, MLPClassifier):
        return _mlp_layers(model)
    if is_torch_sequential(model):
        return _torch_layers(model)
    if isinstance(model, IntervalNetwork):
        return model.layers
    raise TypeError(f"cannot read layers from a {type(model).__name__}")


def torch_network(model) -> "nn.Sequential":
    """The torch ``nn.Sequential`` (float64, eval mode, parameters frozen) computing the logit of class 1
    of `model`: any network :func:`network_layers` reads, or its layers ``[(W, b), ...]`` themselves
    (linear layers with a ReLU between them). The one way the library turns layers into a torch network
    (the gradient methods differentiate through it; the chapters rebuild stored networks with it).

    Examples
    --------
    >>> import numpy as np
    >>> import torch
    >>> from explainopt.encoders import network_layers, torch_network
    >>> layers = [(np.array([[1.0, -1.0]]), np.array([0.5]))]
    >>> net = torch_network(layers)
    >>> net(torch.tensor([[2.0, 1.0]], dtype=torch.float64)).item()
    1.5
    """
    layers = network_layers(model)
    torch = _torch()
    nn = torch.nn
    modules = []
    for W, b in layers:
        linear = nn.Linear(W.shape[1], W.shape[0]).double()
        with torch.no_grad():
            linear.weight.copy_(torch.as_tensor(W))
            linear.bias.copy_(torch.as_tensor(b))
        modules += [linear, nn.ReLU()]
    net = nn.Sequential(*modules[:-1]).eval()
    for p in net.parameters():
        p.requires_grad_(False)
    return net


def forward(layers, X, *, preactivations: bool = False):
    """Evaluate the network at the rows of `X`: the logit (and optionally every layer's pre-activation)."""
    h = np.asarray(X, dtype=float)
    zs = []
    for k, (W, b) in enumerate(layers):
        z = h @ W.T + b
        zs.append(z)
        h = np.maximum(z, 0.0) if k < len(layers) - 1 else z
    return (h[:, 0], zs) if preactivations else h[:, 0]


# ------------------------------------------------------------------------------------ bounds


def propagate_bounds(layers, lower, upper, *, delta: float = 0.0) -> list[tuple[np.ndarray, np.ndarray]]:
    """Interval bound propagation: ``(l, u)`` of every layer's pre-activation over the input box, and
    with `delta` over every network whose weights and biases lie within +-delta of `layers` too.

    With shifts the bounds of a neuron are attained at the lower (upper) ends ``W -+ delta`` of its
    weights, each input at its lower or upper bound by the sign of that end; this needs inputs >= 0
    (then every layer's input is >= 0), so `lower` must be non-negative when ``delta > 0``.
    """
    lo, hi = np.asarray(lower, float), np.asarray(upper, float)
    if delta > 0 and (lo < 0).any():
        raise ValueError("bounds over weight shifts need non-negative inputs (min-max scale the data)")
    bounds = []
    for k, (W, b) in enumerate(layers):
        Wl, Wu = W - delta, W + delta
        l = np.maximum(Wl, 0) @ lo + np.minimum(Wl, 0) @ hi + b - delta
        u = np.maximum(Wu, 0) @ hi + np.minimum(Wu, 0) @ lo + b + delta
        bounds.append((l, u))
        lo, hi = np.maximum(l, 0), np.maximum(u, 0)
    return bounds


def neuron_states(lower, upper) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Indices of the neurons always off (upper <= 0), always on (lower >= 0) and unstable, given bounds
    ``lower <= z <= upper`` of their pre-activations: only the unstable ones need a binary."""
    return np.flatnonzero(upper <= 0), np.flatnonzero(lower >= 0), np.flatnonzero((lower < 0) & (upper > 0))


@dataclass(frozen=True)
class ReluRows:
    """The big-M formulation of ``h = max(z, 0)`` for one layer, written once for every consumer: rows
    ``row_lower <= Z z + H h + S sigma <= row_upper`` over the pre-activations z, the activations
    ``0 <= h <= h_upper`` and one binary sigma per unstable neuron (:func:`relu_rows`).
    :meth:`to_cvxpy` emits them as cvxpy constraints on an expression z, :meth:`to_matrix` as rows of a
    :class:`explainopt.solvers.MatrixMILP` with ``z = W v + b`` substituted."""

    Z: sp.csr_matrix
    H: sp.csr_matrix
    S: sp.csr_matrix
    row_lower: np.ndarray
    row_upper: np.ndarray
    h_upper: np.ndarray

    def to_cvxpy(self, z, *, name: str = ""):
        """Returns (h, constraints, sigma); sigma is None where no neuron is unstable."""
        n, k = self.H.shape[1], self.S.shape[1]
        h = cp.Variable(n, bounds=[np.zeros(n), self.h_upper], name=f"h{name}")
        sigma = cp.Variable(k, boolean=True, name=f"sigma{name}") if k else None
        rows = self.Z @ z + self.H @ h + (self.S @ sigma if k else 0)
        relation = {"=": operator.eq, ">": operator.ge, "<": operator.le}
        cons = [relation[sense](rows[i], rhs) for sense, i, rhs in one_sided(self.row_lower, self.row_upper)]
        return h, cons, sigma

    def to_matrix(self, milp, inputs, W, b) -> np.ndarray:
        """Writes the rows into `milp` for ``z = W v + b``, ``v`` its columns `inputs`; returns the columns of h."""
        h = milp.add_columns(self.H.shape[1], upper=self.h_upper)
        sigma = milp.add_columns(self.S.shape[1], upper=1.0, integer=True)
        A = sp.hstack([sp.csr_matrix(self.Z @ W), self.H, self.S], format="csr")
        shift, cols = self.Z @ b, np.r_[inputs, h, sigma]
        for i in range(A.shape[0]):
            entries = slice(A.indptr[i], A.indptr[i + 1])
            milp.add_row(cols[A.indices[entries]], A.data[entries],
                         lower=self.row_lower[i] - shift[i], upper=self.row_upper[i] - shift[i])
        return h


def relu_rows(lower, upper) -> ReluRows:
    """The big-M rows of ``h = max(z, 0)`` given bounds ``lower <= z <= upper`` of the pre-activations:
    ``0 <= h <= max(upper, 0)`` (so an always-off neuron is ``h = 0`` with no row); an always-on neuron
    ``h = z``; an unstable neuron, with its binary sigma, ``h >= z``, ``h <= z - lower (1 - sigma)`` and
    ``h <= upper sigma``."""
    l, u = np.asarray(lower, float), np.asarray(upper, float)
    _, on, unstable = neuron_states(l, u)
    n, k = len(l), len(unstable)
    j = np.arange(k)
    first = len(on) + 3 * j  # the unstable neurons' three rows follow the always-on ones
    n_rows = len(on) + 3 * k

    def block(rows, cols, values, width):
        return sp.csr_matrix((np.broadcast_to(values, rows.shape), (rows, cols)), shape=(n_rows, width))

    r_on = np.arange(len(on))
    Z = block(np.r_[r_on, first, first + 1], np.r_[on, unstable, unstable], -1.0, n)
    H = block(np.r_[r_on, first, first + 1, first + 2], np.r_[on, unstable, unstable, unstable], 1.0, n)
    S = block(np.r_[first + 1, first + 2], np.r_[j, j], np.r_[-l[unstable], -u[unstable]], k)
    row_lower, row_upper = np.zeros(n_rows), np.zeros(n_rows)
    row_upper[first] = np.inf
    row_lower[first + 1], row_upper[first + 1] = -np.inf, -l[unstable]
    row_lower[first + 2] = -np.inf
    return ReluRows(Z, H, S, row_lower, row_upper, np.maximum(u, 0.0))


def relu_layer(z, lower, upper, *, name: str = ""):
    """Activations ``h = max(z, 0)`` of one layer as big-M constraints (:func:`relu_rows`), given bounds
    ``lower <= z <= upper`` of the pre-activations `z` (a cvxpy expression). Returns (h, constraints,
    sigma): one binary of `sigma` per unstable neuron (None without any)."""
    return relu_rows(lower, upper).to_cvxpy(z, name=name)


def _intersect(a, b):
    """The intersection of two lists of per-layer bounds ``(l, u)`` (either may be None)."""
    if a is None or b is None:
        return a if b is None else b
    return [(np.maximum(la, lb), np.minimum(ua, ub)) for (la, ua), (lb, ub) in zip(a, b)]


class _relaxation:
    """One LP ``{v : A_ub v <= b_ub, A_eq v = b_eq, lower <= v <= upper}`` in a HiGHS model kept alive
    across objectives: each :meth:`minimum` changes the costs alone and starts from the last basis."""

    def __init__(self, A_ub, b_ub, A_eq, b_eq, lower, upper):
        self.h = highspy.Highs()
        self.h.setOptionValue("output_flag", False)
        self.n = lower.size
        inf = highspy.kHighsInf
        self.h.addVars(self.n, np.where(np.isfinite(lower), lower, -inf), np.where(np.isfinite(upper), upper, inf))
        rows = [(np.vstack(A_ub), np.full(len(b_ub), -inf), np.asarray(b_ub, float))] if A_ub else []
        rows += [(np.vstack(A_eq), np.asarray(b_eq, float), np.asarray(b_eq, float))] if A_eq else []
        for A, lo, hi in rows:
            A = sp.csr_matrix(A)
            self.h.addRows(A.shape[0], lo, hi, A.nnz, A.indptr[:-1].astype(np.int32), A.indices.astype(np.int32),
                           A.data)

    def minimum(self, c) -> float | None:
        """min of ``c . v`` over the LP, or None where HiGHS does not prove an optimum."""
        self.h.changeColsCost(self.n, np.arange(self.n, dtype=np.int32), np.asarray(c, float))
        self.h.run()
        if self.h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            return None
        return float(self.h.getInfo().objective_function_value)

    def argmin(self, c) -> np.ndarray | None:
        """A minimiser of ``c . v`` over the LP, or None (as :meth:`minimum`)."""
        if self.minimum(c) is None:
            return None
        return np.asarray(self.h.getSolution().col_value, float)

    def maximum(self, c) -> float | None:
        low = self.minimum(-np.asarray(c, float))
        return None if low is None else -low


def lp_bounds(layers, lower, upper, *, vertices=None, ball=None, bounds=None,
              tol: float = 1e-6) -> list[tuple[np.ndarray, np.ndarray]]:
    """Optimization-based bound tightening: bounds ``(l, u)`` of every layer's pre-activations over the
    input domain, each hidden neuron's from two LPs (min and max of its pre-activation over the triangle
    relaxation of the layers below, built from their already tightened bounds), layer by layer.

    The domain is the box [lower, upper], or with `vertices` the convex hull of their rows (which must
    lie in the box); layer 0 is then exact (min/max over the vertices). `ball` ``(center, radius)``
    intersects the domain with the l1 ball ``||x - center||_1 <= radius`` (e.g. around a factual, of the
    radius of a known counterfactual, which contains the nearest one); layer 0 is then tightened by
    LPs too. The caller vouches that the ball contains every point it encodes. `bounds` (sound bounds from
    elsewhere, e.g. :func:`network_bounds` of a larger box) are intersected in. The LP relaxation contains
    every point of the network on the domain, so the bounds are sound; each LP optimum is widened by
    ``tol (1 + |value|)`` against the LP solver's tolerances. The last layer's bounds are propagated by
    intervals from the last hidden layer's. Solved with HiGHS, one model per layer whose objective alone
    changes from neuron to neuron (warm-started simplex, :class:`_relaxation`).
    """
    lo, hi = np.asarray(lower, float), np.asarray(upper, float)
    if vertices is not None:
        V = np.atleast_2d(np.asarray(vertices, float))
        P = V.T  # x = V^T lambda, lambda in the simplex
        var_lo, var_hi = [np.zeros(len(V))], [np.ones(len(V))]
        A_eq, b_eq = [np.ones((1, len(V)))], [1.0]
    else:
        P = np.eye(lo.size)
        var_lo, var_hi = [lo.copy()], [hi.copy()]
        A_eq, b_eq = [], []
    A_ub, b_ub = [], []
    if ball is not None:  # t >= |P v - center|, sum t <= radius, with t appended to the LP variables
        center, radius = np.asarray(ball[0], float), float(ball[1])
        d, m = P.shape
        A_eq = [np.hstack([a, np.zeros((1, d))]) for a in A_eq]
        A_ub = [np.hstack([P, -np.eye(d)]), np.hstack([-P, -np.eye(d)]), np.r_[np.zeros(m), np.ones(d)][None]]
        b_ub = list(center) + list(-center) + [radius]
        var_lo.append(np.zeros(d))
        var_hi.append(np.full(d, np.inf))
        P = np.hstack([P, np.zeros((d, d))])
    out = []
    H = P  # the map from the LP variables to the current layer's input
    for k, (W, b) in enumerate(layers):
        n_vars = H.shape[1]
        Z = W @ H
        if k == 0:
            if vertices is not None:
                vals = V @ W.T + b
                l, u = vals.min(axis=0), vals.max(axis=0)
            else:
                (l, u), = propagate_bounds([(W, b)], lo, hi)
        else:
            (l, u), = propagate_bounds([(W, b)], np.maximum(out[-1][0], 0), np.maximum(out[-1][1], 0))
        if bounds is not None:
            l, u = np.maximum(l, bounds[k][0]), np.minimum(u, bounds[k][1])
        if k == len(layers) - 1:
            out.append((l, u))
            return out
        if k > 0 or ball is not None:
            lp = _relaxation(A_ub, b_ub, A_eq, b_eq, np.concatenate(var_lo), np.concatenate(var_hi))
            for j in np.flatnonzero((l < 0) & (u > 0)):
                low, high = lp.minimum(Z[j]), lp.maximum(Z[j])
                if high is not None:
                    u[j] = min(u[j], high + b[j] + tol * (1 + abs(high + b[j])))
                if low is not None:
                    l[j] = max(l[j], low + b[j] - tol * (1 + abs(low + b[j])))
        out.append((l, u))
        # Add this layer's activations h (n new variables) with the triangle relaxation.
        n = W.shape[0]
        pad = lambda rows: [np.hstack([r, np.zeros((r.shape[0], n))]) for r in rows]
        A_ub, A_eq = pad(A_ub), pad(A_eq)
        Hn = np.hstack([np.zeros((n, n_vars)), np.eye(n)])
        Zp = np.hstack([Z, np.zeros((n, n))])
        off, on, unstable = neuron_states(l, u)
        h_lo, h_hi = np.zeros(n), np.maximum(u, 0)
        h_hi[off] = 0.0
        for j in on:
            A_eq.append((Hn[j] - Zp[j])[None])
            b_eq.append(b[j])
        for j in unstable:
            slope = u[j] / (u[j] - l[j])
            A_ub.append((Zp[j] - Hn[j])[None])  # z <= h
            b_ub.append(-b[j])
            A_ub.append((Hn[j] - slope * Zp[j])[None])  # h <= slope (z - l)
            b_ub.append(slope * (b[j] - l[j]))
        var_lo.append(h_lo)
        var_hi.append(h_hi)
        H = Hn
    raise AssertionError("unreachable")


_BOUND_CACHE: OrderedDict = OrderedDict()
_BOUND_CACHE_SIZE = 256


def _key(*arrays) -> str:
    digest = hashlib.sha1()
    for a in arrays:
        a = np.ascontiguousarray(a, dtype=float)
        digest.update(str(a.shape).encode())
        digest.update(a.tobytes())
    return digest.hexdigest()


def network_bounds(layers, lower, upper, *, vertices=None, ball=None) -> list[tuple[np.ndarray, np.ndarray]]:
    """:func:`lp_bounds`, memoised per (network, domain): computed once per network and box (e.g. the
    data's) and reused by every encoding of that network over that box. Returns copies."""
    layers = network_layers(layers)
    parts = [a for W, b in layers for a in (W, b)] + [lower, upper] + ([] if vertices is None else [vertices])
    parts += [] if ball is None else [ball[0], [ball[1]]]
    key = _key(*parts)
    if key not in _BOUND_CACHE:
        _BOUND_CACHE[key] = lp_bounds(layers, lower, upper, vertices=vertices, ball=ball)
        if len(_BOUND_CACHE) > _BOUND_CACHE_SIZE:
            _BOUND_CACHE.popitem(last=False)
    _BOUND_CACHE.move_to_end(key)
    return [(l.copy(), u.copy()) for l, u in _BOUND_CACHE[key]]


def encode_layers(layers, x, lo, hi, *, tighten: str | None = None, solver=None, bounds=None, ball=None):
    """Constraints making ``output`` the network's logit at `x` in the box [lo, hi].

    Big-M bounds: interval propagation over the box, intersected with `bounds` (sound bounds of every
    layer's pre-activations over a domain containing every `x` the caller allows) and, with
    ``tighten="lp"``, with :func:`network_bounds` over the box (LP bound tightening, memoised per network
    and box; `solver` is accepted for compatibility: the LPs are solved by HiGHS); with `ball`
    ``(center, radius)`` too, over the box and that l1 ball, which then joins the constraints (the
    encoding's domain is the box and the ball; e.g. the ball around a factual of the radius of a known
    counterfactual, which contains the nearest one).
    Returns (output expression, constraints, variables, pre-activation bounds per layer).
    """
    if tighten not in TIGHTENING:
        raise ValueError(f"tighten must be one of {TIGHTENING}, got {tighten!r}")
    if tighten == "lp":
        bounds = _intersect(bounds, network_bounds(layers, lo, hi, ball=ball))
    bounds = _intersect(propagate_bounds(layers, lo, hi), bounds)
    # Propagate intersected bounds forward once more: a tighter layer tightens the next one's intervals.
    for k in range(1, len(layers)):
        (l, u), = propagate_bounds(layers[k:k + 1], np.maximum(bounds[k - 1][0], 0), np.maximum(bounds[k - 1][1], 0))
        bounds[k] = (np.maximum(bounds[k][0], l), np.minimum(bounds[k][1], u))
    cons, variables = [x >= lo, x <= hi], {"h": [], "sigma": []}
    if ball is not None:  # the domain is the box and the ball: the bounds hold there alone
        cons.append(cp.norm1(x - ball[0]) <= ball[1])
    h = x
    for k, (W, b) in enumerate(layers):
        z = W @ h + b
        l, u = bounds[k]
        if k == len(layers) - 1:
            return z[0], cons, variables, bounds
        h, layer_cons, sigma = relu_layer(z, l, u, name=str(k))
        cons += layer_cons
        variables["h"].append(h)
        variables["sigma"].append(sigma)
    raise AssertionError("unreachable")


def _encode_network(model, layers, x, lower, upper, tighten, solver, threshold, inclusive, ball=None) -> Encoding:
    check_features(x, layers[0][0].shape[1], model)
    lo, hi = as_bounds(lower, upper, layers[0][0].shape[1])
    output, cons, variables, bounds = encode_layers(layers, x, lo, hi, tighten=tighten, solver=solver, ball=ball)
    variables["bounds"] = bounds
    out_l, out_u = bounds[-1]
    return Encoding(model, x, output, cons, threshold, inclusive=inclusive,
                    output_bounds=(float(out_l[0]), float(out_u[0])), variables=variables)


# ----------------------------------------------------------------------------------- networks


def _network_output(model, X):
    if isinstance(model, MLPClassifier):
        return forward(_mlp_layers(model), X)
    torch = _torch()
    nn = torch.nn
    net = copy.deepcopy(model).double()
    with torch.no_grad():
        out = net(torch.as_tensor(X, dtype=torch.float64)).numpy()
    out = np.atleast_2d(out.reshape(len(X), -1))
    if isinstance(model[-1], nn.Sigmoid):
        out = np.log(out) - np.log1p(-out)
    elif isinstance(model[-1], nn.Softmax):
        out = np.log(out[:, 1:]) - np.log(out[:, :1])
    return out[:, -1] - out[:, 0] if out.shape[1] == 2 else out[:, 0]


def _network_predict(model, X):
    if isinstance(model, MLPClassifier):
        return predicted_index(model, X)
    return (_network_output(model, X) > 0).astype(int)


@register(MLPClassifier, TORCH_SEQUENTIAL, family="network", output=_network_output, predict=_network_predict)
def encode_network(model, x, *, lower=None, upper=None, tighten=None, solver=None, ball=None) -> Encoding:
    """A ReLU network (MLPClassifier or torch nn.Sequential): output = the logit, class 1 iff > 0.

    tighten="lp" tightens the big-M bounds of every hidden layer with LP relaxations over the box, and
    over the box and the l1 ball ``ball = (center, radius)`` where given: x is then constrained to the
    ball as to the box, so pass one that contains the solution sought (:func:`counterfactual_ball`).
    """
    if ball is not None and tighten != "lp":
        raise ValueError("ball tightens LP bounds: pass tighten='lp' with it")
    return _encode_network(model, network_layers(model), x, lower, upper, tighten, solver, 0.0, False, ball)


def segment_points(x0, P, valid, *, steps: int = 30) -> np.ndarray:
    """For every row p of `P` that `valid` accepts (`valid` maps rows to booleans), a point of the segment
    from `x0` to p that it accepts too, found by bisection (the end towards p always accepted): at most
    as far from `x0` as p, and often much nearer. One row per accepted row of `P`, in their order."""
    x0, P = np.asarray(x0, float), np.atleast_2d(np.asarray(P, float))
    P = P[np.asarray(valid(P), bool)]
    low, high = np.zeros(len(P)), np.ones(len(P))
    for _ in range(steps):
        mid = (low + high) / 2
        ok = np.asarray(valid(x0 + mid[:, None] * (P - x0)), bool)
        high, low = np.where(ok, mid, high), np.where(ok, low, mid)
    return x0 + high[:, None] * (P - x0)


def region_descent(layers, x0, p, lower, upper, *, sign: float, margin: float, steps: int = 5) -> np.ndarray:
    """From a point `p` with ``sign * logit >= margin``, the l1-nearest point to `x0` of the linear region
    of `p` (its neurons' signs fixed, the network affine there) in the box, an LP; repeated from there
    for `steps` regions. A step whose LP fails, or whose point a forward pass does not accept (the LP's
    tolerances), ends the descent: the point returned is always accepted."""
    x0, p = np.asarray(x0, float), np.asarray(p, float)
    d = x0.size
    for _ in range(steps):
        A, c = np.eye(d), np.zeros(d)  # the current layer's input as A x + c, in p's region
        rows, rhs = [], []
        for k, (W, b) in enumerate(layers):
            Z, z0 = W @ A, W @ c + b
            if k == len(layers) - 1:
                rows.append(-sign * Z[:1])
                rhs.append(sign * z0[:1] - margin - 1e-7)  # above the margin by the LP's feasibility tolerance
                break
            on = (Z @ p + z0) > 0
            s = np.where(on, -1.0, 1.0)  # on: z >= 0; off: z <= 0
            rows.append(s[:, None] * Z)
            rhs.append(-s * z0)
            A, c = Z * on[:, None], z0 * on
        G = np.hstack([np.vstack(rows), np.zeros((sum(len(r) for r in rows), d))])
        eye = np.eye(d)  # t >= |x - x0|
        A_ub = [G, np.hstack([eye, -eye]), np.hstack([-eye, -eye])]
        b_ub = list(np.concatenate(rhs)) + list(x0) + list(-x0)
        lp = _relaxation(A_ub, b_ub, [], [], np.r_[lower, np.zeros(d)], np.r_[upper, np.full(d, np.inf)])
        v = lp.argmin(np.r_[np.zeros(d), np.ones(d)])
        if v is None or not sign * forward(layers, v[None, :d])[0] >= margin or \
                np.abs(v[:d] - x0).sum() >= np.abs(p - x0).sum():
            break
        p = v[:d]
    return p


def counterfactual_ball(model, x0, X, *, target: int, margin: float = 0.0, starts: int = 5):
    """``(x0, r)``: the l1 ball around `x0` whose radius r is the distance to the nearest counterfactual
    known: the points of the segments from `x0` to the rows of `X` whose logit gives class `target` by
    `margin` (``logit >= margin`` for 1, ``<= -margin`` for 0; :func:`segment_points`), and from the
    `starts` nearest of them on through linear regions (:func:`region_descent`), or None without one.
    Such a point is a counterfactual in any box holding `x0` and `X`, so the nearest counterfactual in
    the l1 norm (with that margin) lies in the ball: LP bounds over the box and the ball
    (``encode_network(..., tighten="lp", ball=...)``) keep its optimum."""
    layers, x0, X = network_layers(model), np.asarray(x0, float), np.atleast_2d(np.asarray(X, float))
    sign = 1.0 if target == 1 else -1.0
    valid = lambda Z: sign * forward(layers, Z) >= margin  # noqa: E731
    points = segment_points(x0, X, valid)
    if not len(points):
        return None
    lower, upper = np.minimum(X.min(axis=0), x0), np.maximum(X.max(axis=0), x0)
    nearest = points[np.argsort(np.abs(points - x0).sum(axis=1))[:starts]]
    points = np.vstack([points] + [region_descent(layers, x0, p, lower, upper, sign=sign, margin=margin)[None]
                                   for p in nearest])
    radius = float(np.abs(points - x0).sum(axis=1).min())
    return x0, radius + 1e-6 * max(1.0, radius)  # widened against the LP tolerances


# ---------------------------------------------------------------------------- interval networks


class IntervalNetwork:
    """The interval abstraction of a ReLU network under weight and bias shifts of at most `delta`.

    ``bounds(X)`` gives the interval ``[l, u]`` of the logit at non-negative inputs (Definition 5 of
    PROPLACE); class 1 is certain iff ``l >= 0`` (Definition 6). ``encode(IntervalNetwork(...), x)``
    encodes ``l`` exactly, through the doubled network in ``layers`` (module docstring). `model` is a
    network or its list of layers ``[(W, b), ...]``.

    Examples
    --------
    >>> import numpy as np
    >>> from explainopt.encoders import IntervalNetwork
    >>> layers = [(np.array([[1.0, -1.0], [0.5, 0.5]]), np.zeros(2)), (np.array([[1.0, 1.0]]), np.array([-0.2]))]
    >>> lower, upper = IntervalNetwork(layers, delta=0.05).bounds([[1.0, 0.0]])
    >>> print(np.round(lower, 3), np.round(upper, 3))
    [0.985] [1.635]
    """

    def __init__(self, model, *, delta: float):
        if not delta >= 0:
            raise ValueError(f"delta must be non-negative, got {delta!r}")
        self.model, self.delta = model, float(delta)
        self.base_layers = network_layers(model)
        self.n_features_in_ = self.base_layers[0][0].shape[1]
        self.layers = self._doubled_layers()

    def _doubled_layers(self):
        """Layers of the network whose neurons are (lower bounds, upper bounds) of the interval network."""
        d, layers = self.delta, []
        for k, (W, b) in enumerate(self.base_layers):
            lo_w, hi_w = W - d, W + d
            if k == 0:  # the input x >= 0 is a point: lower ends give the lower bound
                Wd = np.vstack([lo_w, hi_w])
            else:  # inputs (h_lower, h_upper) >= 0
                Wd = np.block([[np.maximum(lo_w, 0), np.minimum(lo_w, 0)],
                               [np.minimum(hi_w, 0), np.maximum(hi_w, 0)]])
            layers.append((Wd, np.r_[b - d, b + d]))
        return layers

    def _check_inputs(self, X) -> np.ndarray:
        X = np.atleast_2d(np.asarray(X, dtype=float))
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"the network expects {self.n_features_in_} features, got {X.shape[1]}")
        if (X < 0).any():
            raise ValueError("interval networks are defined here for non-negative inputs (min-max scale the data)")
        return X

    def layer_bounds(self, x) -> list[tuple[np.ndarray, np.ndarray]]:
        """Bounds ``(l, u)`` of every layer's pre-activations over all shifted networks at the point
        `x` >= 0 (``explainopt.encoders.networks.propagate_bounds`` with this delta); the last layer's are
        :meth:`bounds`."""
        x = self._check_inputs(x)
        if len(x) != 1:
            raise ValueError(f"layer_bounds takes one point; got {len(x)} rows (bounds() takes many)")
        return propagate_bounds(self.base_layers, x[0], x[0], delta=self.delta)

    def bounds(self, X) -> tuple[np.ndarray, np.ndarray]:
        """Lower and upper bounds of the logit over all shifted networks, at the rows of `X`: the forward
        pass of the doubled network (the network that ``encode`` formulates)."""
        _, preactivations = forward(self.layers, self._check_inputs(X), preactivations=True)
        return preactivations[-1][:, 0], preactivations[-1][:, 1]

    def sample(self, random_state=None, *, vertex: bool = False) -> list[tuple[np.ndarray, np.ndarray]]:
        """Layers of one network with every weight and bias shifted within +-delta: uniformly, or to a
        random end of its interval (a vertex of the box of shifts) with `vertex`."""
        rng = np.random.default_rng(random_state)
        d = self.delta

        def shift(shape):
            return rng.choice([-d, d], shape) if vertex else rng.uniform(-d, d, shape)

        return [(W + shift(W.shape), b + shift(b.shape)) for W, b in self.base_layers]

    def __repr__(self) -> str:
        return f"IntervalNetwork({type(self.model).__name__}, delta={self.delta})"


@register(IntervalNetwork, family="interval-network", output=lambda m, X: m.bounds(X)[0], predict=lambda m, X: (m.bounds(X)[0] >= 0).astype(int))
def encode_interval_network(model: IntervalNetwork, x, *, lower=None, upper=None, tighten=None, solver=None) -> Encoding:
    """The lower bound ``l`` of an interval network's logit; ``enc.predicts(1)`` asks ``l >= 0``
    (Delta-robust class 1, Definition 7 of PROPLACE). Needs ``lower >= 0``."""
    lo, _ = as_bounds(lower, upper, model.n_features_in_)
    if (lo < 0).any():
        raise ValueError("interval networks need non-negative inputs: lower must be >= 0")
    layers = [(W[:1], b[:1]) if k == len(model.layers) - 1 else (W, b) for k, (W, b) in enumerate(model.layers)]
    return _encode_network(model, layers, x, lower, upper, tighten, solver, 0.0, True)


def interval_lower(model, X, *, delta: float) -> np.ndarray:
    """Lower bound of the logit over all networks within `delta` of `model` (weights and biases), at the
    rows of `X` >= 0: the interval abstraction of PROPLACE (Definition 5).

    Examples
    --------
    >>> import numpy as np
    >>> from explainopt.encoders import interval_lower
    >>> layers = [(np.array([[1.0, -1.0], [0.5, 0.5]]), np.zeros(2)), (np.array([[1.0, 1.0]]), np.array([-0.2]))]
    >>> np.round(interval_lower(layers, [[1.0, 0.0], [0.2, 0.2]], delta=0.05), 3)
    array([ 0.985, -0.126])
    """
    return IntervalNetwork(model, delta=delta).bounds(X)[0]


def delta_robust(model, X, *, delta: float) -> np.ndarray:
    """Definition 7 of PROPLACE: a row of `X` is Delta-robust for class 1 iff the interval lower bound
    of the logit is >= 0 (a sound test: every network within `delta` then predicts class 1).

    Examples
    --------
    >>> from explainopt.encoders import delta_robust
    >>> import numpy as np
    >>> layers = [(np.array([[1.0, -1.0], [0.5, 0.5]]), np.zeros(2)), (np.array([[1.0, 1.0]]), np.array([-0.2]))]
    >>> delta_robust(layers, [[1.0, 0.0], [0.2, 0.2]], delta=0.05)
    array([ True, False])
    """
    return interval_lower(model, X, delta=delta) >= 0
