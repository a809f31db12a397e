"""The chapters' model trainers: small ReLU networks that come out the same, bit for bit, on any CPU, and
the random forest of chapters 5 and 6 (:func:`train_forest`).

Mini-batch Adam on a long run is chaotic: a round-off difference in one gradient grows, step by step,
into another network. Torch and BLAS sum their products in an order set by the CPU's vector width
and kernel (AVX2, AVX-512, the BLAS library's choice), so a network trained with them on one machine is
not the network trained on another, in float32 or in float64 alike.

:func:`train_relu_network` therefore uses only operations whose result IEEE 754 fixes to the bit,
whatever the vector width: elementwise ``+ - * /``, ``sqrt`` and comparisons in float64, sums in a fixed
pairwise order (:func:`fixed_sum`), and an exponential built from those (:func:`exact_exp`). Its random
draws come from NumPy's PCG64 stream, which is the same everywhere. It implements torch's defaults:
``nn.Linear``'s uniform initialisation, ``BCEWithLogitsLoss`` plus an L2 term in the loss, and
``optim.Adam`` (Kingma & Ba 2015, Algorithm 1, with torch's placement of epsilon).
"""

from __future__ import annotations

import math

import numpy as np
from sklearn.ensemble import RandomForestClassifier

#: ln 2 split so that k * LN2_HI is exact for |k| < 2**20 (Cody & Waite): 32 significant bits, then the rest.
LN2_HI, LN2_LO = 0.6931471803691238, 1.9082149292705877e-10
#: Taylor coefficients 1/n! of exp on |r| <= ln 2 / 2 (degree 13: below 1e-17 relative truncation error).
_EXP_COEFFICIENTS = [1.0 / math.factorial(n) for n in range(13, -1, -1)]


def fixed_sum(a: np.ndarray) -> np.ndarray:
    """Sum over axis 0 in a fixed pairwise order of elementwise additions (the same bits on any CPU)."""
    a = np.asarray(a, dtype=float)
    while a.shape[0] > 1:
        half = a.shape[0] // 2
        head = a[:half] + a[half:2 * half]
        a = head if a.shape[0] % 2 == 0 else np.concatenate([head, a[2 * half:]])
    return a[0]


