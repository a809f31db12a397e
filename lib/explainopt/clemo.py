"""Coherent local explanations of optimization models (CLEMO; Otto, Kurtz & Birbil).

What this module offers, with the paper's equations:

- :func:`build_dataset`: Algorithm 2: θ0 plus valid samples around it, solved by the problem's algorithm
  h, with RBF proximity weights (eq. (11)); kernel width ν = mean distance to θ0. The authors' code uses
  ``exp(-d²/(2ν²))`` while the paper writes ``exp(-d²/ν²)``: ``kernel="code"`` (default) or ``"paper"``.
  :func:`dataset_from_solutions` does the same from samples solved elsewhere (e.g. cached grid cells).
- Surrogates ``g(θ) = Bᵀθ̃`` (θ̃ = features plus an intercept): linear for continuous components, logistic
  ``σ(Bᵀθ̃)`` for binary ones (Section 3, "Binary decision variables").
- :func:`loss_terms`: the weighted accuracy losses (squared, eq. (7); log-loss for binary components)
  and the two incoherence terms of eq. (8): objective incoherence ``(g_f − f(g_x; θ))²`` and feasibility
  incoherence; for δ we follow the authors' code: squared residuals of equality rows, positive parts of
  inequality rows (eq. (9)). Components that are not explained take their true values.
- Benchmarks :func:`fit_lr` (eq. (5): independent weighted linear / logistic regressions) and
  :func:`fit_dtr` (decision trees, depth 5, 50 samples per leaf).
- :func:`fit_clemo`: eq. (10) with the λ balancing of Algorithm 3 (:func:`balance_lambdas`), by
  ``method="slsqp"`` (the paper: SLSQP warm-started from LR, at most 1000 iterations; here with an
  optional time limit), ``"lbfgs"`` (L-BFGS-B from the same warm start: the fast path for the non-convex
  logistic case) or ``"convex"`` (Proposition 3.1: with linear predictions, f affine in x and convex δ
  the loss is convex in B; solved to global optimality, by default through the structure of the problem:
  the dual box QP of the hinge terms, whose matrices are samples × samples (:func:`_fit_convex_dual`,
  with a certified optimality gap), else as a QP in B through :func:`explainopt.solvers.solve`).
- Stability over resamples: :func:`contributions`, :func:`stability` (std and normalized std of the
  top-5 contributions) and :func:`feature_stability_index` (FSI of Appendix A.4.2).

Every fit names what solved it in ``Surrogate.solver`` (``scipy-slsqp``, ``scipy-lbfgsb``, ``clemo-dual``
or the cvxpy solver of the convex path), and every data set the algorithm that solved its samples
(``ClemoData.solver``).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from itertools import combinations

import cvxpy as cp
import numpy as np
import scipy.linalg as sla
from scipy.optimize import minimize
from sklearn.linear_model import LogisticRegression
from sklearn.tree import DecisionTreeRegressor

from .problems import solve_many
from .solvers import solve

log = logging.getLogger(__name__)

TERMS = ("A1", "A2", "C1", "C2")


# =========================================================================== data set (Algorithm 2)

@dataclass
class ClemoData:
    """Samples, targets, weights and the coherence structure restricted to the explained components.

    ``X`` holds the features with an intercept column last; ``y`` = [objective, explained decisions];
    the objective of a predicted decision x̂ (explained part) is ``Ce x̂ + f0``; the equality residuals
    are ``Ae_eq x̂ + r0_eq`` and inequality residuals ``Ae_in x̂ + r0_in`` (Ae_* shared (m, q) or
    per-sample (N, m, q)).
    """

    theta: np.ndarray
    X: np.ndarray
    weights: np.ndarray
    width: float
    objective: np.ndarray
    decisions: np.ndarray
    explained: np.ndarray
    binary: np.ndarray
    Ce: np.ndarray
    f0: np.ndarray
    Ae_eq: np.ndarray
    r0_eq: np.ndarray
    Ae_in: np.ndarray
    r0_in: np.ndarray
    feature_names: list
    component_names: list
    solve_time: float = 0.0
    solver: str = ""          # the algorithm(s) that solved the samples, "+"-joined

    @property
    def y(self) -> np.ndarray:
        return np.column_stack([self.objective, self.decisions[:, self.explained]])

    @property
    def n_samples(self) -> int:
        return len(self.weights)


def rbf_weights(theta: np.ndarray, *, kernel: str = "code") -> tuple[np.ndarray, float]:
    """RBF proximity weights of eq. (11) w.r.t. the first row θ0; width ν = mean distance (Algorithm 2).

    Examples
    --------
    >>> import numpy as np
    >>> from explainopt.clemo import rbf_weights
    >>> weights, width = rbf_weights(np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 3.0]]))
    >>> np.round(weights, 4), width
    (array([1.    , 0.7548, 0.0796]), 1.3333333333333333)
    """
    d = np.linalg.norm(theta - theta[0], axis=1)
    width = float(d.mean())
    if width <= 0:
        raise ValueError("all samples equal θ0: the kernel width (mean distance) is zero")
    if kernel == "code":
        return np.exp(-d**2 / (2 * width**2)), width
    if kernel == "paper":
        return np.exp(-d**2 / width**2), width
    raise ValueError(f"kernel={kernel!r}: expected 'code' (exp(-d²/2ν²)) or 'paper' (exp(-d²/ν²))")


def _restrict(A_list, b_list, x, explained, rest):
    """Split ``A x − b`` into ``A[:, explained] x̂ + (A[:, rest] x_rest − b)``."""
    A = np.stack(A_list)                               # (N, m, p)
    shared = bool(np.all(A == A[:1]))
    r0 = np.einsum("nmp,np->nm", A[:, :, rest], x[:, rest]) - np.stack(b_list)
    Ae = A[0][:, explained] if shared else A[:, :, explained]
    return Ae, r0


def build_dataset(problem, *, n_samples: int = 1000, random_state=None, explained=None,
                  kernel: str = "code", n_jobs: int = 1, drop_constant_binary: bool = True) -> ClemoData:
    """Algorithm 2: sample θ around θ0, solve, weigh; then the coherence structure of eq. (8)
    (:func:`dataset_from_solutions`).

    explained : indices of decision variables to explain (default: ``problem.default_explained``);
        binary components constant over all samples are dropped (as the authors do) and take their
        true values in the coherence terms.

    Examples
    --------
    >>> import numpy as np
    >>> from explainopt import clemo
    >>> from explainopt.problems import Knapsack
    >>> problem = Knapsack([10.0, 7.0, 4.0, 3.0], [5.0, 4.0, 3.0, 2.0], solver="highs")  # capacity 1
    >>> data = clemo.build_dataset(problem, n_samples=50, random_state=0)
    >>> data.X.shape, data.component_names, data.solver  # 8 features of theta and an intercept
    ((50, 9), ['f', 'x0', 'x1', 'x2', 'x3'], 'highs')
    """
    thetas = problem.sample(n_samples, random_state=random_state)
    start = time.perf_counter()
    solutions = solve_many(problem, thetas, n_jobs=n_jobs)
    return dataset_from_solutions(problem, thetas, solutions, explained=explained, kernel=kernel,
                                  drop_constant_binary=drop_constant_binary, solve_time=time.perf_counter() - start)


def dataset_from_solutions(problem, thetas: np.ndarray, solutions, *, explained=None, kernel: str = "code",
                           drop_constant_binary: bool = True, solve_time: float = 0.0) -> ClemoData:
    """The data set of Algorithm 2 from samples θ (θ0 first) and the problem's solutions of them
    (:class:`~explainopt.problems.Solution` objects, in the order of `thetas`).

    Examples
    --------
    >>> from explainopt import clemo
    >>> from explainopt.problems import Knapsack, solve_many
    >>> problem = Knapsack([10.0, 7.0, 4.0, 3.0], [5.0, 4.0, 3.0, 2.0], solver="highs")
    >>> thetas = problem.sample(20, random_state=0)
    >>> data = clemo.dataset_from_solutions(problem, thetas, solve_many(problem, thetas))
    >>> data.n_samples, data.y.shape
    (20, (20, 5))
    """
    thetas = np.atleast_2d(np.asarray(thetas, dtype=float))
    if len(solutions) != len(thetas):
        raise ValueError(f"{len(solutions)} solutions for {len(thetas)} samples")
    failed = [i for i, sol in enumerate(solutions) if sol.status not in ("optimal", "time_limit")]
    if failed:
        raise RuntimeError(f"{problem.name}: the algorithm found no solution for samples {failed[:5]}")
    objective, decisions = np.array([sol.objective for sol in solutions]), np.vstack([sol.x for sol in solutions])
    weights, width = rbf_weights(thetas, kernel=kernel)
    p = decisions.shape[1]
    if explained is None:
        explained = problem.default_explained(solutions[0])
    explained = np.asarray(explained, dtype=int)
    binary_all = np.asarray(problem.binary, dtype=bool)
    if drop_constant_binary:
        col = decisions[:, explained]
        keep = ~(binary_all[explained] & (np.ptp(col, axis=0) == 0))
        explained = explained[keep]
    rest = np.setdiff1d(np.arange(p), explained)
    C = np.vstack([problem.cost_vector(t) for t in thetas])
    forms = [problem.formulation(t) for t in thetas]
    Ae_eq, r0_eq = _restrict([f.A_eq for f in forms], [f.b_eq for f in forms], decisions, explained, rest)
    Ae_in, r0_in = _restrict([f.A_in for f in forms], [f.b_in for f in forms], decisions, explained, rest)
    feats = problem.features(thetas)
    return ClemoData(
        theta=thetas, X=np.column_stack([feats, np.ones(len(feats))]), weights=weights, width=width,
        objective=objective, decisions=decisions, explained=explained, binary=binary_all[explained],
        Ce=C[:, explained], f0=np.einsum("np,np->n", C[:, rest], decisions[:, rest]),
        Ae_eq=Ae_eq, r0_eq=r0_eq, Ae_in=Ae_in, r0_in=r0_in,
        feature_names=list(problem.feature_names) + ["intercept"],
        component_names=["f"] + [problem.decision_names[j] for j in explained], solve_time=solve_time,
        solver="+".join(dict.fromkeys(sol.solver for sol in solutions if sol.solver)))


# =========================================================================== losses (eqs. (7)-(10))

def _apply(Ae, xh):
    return xh @ Ae.T if Ae.ndim == 2 else np.einsum("nmq,nq->nm", Ae, xh)


def _apply_T(Ae, G):
    return G @ Ae if Ae.ndim == 2 else np.einsum("nmq,nm->nq", Ae, G)


def sigmoid(z):
    """The logistic function ``1 / (1 + exp(-z))``, written with tanh so that no exp overflows.

    Examples
    --------
    >>> import numpy as np
    >>> from explainopt.clemo import sigmoid
    >>> sigmoid(np.array([-1000.0, 0.0, 1000.0]))
    array([0. , 0.5, 1. ])
    """
    return 0.5 * (1.0 + np.tanh(0.5 * z))


def predict(data: ClemoData, B: np.ndarray, *, features: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(g_f, g_x)`` of the linear/logistic surrogate with coefficients B (features+1, 1+q), at the data
    set's samples or at other `features` (rows of ``problem.features(θ)``, without the intercept).

    Examples
    --------
    >>> import numpy as np
    >>> from explainopt import clemo
    >>> from explainopt.problems import Knapsack
    >>> problem = Knapsack([10.0, 7.0, 4.0, 3.0], [5.0, 4.0, 3.0, 2.0], solver="highs")  # capacity 1
    >>> data = clemo.build_dataset(problem, n_samples=50, random_state=0)
    >>> f_hat, x_hat = clemo.predict(data, clemo.fit_lr(data).coef)
    >>> f_hat.shape, x_hat.shape
    ((50,), (50, 4))
    """
    X = data.X if features is None else np.column_stack([features, np.ones(len(features))])
    Z = X @ B
    xh = Z[:, 1:].copy()
    xh[:, data.binary] = sigmoid(xh[:, data.binary])
    return Z[:, 0], xh


def loss_terms(data: ClemoData, f_hat: np.ndarray, x_hat: np.ndarray, *, Z_binary=None) -> dict:
    """Weighted loss terms of eq. (10) for given predictions.

    A1: Σ w (squared errors of the objective and continuous decisions), eq. (7);
    A2: Σ w (log-loss of binary decisions) (probabilities clipped to [1e-12, 1 − 1e-12] unless the
    logits ``Z_binary`` are given); C1: Σ w (g_f − f(g_x; θ))²; C2: Σ w δ(g_x, X(θ)).

    Examples
    --------
    >>> import numpy as np
    >>> from explainopt import clemo
    >>> from explainopt.problems import Knapsack
    >>> problem = Knapsack([10.0, 7.0, 4.0, 3.0], [5.0, 4.0, 3.0, 2.0], solver="highs")  # capacity 1
    >>> data = clemo.build_dataset(problem, n_samples=50, random_state=0)
    >>> terms = clemo.loss_terms(data, data.objective, data.decisions[:, data.explained])  # the true values
    >>> bool(max(abs(value) for value in terms.values()) < 1e-9)  # exact and coherent
    True
    """
    w, y = data.weights, data.y
    A1 = np.sum(w * (f_hat - y[:, 0]) ** 2)
    cont = ~data.binary
    A1 += np.sum(w[:, None] * (x_hat[:, cont] - y[:, 1:][:, cont]) ** 2)
    yb = y[:, 1:][:, data.binary]
    if Z_binary is not None:
        A2 = np.sum(w[:, None] * (yb * np.logaddexp(0, -Z_binary) + (1 - yb) * np.logaddexp(0, Z_binary)))
    else:
        pb = np.clip(x_hat[:, data.binary], 1e-12, 1 - 1e-12)
        A2 = -np.sum(w[:, None] * (yb * np.log(pb) + (1 - yb) * np.log(1 - pb)))
    rc = f_hat - (np.sum(data.Ce * x_hat, axis=1) + data.f0)
    C1 = np.sum(w * rc**2)
    C2 = 0.0
    if data.r0_eq.shape[1]:
        C2 += np.sum(w * np.sum((_apply(data.Ae_eq, x_hat) + data.r0_eq) ** 2, axis=1))
    if data.r0_in.shape[1]:
        C2 += np.sum(w * np.sum(np.maximum(0.0, _apply(data.Ae_in, x_hat) + data.r0_in), axis=1))
    return {"A1": float(A1), "A2": float(A2), "C1": float(C1), "C2": float(C2)}