def fixed_matmul(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """``A @ B`` with the products summed by :func:`fixed_sum` (no BLAS: its order depends on the CPU)."""
    return fixed_sum(np.moveaxis(A[:, :, None] * B[None, :, :], 1, 0))


def exact_exp(x: np.ndarray) -> np.ndarray:
    """exp(x) from correctly rounded operations only: x = k ln 2 + r with |r| <= ln 2 / 2 (Cody-Waite), a
    degree-13 Taylor polynomial of exp(r) by Horner's rule, times 2**k. Within a few ulp of exp, and the
    same bits on any CPU (NumPy's and libm's exp have CPU-specific code paths). Arguments are clipped to
    [-700, 700]."""
    x = np.clip(np.asarray(x, dtype=float), -700.0, 700.0)
    k = np.rint(x / math.log(2))
    r = (x - k * LN2_HI) - k * LN2_LO
    p = np.full_like(r, _EXP_COEFFICIENTS[0])
    for c in _EXP_COEFFICIENTS[1:]:
        p = p * r + c
    return np.ldexp(p, k.astype(int))


def exact_sigmoid(z: np.ndarray) -> np.ndarray:
    """1 / (1 + exp(-z)) with :func:`exact_exp`."""
    return 1.0 / (1.0 + exact_exp(-z))


def _forward(layers, X):
    """Pre-activations and activations of every layer (ReLU between linear layers, the last one linear)."""
    activations, pre = [X], []
    for i, (W, b) in enumerate(layers):
        z = fixed_matmul(activations[-1], W.T) + b
        pre.append(z)
        activations.append(np.maximum(z, 0.0) if i < len(layers) - 1 else z)
    return pre, activations


def _gradients(layers, X, y, weight_decay):
    """Gradients of mean binary cross-entropy on the logit plus ``weight_decay * sum ||theta||^2``."""
    pre, activations = _forward(layers, X)
    delta = (exact_sigmoid(pre[-1][:, 0]) - y)[:, None] / len(X)
    grads = [None] * len(layers)
    for i in range(len(layers) - 1, -1, -1):
        W, b = layers[i]
        grads[i] = (fixed_matmul(delta.T, activations[i]) + 2.0 * weight_decay * W,
                    fixed_sum(delta) + 2.0 * weight_decay * b)
        if i:
            delta = fixed_matmul(delta, W) * (pre[i - 1] > 0)
    return grads


def initial_layers(sizes: list[int], rng: np.random.Generator) -> list[tuple[np.ndarray, np.ndarray]]:
    """torch ``nn.Linear``'s default initialisation: weights and biases uniform on +-1/sqrt(fan_in)."""
    layers = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        bound = 1.0 / math.sqrt(fan_in)
        layers.append((rng.uniform(-bound, bound, (fan_out, fan_in)), rng.uniform(-bound, bound, fan_out)))
    return layers


def train_relu_network(X, y, *, hidden: tuple[int, ...] = (20, 20), epochs: int = 50, batch_size: int = 32,
                       learning_rate: float = 0.01, weight_decay: float = 1e-4, betas=(0.9, 0.999),
                       eps: float = 1e-8, random_state: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """A ReLU network with `hidden` layer widths and one logit output, trained by mini-batch Adam on
    binary cross-entropy plus ``weight_decay * ||theta||^2``; every epoch visits the rows in a fresh random
    order. The same arguments give the same weights, bit for bit, on any CPU (module docstring).

    Parameters
    ----------
    X : array of shape (n_samples, n_features); y : labels in {0, 1}.
    random_state : seed of the initialisation and of the batch order (NumPy's PCG64).

    Returns
    -------
    list of (W, b) float64 arrays, W of shape (fan_out, fan_in): the network's linear layers in order.
    """
    X, y = np.asarray(X, dtype=float), np.asarray(y, dtype=float)
    if X.ndim != 2 or len(X) != len(y):
        raise ValueError(f"X of shape {X.shape} and y of length {len(y)}: expected (n, d) and n labels")
    if not np.isfinite(X).all() or not np.isin(y, (0.0, 1.0)).all():
        raise ValueError("X must be finite and y made of 0 and 1")
    rng = np.random.default_rng(random_state)
    layers = initial_layers([X.shape[1], *hidden, 1], rng)
    beta1, beta2 = betas
    moments = [[(np.zeros_like(p), np.zeros_like(p)) for p in layer] for layer in layers]
    power1 = power2 = 1.0  # beta ** t by repeated products: pow() is not correctly rounded everywhere
    for _ in range(epochs):
        order = rng.permutation(len(X))
        for start in range(0, len(X), batch_size):
            rows = order[start:start + batch_size]
            grads = _gradients(layers, X[rows], y[rows], weight_decay)
            power1, power2 = power1 * beta1, power2 * beta2
            step, scale = learning_rate / (1.0 - power1), math.sqrt(1.0 - power2)
            for i, (layer, grad) in enumerate(zip(layers, grads)):
                updated = []
                for p, g, (m, v) in zip(layer, grad, moments[i]):
                    m[...] = beta1 * m + (1.0 - beta1) * g
                    v[...] = beta2 * v + (1.0 - beta2) * (g * g)
                    updated.append(p - step * (m / (np.sqrt(v) / scale + eps)))
                layers[i] = tuple(updated)
    return layers


def network_logits(layers, X) -> np.ndarray:
    """The logits of `layers` (:func:`train_relu_network`) at the rows of X, by the same fixed-order sums."""
    return _forward(layers, np.atleast_2d(np.asarray(X, dtype=float)))[0][-1][:, 0]


def train_forest(X, y, *, n_estimators: int = 100, max_depth: int = 4, random_state: int = 0) -> RandomForestClassifier:
    """The random forest of Forel et al.'s protocol (chapter 5, reused by chapter 6): scikit-learn's
    defaults with ``max_features="sqrt"``, one thread."""
    model = RandomForestClassifier(n_estimators=n_estimators, max_depth=max_depth, max_features="sqrt",
                                   random_state=random_state, n_jobs=1)
    return model.fit(np.asarray(X, dtype=float), np.asarray(y))


__all__ = ["exact_exp", "exact_sigmoid", "fixed_matmul", "fixed_sum", "initial_layers", "network_logits",
           "train_forest", "train_relu_network"]