def linear_loss_terms(data: ClemoData, B: np.ndarray) -> dict:
    """The loss terms (:func:`loss_terms`) of the linear/logistic surrogate with coefficients `B`.

    Examples
    --------
    >>> import numpy as np
    >>> from explainopt import clemo
    >>> from explainopt.problems import Knapsack
    >>> problem = Knapsack([10.0, 7.0, 4.0, 3.0], [5.0, 4.0, 3.0, 2.0], solver="highs")  # capacity 1
    >>> data = clemo.build_dataset(problem, n_samples=50, random_state=0)
    >>> lr = clemo.fit_lr(data)
    >>> clemo.linear_loss_terms(data, lr.coef) == lr.terms
    True
    """
    Z = data.X @ B
    f_hat, x_hat = predict(data, B)
    return loss_terms(data, f_hat, x_hat, Z_binary=Z[:, 1:][:, data.binary])


def total_loss(terms: dict, lambdas: dict) -> float:
    """λ_A1 A1 + λ_A2 A2 + λ_C1 R_C1 + λ_C2 R_C2 (Section 4, "Setup").

    Examples
    --------
    >>> from explainopt.clemo import total_loss
    >>> total_loss({"A1": 2.0, "A2": 0.0, "C1": 1.0, "C2": 4.0}, {"A1": 1.0, "A2": 1.0, "C1": 0.5, "C2": 0.25})
    3.5
    """
    return float(sum(lambdas[k] * terms[k] for k in TERMS))


def balance_lambdas(terms: dict, *, rule: str = "paper", floor: float = 1e-3) -> dict:
    """λ of Algorithm 3 from the loss terms of the LR benchmark.

    ``paper``: λ_j = 1 for the largest term and for zero terms, else 0.5 L_max / L_j. ``code`` (the
    authors' knapsack script): λ_A = 1, λ_C = round(0.5 (A1 + A2) / max(L_C, 10⁻³), 1).

    Examples
    --------
    >>> from explainopt.clemo import balance_lambdas
    >>> balance_lambdas({"A1": 8.0, "A2": 0.0, "C1": 2.0, "C2": 1.0})
    {'A1': 1.0, 'A2': 1.0, 'C1': 2.0, 'C2': 4.0}
    """
    if rule == "paper":
        L_max = max(terms.values())
        return {k: 1.0 if (v == L_max or v <= 0) else 0.5 * L_max / max(v, floor) for k, v in terms.items()}
    if rule == "code":
        acc = terms["A1"] + terms["A2"]
        return {"A1": 1.0, "A2": 1.0, "C1": round(0.5 * acc / max(terms["C1"], floor), 1),
                "C2": round(0.5 * acc / max(terms["C2"], floor), 1)}
    raise ValueError(f"rule={rule!r}: expected 'paper' or 'code'")


def loss_and_gradient(data: ClemoData, B: np.ndarray, lambdas: dict) -> tuple[float, np.ndarray]:
    """The total loss of eq. (10) and its (sub)gradient with respect to B.

    Examples
    --------
    >>> import numpy as np
    >>> from explainopt import clemo
    >>> from explainopt.problems import Knapsack
    >>> problem = Knapsack([10.0, 7.0, 4.0, 3.0], [5.0, 4.0, 3.0, 2.0], solver="highs")  # capacity 1
    >>> data = clemo.build_dataset(problem, n_samples=50, random_state=0)
    >>> B, lambdas = clemo.fit_lr(data).coef, {"A1": 1.0, "A2": 1.0, "C1": 1.0, "C2": 1.0}
    >>> loss, gradient = clemo.loss_and_gradient(data, B, lambdas)
    >>> terms = clemo.linear_loss_terms(data, B)
    >>> gradient.shape == B.shape, bool(np.isclose(loss, clemo.total_loss(terms, lambdas)))
    (True, True)
    """
    w, y = data.weights, data.y
    Z = data.X @ B
    f_hat, x_hat = Z[:, 0], Z[:, 1:].copy()
    bin_ = data.binary
    sig = sigmoid(Z[:, 1:][:, bin_])
    x_hat[:, bin_] = sig
    terms = loss_terms(data, f_hat, x_hat, Z_binary=Z[:, 1:][:, bin_])
    lA1, lA2, lC1, lC2 = (lambdas[k] for k in TERMS)
    rc = f_hat - (np.sum(data.Ce * x_hat, axis=1) + data.f0)
    g_f = 2 * w * (lA1 * (f_hat - y[:, 0]) + lC1 * rc)
    g_x = -2 * lC1 * (w * rc)[:, None] * data.Ce
    cont = ~bin_
    g_x[:, cont] += 2 * lA1 * w[:, None] * (x_hat[:, cont] - y[:, 1:][:, cont])
    if data.r0_eq.shape[1]:
        r = _apply(data.Ae_eq, x_hat) + data.r0_eq
        g_x += lC2 * _apply_T(data.Ae_eq, 2 * w[:, None] * r)
    if data.r0_in.shape[1]:
        r = _apply(data.Ae_in, x_hat) + data.r0_in
        g_x += lC2 * _apply_T(data.Ae_in, w[:, None] * (r > 0))
    G = np.empty_like(Z)
    G[:, 0] = g_f
    G[:, 1:] = g_x
    G[:, 1:][:, bin_] = g_x[:, bin_] * sig * (1 - sig) + lA2 * w[:, None] * (sig - y[:, 1:][:, bin_])
    return total_loss(terms, lambdas), data.X.T @ G


# =========================================================================== benchmarks

@dataclass
class Surrogate:
    """A fitted explanation: predictions on the data, loss terms, coefficients (linear) and timing."""

    method: str
    f_hat: np.ndarray
    x_hat: np.ndarray
    terms: dict
    fit_time: float
    coef: np.ndarray | None = None
    importances: np.ndarray | None = None   # (1+q, features) feature importances of trees
    loss: float | None = None
    lambdas: dict | None = None
    history: list = field(default_factory=list)   # (iteration, seconds, total loss, incoherence C1 + C2)
    status: str = "converged"
    n_iter: int = 0
    solver: str = ""
    info: dict = field(default_factory=dict)      # convex path: model/compile and solve seconds, the dual's gap

    @property
    def accuracy(self) -> float:
        return self.terms["A1"] + self.terms["A2"]


def fit_lr(data: ClemoData, *, C: float = 1.0) -> Surrogate:
    """The LR benchmark (eq. (5)): weighted least squares per continuous component, sklearn logistic
    regression (L2, C=1 as the authors' code; the paper says "no regularization") per binary one.

    Examples
    --------
    >>> import numpy as np
    >>> from explainopt import clemo
    >>> from explainopt.problems import Knapsack
    >>> problem = Knapsack([10.0, 7.0, 4.0, 3.0], [5.0, 4.0, 3.0, 2.0], solver="highs")  # capacity 1
    >>> data = clemo.build_dataset(problem, n_samples=50, random_state=0)
    >>> lr = clemo.fit_lr(data)
    >>> lr.method, lr.coef.shape  # (features + intercept, objective + decisions)
    ('LR', (9, 5))
    """
    start = time.perf_counter()
    sw = np.sqrt(data.weights)[:, None]
    y = data.y
    B = np.zeros((data.X.shape[1], y.shape[1]))
    cont = np.concatenate([[True], ~data.binary])
    B[:, cont] = np.linalg.lstsq(sw * data.X, sw * y[:, cont], rcond=None)[0]
    for j in np.flatnonzero(~cont):
        model = LogisticRegression(C=C, max_iter=10_000)
        model.fit(data.X[:, :-1], y[:, j].astype(int), sample_weight=data.weights)
        B[:-1, j], B[-1, j] = model.coef_[0], model.intercept_[0]
    elapsed = time.perf_counter() - start
    f_hat, x_hat = predict(data, B)
    return Surrogate("LR", f_hat, x_hat, linear_loss_terms(data, B), elapsed, coef=B)


def fit_dtr(data: ClemoData, *, max_depth: int = 5, min_samples_leaf: int = 50, random_state=0) -> Surrogate:
    """The DTR benchmark: one regression tree per component (Section 4.2).

    Examples
    --------
    >>> import numpy as np
    >>> from explainopt import clemo
    >>> from explainopt.problems import Knapsack
    >>> problem = Knapsack([10.0, 7.0, 4.0, 3.0], [5.0, 4.0, 3.0, 2.0], solver="highs")  # capacity 1
    >>> data = clemo.build_dataset(problem, n_samples=50, random_state=0)
    >>> dtr = clemo.fit_dtr(data, max_depth=3, min_samples_leaf=10)
    >>> dtr.method, dtr.importances.shape
    ('DTR', (5, 8))
    """
    start = time.perf_counter()
    preds, imps = [], []
    for j in range(data.y.shape[1]):
        tree = DecisionTreeRegressor(max_depth=max_depth, min_samples_leaf=min_samples_leaf,
                                     random_state=random_state)
        tree.fit(data.X[:, :-1], data.y[:, j], sample_weight=data.weights)
        preds.append(tree.predict(data.X[:, :-1]))
        imps.append(tree.feature_importances_)
    elapsed = time.perf_counter() - start
    P = np.column_stack(preds)
    return Surrogate("DTR", P[:, 0], P[:, 1:], loss_terms(data, P[:, 0], P[:, 1:]), elapsed,
                     importances=np.vstack(imps))


# =========================================================================== CLEMO (eq. (10))

class _TimeUp(Exception):
    pass


def _finish(data, method, B, lambdas, start, history, status, n_iter, solver, info=None):
    elapsed = time.perf_counter() - start
    f_hat, x_hat = predict(data, B)
    terms = linear_loss_terms(data, B)
    return Surrogate(f"CLEMO ({method})", f_hat, x_hat, terms, elapsed, coef=B, loss=total_loss(terms, lambdas),
                     lambdas=lambdas, history=history, status=status, n_iter=n_iter, solver=solver, info=info or {})


def _fit_scipy(data, B0, lambdas, method, maxiter, time_limit, tol):
    shape, start, history = B0.shape, time.perf_counter(), []
    best = {"x": B0.ravel().copy()}

    def fun(b):
        if time_limit is not None and time.perf_counter() - start > time_limit:
            raise _TimeUp
        loss, grad = loss_and_gradient(data, b.reshape(shape), lambdas)
        return loss, grad.ravel()

    def record(b):
        terms = linear_loss_terms(data, np.reshape(b, shape))
        history.append((len(history), time.perf_counter() - start, total_loss(terms, lambdas),
                        terms["C1"] + terms["C2"]))

    def callback(xk, *args):
        record(xk)
        if history[-1][2] <= best["loss"]:   # a capped run returns its best iterate, not its last one
            best["x"], best["loss"] = np.array(xk, copy=True), history[-1][2]

    record(B0)
    best["loss"] = history[0][2]
    options = {"maxiter": maxiter}
    if method == "SLSQP":
        options["ftol"] = tol
    else:
        options.update(ftol=tol, gtol=1e-10, maxcor=20, maxfun=10 * maxiter)
    try:
        res = minimize(fun, B0.ravel(), jac=True, method=method, callback=callback, options=options)
        x, n_iter = res.x, int(res.nit)
        status = "converged" if res.success else ("iteration_limit" if n_iter >= maxiter else "stopped")
        if not res.success:
            log.info("%s ended: %s", method, res.message)
    except _TimeUp:
        x, n_iter, status = best["x"], len(history) - 1, "time_limit"
    return x.reshape(shape), start, history, status, n_iter


# --------------------------------------------------------------------------- the convex path (Proposition 3.1)
#
# With linear surrogates every coherence term is a function of "Kronecker rows" x_iᵀ B v: sample i's
# features times the coefficients times a vector v over the outputs (g_f, ĝ_x): v = (1, −c_i) for the
# objective incoherence (g_f − c_iᵀĝ_x), v = (0, a_r) for a constraint row a_rᵀĝ_x. A set of such rows is
# kept as (sample index per row, V) and never expanded into coefficients-wide matrices unless a cvxpy
# model needs it (:func:`_dense_rows`).

def _constraint_rows(Ae: np.ndarray, n_samples: int) -> tuple[np.ndarray, np.ndarray]:
    """(sample of each row, V) of the rows Ae_i ĝ_x of shared (m, q) or per-sample (N, m, q) matrices."""
    Ae = np.broadcast_to(Ae, (n_samples,) + Ae.shape) if Ae.ndim == 2 else Ae
    m = Ae.shape[1]
    V = np.concatenate([np.zeros(Ae.shape[:2] + (1,)), Ae], axis=2).reshape(n_samples * m, Ae.shape[2] + 1)
    return np.repeat(np.arange(n_samples), m), V


def _dense_rows(X: np.ndarray, index: np.ndarray, V: np.ndarray) -> np.ndarray:
    """Rows K (len(index), features·(1+q)) with K vec(B) = x_{index}ᵀ B v per row (vec in C order)."""
    return (X[index][:, :, None] * V[:, None, :]).reshape(len(index), -1)


def _fit_convex(data, lambdas, solver):
    """Eq. (10) as a convex QP in B (Proposition 3.1; all components continuous), modelled in cvxpy."""
    start = time.perf_counter()
    X, w, y = data.X, data.weights, data.y
    N, (k1, q1) = len(w), (X.shape[1], y.shape[1])
    sw = np.sqrt(w)
    # Accuracy term through a QR factorization: ||diag(√w)(XB − Y)||² = ||RB − QᵀY_w||² + const.
    Qm, R = np.linalg.qr(sw[:, None] * X)
    Yw = sw[:, None] * y
    QtY = Qm.T @ Yw
    acc_const = float(np.sum(Yw**2) - np.sum(QtY**2))
    B = cp.Variable((k1, q1))
    b = cp.vec(B, order="C")
    objective = lambdas["A1"] * (cp.sum_squares(R @ B - QtY) + acc_const)
    V_obj = np.column_stack([np.ones(N), -data.Ce])
    objective += lambdas["C1"] * cp.sum_squares(cp.multiply(sw, _dense_rows(X, np.arange(N), V_obj) @ b - data.f0))
    if data.r0_eq.shape[1]:
        index, V = _constraint_rows(data.Ae_eq, N)
        objective += lambdas["C2"] * cp.sum_squares(cp.multiply(sw[index], _dense_rows(X, index, V) @ b
                                                                + data.r0_eq.ravel()))
    if data.r0_in.shape[1]:
        index, V = _constraint_rows(data.Ae_in, N)
        objective += lambdas["C2"] * (w[index] @ cp.pos(_dense_rows(X, index, V) @ b + data.r0_in.ravel()))
    problem = cp.Problem(cp.Minimize(objective))
    modelled = time.perf_counter() - start
    result = solve(problem, solver=solver)
    if not result.has_solution:
        raise RuntimeError(f"convex CLEMO fit ended with status {result.status}: {result.message}")
    stats = problem.solver_stats
    info = {"model_s": modelled, "compile_s": float(getattr(problem, "compilation_time", None) or float("nan")),
            "solve_s": float(stats.solve_time) if stats and stats.solve_time is not None else float("nan")}
    status = "optimal" if result.status == "optimal" else result.status
    return np.asarray(B.value), start, status, result.solver, info


def _fit_convex_dual(data, lambdas):
    """Eq. (10) for continuous components, solved exactly through its structure.

    Whitened coefficients P = R B (RᵀR = XᵀWX, x̃_i = R⁻ᵀx_i) turn the accuracy term into
    λ_A1‖P − P_LR‖² + const (P_LR: the LR fit); every other term is a function of Kronecker rows
    x̃_iᵀ P v: smooth rows S (objective incoherence, squared equality rows; weights κ) and hinge rows H
    (positive parts of inequality rows, eq. (9); weights c = λ_C2 w). With Q = 2λ_A1 I + 2SᵀS and
    g = 2λ_A1 p_LR + 2Sᵀσ, strong duality of the hinge terms (max(0, z) = max over 0 ≤ α ≤ 1 of α z)
    gives the box QP ``min ½αᵀGα − hᵀα, 0 ≤ α ≤ c`` with G = HQ⁻¹Hᵀ, h = HQ⁻¹g + ρ, and
    p = Q⁻¹(g − Hᵀα). Inner products of Kronecker rows are (x̃_i·x̃_j)(v·v'), and Q⁻¹ is a Woodbury
    identity in the rows of S, so every matrix formed is rows × rows (samples × samples for the
    knapsack), never coefficients × coefficients: at 40 items 1000 × 1000 instead of 3321 × 3321.

    The box QP is solved by :func:`_box_qp`. ``info["gap"]`` bounds the distance of the returned loss
    to the global optimum: the duality gap Σ (c max(0, z) − α z) of the hinge terms at z = Hp + ρ plus
    the stationarity residual r = Qp − g + Hᵀα in the Q⁻¹ norm, ½ rᵀQ⁻¹r.
    """
    start = time.perf_counter()
    X, w, y = data.X, data.weights, data.y
    N, q1 = len(w), y.shape[1]
    a = 2 * lambdas["A1"]
    R = sla.cholesky(X.T @ (w[:, None] * X), lower=False)
    Xt = sla.solve_triangular(R, X.T, trans="T", lower=False).T          # rows x̃_i
    P_lr = Xt.T @ (w[:, None] * y)
    # smooth rows: objective incoherence, then squared equality rows
    iS, VS, kS, tS = [np.arange(N)], [np.column_stack([np.ones(N), -data.Ce])], [lambdas["C1"] * w], [data.f0]
    if data.r0_eq.shape[1]:
        index, V = _constraint_rows(data.Ae_eq, N)
        iS.append(index), VS.append(V), kS.append(lambdas["C2"] * w[index]), tS.append(-data.r0_eq.ravel())
    iS, VS, sk, tS = np.concatenate(iS), np.vstack(VS), np.sqrt(np.concatenate(kS)), np.concatenate(tS)
    iH, VH = _constraint_rows(data.Ae_in, N)
    c, rho = lambdas["C2"] * w[iH], data.r0_in.ravel()
    weighted = c > 0                               # rows of zero weight do not enter the loss
    iH, VH, c, rho = iH[weighted], VH[weighted], c[weighted], rho[weighted]

    def rows(index, V, Pm, scale=None):            # (x̃_{i}ᵀ P v) per row
        out = np.einsum("jk,jk->j", Xt[index] @ Pm, V)
        return out if scale is None else scale * out

    def rows_T(index, V, beta):                    # Σ_j β_j x̃_{i_j} v_jᵀ (features × outputs)
        return Xt[index].T @ (beta[:, None] * V)

    Gx = Xt @ Xt.T
    M = Gx[np.ix_(iS, iS)] * (VS @ VS.T) * np.outer(sk, sk)
    M[np.diag_indices_from(M)] += a / 2
    M_factor = sla.cho_factor(M, lower=True)

    def Q_inv(Vm):                                 # (aI + 2SᵀS)⁻¹ = (I − Sᵀ(a/2 I + SSᵀ)⁻¹S)/a
        return (Vm - rows_T(iS, VS, sk * sla.cho_solve(M_factor, rows(iS, VS, Vm, sk)))) / a

    g = a * P_lr + 2 * rows_T(iS, VS, sk * sk * tS)
    alpha, n_iter, solved = np.zeros(0), 0, 0.0
    if len(c):
        SH = Gx[np.ix_(iS, iH)] * (VS @ VH.T) * sk[:, None]
        Z = sla.solve_triangular(M_factor[0], SH, lower=True)
        G = (Gx[np.ix_(iH, iH)] * (VH @ VH.T) - Z.T @ Z) / a
        h = rows(iH, VH, Q_inv(g)) + rho
        built = time.perf_counter()
        alpha, n_iter = _box_qp(G, h, c)
        solved = time.perf_counter() - built
    P = Q_inv(g - rows_T(iH, VH, alpha)) if len(c) else Q_inv(g)
    z = rows(iH, VH, P) + rho
    r = a * P + 2 * rows_T(iS, VS, sk * rows(iS, VS, P, sk)) - g + rows_T(iH, VH, alpha)
    gap = float(np.sum(c * np.maximum(0.0, z) - alpha * z) + 0.5 * np.sum(r * Q_inv(r)))
    B = sla.solve_triangular(R, P, lower=False)
    elapsed = time.perf_counter() - start
    return B, start, {"model_s": elapsed - solved, "solve_s": solved, "iterations": n_iter, "gap": gap}


def _box_qp(G: np.ndarray, h: np.ndarray, upper: np.ndarray) -> tuple[np.ndarray, int]:
    """``min ½αᵀGα − hᵀα s.t. 0 ≤ α ≤ upper`` for a dense positive semidefinite G: SciPy's L-BFGS-B on
    α = upper·β, β ∈ [0, 1] (scaled so the box is the unit cube). Any α in the box gives the dual fit a
    certified gap (:func:`_fit_convex_dual`), so the solver's own tolerance decides no guarantee.
    Returns α and the iterations."""
    Gs, hs = G * np.outer(upper, upper), h * upper
    scale = max(float(np.abs(Gs).max(initial=0.0)), float(np.abs(hs).max(initial=0.0)), 1e-300)
    Gs, hs = Gs / scale, hs / scale

    def objective(b):
        Gb = Gs @ b
        return 0.5 * b @ Gb - hs @ b, Gb - hs

    result = minimize(objective, np.full(len(h), 0.5), jac=True, method="L-BFGS-B", bounds=[(0.0, 1.0)] * len(h),
                      options={"maxiter": 20_000, "maxcor": 30, "ftol": 1e-16, "gtol": 1e-13})
    return upper * np.clip(result.x, 0.0, 1.0), int(result.nit)


#: fit_clemo's gradient methods -> (scipy.optimize.minimize's method, the solver name a fit reports)
SCIPY_METHODS = {"slsqp": ("SLSQP", "scipy-slsqp"), "lbfgs": ("L-BFGS-B", "scipy-lbfgsb")}
#: The largest number of rows (hinge rows, or smooth rows of the Woodbury identity) of the dual path's
#: dense rows × rows matrices (8 · 4000² bytes = 128 MB each); beyond it ``auto`` uses the primal path.
DUAL_MAX_ROWS = 4000
#: Relative bound on the dual path's distance to the global optimum; above it the fit is solved again
#: by the primal path.
DUAL_GAP_TOL = 1e-8


def fit_clemo(data: ClemoData, *, method: str = "slsqp", warm_start: Surrogate | None = None,
              lambdas: dict | None = None, rule: str = "paper", maxiter: int = 1000,
              time_limit: float | None = None, tol: float = 1e-10, solver: str | None = None,
              formulation: str = "auto") -> Surrogate:
    """Fit CLEMO (eq. (10)) with the λ of Algorithm 3 computed from the LR benchmark.

    method : ``slsqp`` (the paper's method, warm-started from LR, at most `maxiter` iterations and,
        if given, `time_limit` seconds: then the best iterate so far is returned with status ``time_limit``),
        ``lbfgs`` (L-BFGS-B from the same start) or ``convex`` (the global optimum; continuous components only).
    formulation : for ``convex``: ``dual`` (:func:`_fit_convex_dual`: the box QP of the hinge multipliers,
        every matrix samples × samples, solved by SciPy's L-BFGS-B with a certified gap; reported
        solver ``clemo-dual``), ``primal`` (the QP in B modelled in cvxpy and solved by
        :func:`explainopt.solvers.solve`) or ``auto``: the dual path when λ_A1 > 0, no solver is named and its
        rows stay below :data:`DUAL_MAX_ROWS` and ten times the coefficients; otherwise the primal path. A
        dual fit whose certified gap exceeds :data:`DUAL_GAP_TOL` of its loss is solved again by the primal path.
    solver : for the ``primal`` convex path: the solver of :func:`explainopt.solvers.solve` (None or
        ``"auto"``: the default). Naming one sends ``auto`` to the primal path.

    Examples
    --------
    >>> import numpy as np
    >>> from explainopt import clemo
    >>> from explainopt.problems import Knapsack
    >>> problem = Knapsack([10.0, 7.0, 4.0, 3.0], [5.0, 4.0, 3.0, 2.0], solver="highs")  # capacity 1
    >>> data = clemo.build_dataset(problem, n_samples=50, random_state=0)
    >>> lr, fit = clemo.fit_lr(data), clemo.fit_clemo(data, method="convex")
    >>> fit.status, fit.solver
    ('optimal', 'clemo-dual')
    >>> bool(fit.terms["C1"] + fit.terms["C2"] < lr.terms["C1"] + lr.terms["C2"])  # more coherent than LR
    True
    """
    if method not in ("slsqp", "lbfgs", "convex"):
        raise ValueError(f"method={method!r}: expected 'slsqp', 'lbfgs' or 'convex'")
    if formulation not in ("auto", "primal", "dual"):
        raise ValueError(f"formulation={formulation!r}: expected 'auto', 'primal' or 'dual'")
    lr = warm_start or fit_lr(data)
    lambdas = lambdas or balance_lambdas(lr.terms, rule=rule)
    if method == "convex":
        if data.binary.any():
            raise ValueError("the convex path needs all explained components continuous (Proposition 3.1); "
                             "use method='lbfgs' or 'slsqp' for logistic components")
        N, n_coef = data.n_samples, data.X.shape[1] * data.y.shape[1]
        rows = max(N * (1 + data.r0_eq.shape[1]), data.r0_in.size)
        if formulation == "auto":
            # the dual's work grows with rows² to rows³ (rows × rows matrices), the primal's with the
            # coefficients: measured with 1000 samples (one BLAS thread), 5 items (66
            # coefficients) 1.0 s primal vs 1.3 s dual, 40 items (3321) 100 s primal vs 1.3 s dual
            dual_ok = (lambdas["A1"] > 0 and rows <= min(DUAL_MAX_ROWS, 10 * n_coef)
                       and str(solver or "auto").lower() == "auto")
            formulation = "dual" if dual_ok else "primal"
        if formulation == "dual":
            if lambdas["A1"] <= 0:
                raise ValueError("the dual convex path needs λ_A1 > 0 (a strictly convex accuracy term)")
            B, start, info = _fit_convex_dual(data, lambdas)
            fit = _finish(data, method, B, lambdas, start, [], "optimal", int(info["iterations"]), "clemo-dual", info)
            if info["gap"] <= DUAL_GAP_TOL * max(1.0, abs(fit.loss)):
                return fit
            log.warning("dual CLEMO fit: certified gap %.3g above %.1g of the loss %.6g (%d rows); solving the "
                        "primal QP", info["gap"], DUAL_GAP_TOL, fit.loss, rows)
        B, start, status, name, info = _fit_convex(data, lambdas, solver)
        return _finish(data, method, B, lambdas, start, [], status, 0, name, info)
    scipy_method, solver_name = SCIPY_METHODS[method]
    B, start, history, status, n_iter = _fit_scipy(data, lr.coef, lambdas, scipy_method, maxiter, time_limit, tol)
    return _finish(data, method, B, lambdas, start, history, status, n_iter, solver_name)


# =========================================================================== stability (Table 2)

def contributions(surrogate: Surrogate, data: ClemoData) -> np.ndarray:
    """Feature contributions per component (1+q, features): β_ck·θ0_k for linear surrogates (at the
    present problem, intercept excluded), feature importances for trees.

    Examples
    --------
    >>> import numpy as np
    >>> from explainopt import clemo
    >>> from explainopt.problems import Knapsack
    >>> problem = Knapsack([10.0, 7.0, 4.0, 3.0], [5.0, 4.0, 3.0, 2.0], solver="highs")  # capacity 1
    >>> data = clemo.build_dataset(problem, n_samples=50, random_state=0)
    >>> clemo.contributions(clemo.fit_lr(data), data).shape  # (objective + 4 decisions, 8 features)
    (5, 8)
    """
    if surrogate.coef is not None:
        return (surrogate.coef[:-1, :] * data.X[0, :-1, None]).T
    return surrogate.importances


def top_features(contrib: np.ndarray, k: int, *, eps: float = 1e-3) -> list[set]:
    """Per component, the k features with the largest ``|contribution|`` above `eps` (fewer if not enough).

    Examples
    --------
    >>> import numpy as np
    >>> from explainopt.clemo import top_features
    >>> [sorted(int(j) for j in top) for top in top_features(np.array([[0.5, -2.0, 0.0], [1.0, 0.2, 0.3]]), 2)]
    [[0, 1], [0, 2]]
    """
    out = []
    for row in np.abs(contrib):
        order = [j for j in np.argsort(-row, kind="stable") if row[j] > eps]
        out.append(set(order[:k]))
    return out


def stability(contribs: list[np.ndarray], *, top: int = 5, eps: float = 1e-3) -> dict:
    """Std and normalized std ``|std/mean|`` over resamples of the top-`top` contributions (by ``|mean|``,
    with ``|mean| > eps``) of each component, averaged over components and features.

    Examples
    --------
    >>> import numpy as np
    >>> from explainopt.clemo import stability
    >>> resamples = [np.array([[1.0, -2.0]]), np.array([[1.2, -2.0]]), np.array([[0.8, -2.0]])]
    >>> {name: round(value, 4) for name, value in stability(resamples, top=2).items()}
    {'std': 0.0816, 'normalized_std': 0.0816}
    """
    C = np.stack(contribs)                      # (R, components, features)
    mean, std = C.mean(axis=0), C.std(axis=0)
    stds, norms = [], []
    for j in range(C.shape[1]):
        idx = [i for i in np.argsort(-np.abs(mean[j])) if abs(mean[j, i]) > eps][:top]
        stds += list(std[j, idx])
        norms += list(np.abs(std[j, idx] / mean[j, idx]))
    return {"std": float(np.mean(stds)) if stds else float("nan"),
            "normalized_std": float(np.mean(norms)) if norms else float("nan")}


def feature_stability_index(contribs: list[np.ndarray], *, k_max: int = 5, eps: float = 1e-3) -> float:
    """FSI (Appendix A.4.2): Σ_{k=1..5} of the mean (k, j)-concordance ``|F_kj^r1 ∩ F_kj^r2| / k`` over all
    pairs of resamples and all components j. Between 0 and 5; higher is more stable.

    Examples
    --------
    >>> import numpy as np
    >>> from explainopt.clemo import feature_stability_index
    >>> same = [np.array([[3.0, 2.0, 1.0]])] * 2
    >>> swapped = [np.array([[3.0, 2.0, 1.0]]), np.array([[2.0, 3.0, 1.0]])]
    >>> feature_stability_index(same, k_max=3), round(feature_stability_index(swapped, k_max=3), 4)
    (3.0, 2.0)
    """
    if len(contribs) < 2:
        raise ValueError("the FSI needs at least two resamples")
    total = 0.0
    for k in range(1, k_max + 1):
        tops = [top_features(c, k, eps=eps) for c in contribs]
        conc = [len(a[j] & b[j]) / k for a, b in combinations(tops, 2) for j in range(len(a))]
        total += float(np.mean(conc))
    return total
