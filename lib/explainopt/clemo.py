"""Coherent local explanations of optimization models (CLEMO; Otto, Kurtz & Birbil).

What this module offers, with the paper's equations:

- :func:`build_dataset`: Algorithm 2: θ0 plus valid samples around it, solved by the problem's algorithm
  h, with RBF proximity weights (eq. (11)); kernel width ν = mean distance to θ0. The authors' code uses
  ``exp(-d²/(2ν²))`` while the paper writes ``exp(-d²/ν²)``: ``kernel="code"`` (default) or ``"paper"``.
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
  the loss is convex in B; solved to global optimality by cvxpy/Clarabel).
- Stability over resamples: :func:`contributions`, :func:`stability` (std and normalized std of the
  top-5 contributions) and :func:`feature_stability_index` (FSI of Appendix A.4.2).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from itertools import combinations

import numpy as np

log = logging.getLogger(__name__)

TERMS = ("A1", "A2", "C1", "C2")


def single_threaded_blas(func):
    """Run `func` with one BLAS thread (threadpoolctl, a scikit-learn dependency).

    The experiments' dense linear algebra (Cholesky of a 1326×1326 matrix for the 25-item knapsack) is
    small: multi-threaded OpenBLAS on a shared 2-core machine made it 60× slower (1.7 s vs 0.03 s), and
    the knapsack grid runs its own worker processes anyway.
    """
    import functools

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        try:
            from threadpoolctl import threadpool_limits
        except ImportError:  # pragma: no cover
            return func(*args, **kwargs)
        import scipy.linalg  # noqa: F401  (load the BLAS libraries first: threadpoolctl limits loaded ones)
        import scipy.optimize  # noqa: F401
        with threadpool_limits(limits=1, user_api="blas"):
            return func(*args, **kwargs)

    return wrapper


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

    @property
    def y(self) -> np.ndarray:
        return np.column_stack([self.objective, self.decisions[:, self.explained]])

    @property
    def n_samples(self) -> int:
        return len(self.weights)


def rbf_weights(theta: np.ndarray, *, kernel: str = "code") -> tuple[np.ndarray, float]:
    """RBF proximity weights of eq. (11) w.r.t. the first row θ0; width ν = mean distance (Algorithm 2)."""
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


def _solve_chunk(problem, thetas):
    return [problem.solve(t) for t in thetas]


def solve_many(problem, thetas, *, n_jobs: int = 1) -> list:
    """The problem's algorithm on every row of `thetas` (a list of :class:`Solution`).

    Problems marked ``isolate`` (the CVRP: OR-Tools cannot share a process with highspy) run in fresh
    ``spawn`` worker processes; otherwise ``n_jobs > 1`` uses joblib.
    """
    thetas = np.atleast_2d(thetas)
    if getattr(problem, "isolate", False):
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor

        workers = max(1, n_jobs if n_jobs > 0 else (mp.cpu_count() or 1))
        chunks = [c for c in np.array_split(thetas, min(len(thetas), 4 * workers)) if len(c)]
        with ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("spawn")) as pool:
            return [s for part in pool.map(_solve_chunk, [problem] * len(chunks), chunks) for s in part]
    if n_jobs == 1:
        return _solve_chunk(problem, thetas)
    import joblib

    return joblib.Parallel(n_jobs=n_jobs)(joblib.delayed(problem.solve)(t) for t in thetas)


def solve_samples(problem, thetas, *, n_jobs: int = 1):
    """``(objectives, decisions)`` of the problem's algorithm on every row of `thetas`."""
    sols = solve_many(problem, thetas, n_jobs=n_jobs)
    bad = [i for i, s in enumerate(sols) if s.status not in ("optimal", "time_limit")]
    if bad:
        raise RuntimeError(f"{problem.name}: the algorithm found no solution for samples {bad[:5]}")
    return np.array([s.objective for s in sols]), np.vstack([s.x for s in sols])


def build_dataset(problem, *, n_samples: int = 1000, random_state=None, explained=None,
                  kernel: str = "code", n_jobs: int = 1, drop_constant_binary: bool = True) -> ClemoData:
    """Algorithm 2: sample θ around θ0, solve, weigh; then the coherence structure of eq. (8).

    explained : indices of decision variables to explain (default: ``problem.default_explained``);
        binary components constant over all samples are dropped (as the authors do) and take their
        true values in the coherence terms.
    """
    thetas = problem.sample(n_samples, random_state=random_state)
    start = time.perf_counter()
    objective, decisions = solve_samples(problem, thetas, n_jobs=n_jobs)
    solve_time = time.perf_counter() - start
    weights, width = rbf_weights(thetas, kernel=kernel)
    p = decisions.shape[1]
    if explained is None:
        from .problems import Solution

        explained = problem.default_explained(Solution(objective[0], decisions[0]))
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
        component_names=["f"] + [problem.decision_names[j] for j in explained], solve_time=solve_time)


# =========================================================================== losses (eqs. (7)-(10))

def _apply(Ae, xh):
    return xh @ Ae.T if Ae.ndim == 2 else np.einsum("nmq,nq->nm", Ae, xh)


def _apply_T(Ae, G):
    return G @ Ae if Ae.ndim == 2 else np.einsum("nmq,nm->nq", Ae, G)


def sigmoid(z):
    return 0.5 * (1.0 + np.tanh(0.5 * z))


def predict(data: ClemoData, B: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(g_f, g_x)`` of the linear/logistic surrogate with coefficients B (features+1, 1+q)."""
    Z = data.X @ B
    xh = Z[:, 1:].copy()
    xh[:, data.binary] = sigmoid(xh[:, data.binary])
    return Z[:, 0], xh


def loss_terms(data: ClemoData, f_hat: np.ndarray, x_hat: np.ndarray, *, Z_binary=None) -> dict:
    """Weighted loss terms of eq. (10) for given predictions.

    A1: Σ w (squared errors of the objective and continuous decisions), eq. (7);
    A2: Σ w (log-loss of binary decisions) (probabilities clipped to [1e-12, 1 − 1e-12] unless the
    logits ``Z_binary`` are given); C1: Σ w (g_f − f(g_x; θ))²; C2: Σ w δ(g_x, X(θ)).
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
    Z = data.X @ B
    f_hat, x_hat = predict(data, B)
    return loss_terms(data, f_hat, x_hat, Z_binary=Z[:, 1:][:, data.binary])


def total_loss(terms: dict, lambdas: dict) -> float:
    """λ_A1 A1 + λ_A2 A2 + λ_C1 R_C1 + λ_C2 R_C2 (Section 4, "Setup")."""
    return float(sum(lambdas[k] * terms[k] for k in TERMS))


def balance_lambdas(terms: dict, *, rule: str = "paper", floor: float = 1e-3) -> dict:
    """λ of Algorithm 3 from the loss terms of the LR benchmark.

    ``paper``: λ_j = 1 for the largest term and for zero terms, else 0.5 L_max / L_j. ``code`` (the
    authors' knapsack script): λ_A = 1, λ_C = round(0.5 (A1 + A2) / max(L_C, 10⁻³), 1).
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
    """The total loss of eq. (10) and its (sub)gradient with respect to B."""
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
    history: list = field(default_factory=list)   # (iteration, seconds, total loss)
    status: str = "converged"
    n_iter: int = 0
    solver: str = ""

    @property
    def accuracy(self) -> float:
        return self.terms["A1"] + self.terms["A2"]


def fit_lr(data: ClemoData, *, C: float = 1.0) -> Surrogate:
    """The LR benchmark (eq. (5)): weighted least squares per continuous component, sklearn logistic
    regression (L2, C=1 as the authors' code; the paper says "no regularization") per binary one."""
    from sklearn.linear_model import LogisticRegression

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
    """The DTR benchmark: one regression tree per component (Section 4.2)."""
    from sklearn.tree import DecisionTreeRegressor

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


def _finish(data, method, B, lambdas, start, history, status, n_iter):
    elapsed = time.perf_counter() - start
    f_hat, x_hat = predict(data, B)
    terms = linear_loss_terms(data, B)
    return Surrogate(f"CLEMO ({method})", f_hat, x_hat, terms, elapsed, coef=B, loss=total_loss(terms, lambdas),
                     lambdas=lambdas, history=history, status=status, n_iter=n_iter)


def _fit_scipy(data, B0, lambdas, method, maxiter, time_limit, tol):
    from scipy.optimize import minimize

    shape, start, history = B0.shape, time.perf_counter(), []
    best = {"x": B0.ravel().copy()}

    def fun(b):
        if time_limit is not None and time.perf_counter() - start > time_limit:
            raise _TimeUp
        loss, grad = loss_and_gradient(data, b.reshape(shape), lambdas)
        return loss, grad.ravel()

    def callback(xk, *args):
        loss = total_loss(linear_loss_terms(data, np.reshape(xk, shape)), lambdas)
        history.append((len(history) + 1, time.perf_counter() - start, loss))
        if loss <= best["loss"]:   # a capped run returns its best iterate, not its last one
            best["x"], best["loss"] = np.array(xk, copy=True), loss

    history.append((0, 0.0, total_loss(linear_loss_terms(data, B0), lambdas)))
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


def _fit_convex(data, lambdas, solver):
    """Eq. (10) as a convex QP in B (Proposition 3.1; all components continuous): cvxpy + Clarabel."""
    import cvxpy as cp

    from .solvers import solve

    start = time.perf_counter()
    X, w, y = data.X, data.weights, data.y
    sw = np.sqrt(w)
    k1, q1 = X.shape[1], y.shape[1]
    # Accuracy term through a QR factorization: ||diag(√w)(XB − Y)||² = ||RB − QᵀY_w||² + const.
    Qm, R = np.linalg.qr(sw[:, None] * X)
    Yw = sw[:, None] * y
    QtY = Qm.T @ Yw
    acc_const = float(np.sum(Yw**2) - np.sum(QtY**2))
    B = cp.Variable((k1, q1))
    objective = lambdas["A1"] * (cp.sum_squares(R @ B - QtY) + acc_const)
    # Objective incoherence: r_i = X_i B u_i − f0_i, u_i = (1, −Ce_i): rows X_i ⊗ u_i (dense Kronecker rows).
    U = np.column_stack([np.ones(len(w)), -data.Ce])
    K_obj = (X[:, :, None] * U[:, None, :]).reshape(len(w), -1)
    b = cp.vec(B, order="C")
    objective += lambdas["C1"] * cp.sum_squares(cp.multiply(sw, K_obj @ b - data.f0))
    if data.r0_eq.shape[1]:
        objective += lambdas["C2"] * _eq_term_cvx(data, X, B, b, w)
    if data.r0_in.shape[1]:
        objective += lambdas["C2"] * _in_term_cvx(data, X, B, b, w)
    problem = cp.Problem(cp.Minimize(objective))
    result = solve(problem, solver=solver)
    if not result.has_solution:
        raise RuntimeError(f"convex CLEMO fit ended with status {result.status}: {result.message}")
    return np.asarray(B.value), start, result


def _eq_term_cvx(data, X, B, b, w):
    import cvxpy as cp

    if data.Ae_eq.ndim != 2:
        raise ValueError("per-sample equality rows are not supported by the convex path")
    R = (X @ B)[:, 1:] @ data.Ae_eq.T + data.r0_eq
    return cp.sum(cp.multiply(w[:, None], cp.square(R)))


def _in_term_cvx(data, X, B, b, w):
    import cvxpy as cp

    if data.Ae_in.ndim == 2:
        R = (X @ B)[:, 1:] @ data.Ae_in.T + data.r0_in
        return cp.sum(cp.multiply(w[:, None], cp.pos(R)))
    terms = 0
    for m in range(data.Ae_in.shape[1]):
        A = np.column_stack([np.zeros(len(w)), data.Ae_in[:, m, :]])
        K = (X[:, :, None] * A[:, None, :]).reshape(len(w), -1)
        terms += w @ cp.pos(K @ b + data.r0_in[:, m])
    return terms


def _rows(data, Ae, X):
    """Rows K (N·m, features·(1+q)) with K b = Ae x̂(b) for linear x̂ = X B[:, 1:], b = vec(B) (C order)."""
    N, k1 = X.shape
    Ae = np.broadcast_to(Ae, (N,) + Ae.shape) if Ae.ndim == 2 else Ae
    A1 = np.concatenate([np.zeros(Ae.shape[:2] + (1,)), Ae], axis=2)       # (N, m, 1+q)
    return (X[:, None, :, None] * A1[:, :, None, :]).reshape(N * Ae.shape[1], -1)


def _fit_convex_dual(data, lambdas, solver):
    """Eq. (10) for continuous components, solved exactly through the dual of its hinge terms.

    With b = vec(B), the smooth part is ½bᵀQb − gᵀb (accuracy, objective incoherence, squared equality
    rows) and the hinge part Σ c_r max(0, k_rᵀb + r_r). Strong duality gives the box QP
    ``min ½αᵀGα − hᵀα, 0 ≤ α ≤ c`` with G = K Q⁻¹ Kᵀ, h = K Q⁻¹ g + r (solved by cvxpy), and
    b = Q⁻¹(g − Kᵀα). Same optimum as the primal QP, with a 1000-variable dense QP instead of a
    3321-variable one at 40 items.
    """
    import cvxpy as cp
    import scipy.linalg as sla

    from .solvers import solve

    start = time.perf_counter()
    X, w, y = data.X, data.weights, data.y
    k1, q1 = X.shape[1], y.shape[1]
    U = np.column_stack([np.ones(len(w)), -data.Ce])
    K_obj = (X[:, :, None] * U[:, None, :]).reshape(len(w), -1)
    XtWX, XtWY = X.T @ (w[:, None] * X), X.T @ (w[:, None] * y)
    Q = 2 * lambdas["A1"] * np.kron(XtWX, np.eye(q1)) + 2 * lambdas["C1"] * K_obj.T @ (w[:, None] * K_obj)
    g = 2 * lambdas["A1"] * XtWY.ravel() + 2 * lambdas["C1"] * K_obj.T @ (w * data.f0)
    if data.r0_eq.shape[1]:
        K_eq, m = _rows(data, data.Ae_eq, X), data.r0_eq.shape[1]
        we = np.repeat(w, m)
        Q += 2 * lambdas["C2"] * K_eq.T @ (we[:, None] * K_eq)
        g -= 2 * lambdas["C2"] * K_eq.T @ (we * data.r0_eq.ravel())
    factor = sla.cho_factor(Q)
    if not data.r0_in.shape[1]:
        return sla.cho_solve(factor, g).reshape(k1, q1), start, None
    K_in, m = _rows(data, data.Ae_in, X), data.r0_in.shape[1]
    c = lambdas["C2"] * np.repeat(w, m)
    QiKt = sla.cho_solve(factor, K_in.T)
    G = K_in @ QiKt
    h = QiKt.T @ g + data.r0_in.ravel()
    alpha = cp.Variable(len(c))
    problem = cp.Problem(cp.Minimize(0.5 * cp.quad_form(alpha, cp.psd_wrap(0.5 * (G + G.T))) - h @ alpha),
                         [alpha >= 0, alpha <= c])
    result = solve(problem, solver=solver)
    if not result.has_solution:
        raise RuntimeError(f"convex CLEMO fit (dual) ended with status {result.status}: {result.message}")
    b = sla.cho_solve(factor, g) - QiKt @ np.clip(alpha.value, 0, c)
    return b.reshape(k1, q1), start, result


def fit_clemo(data: ClemoData, *, method: str = "slsqp", warm_start: Surrogate | None = None,
              lambdas: dict | None = None, rule: str = "paper", maxiter: int = 1000,
              time_limit: float | None = None, tol: float = 1e-10, solver: str | None = None,
              formulation: str = "auto") -> Surrogate:
    """Fit CLEMO (eq. (10)) with the λ of Algorithm 3 computed from the LR benchmark.

    method : ``slsqp`` (the paper's method, warm-started from LR, at most `maxiter` iterations and,
        if given, `time_limit` seconds: then the best iterate so far is returned with status ``time_limit``),
        ``lbfgs`` (L-BFGS-B from the same start) or ``convex`` (cvxpy; continuous components only).
    formulation : for ``convex``: ``primal`` (the QP in B), ``dual`` (box QP in the hinge multipliers;
        same optimum, much faster when coefficients outnumber hinge rows, e.g. 3321 vs 1000 at 40
        items) or ``auto`` (primal only when coefficients are under a fifth of the hinge rows).
    """
    if method not in ("slsqp", "lbfgs", "convex"):
        raise ValueError(f"method={method!r}: expected 'slsqp', 'lbfgs' or 'convex'")
    lr = warm_start or fit_lr(data)
    lambdas = lambdas or balance_lambdas(lr.terms, rule=rule)
    if method == "convex":
        if data.binary.any():
            raise ValueError("the convex path needs all explained components continuous (Proposition 3.1); "
                             "use method='lbfgs' or 'slsqp' for logistic components")
        if formulation == "auto":
            n_coef, n_hinge = data.X.shape[1] * data.y.shape[1], data.r0_in.size
            # measured with 1000 samples: primal 0.7 s vs dual 2.0 s at 66 coefficients, 3.0 vs 2.2 s at
            # 231, 27 vs 3.8 s at 861: the dense primal QP only pays when it is much smaller
            formulation = "primal" if 5 * n_coef <= n_hinge else "dual"
        if formulation not in ("primal", "dual"):
            raise ValueError(f"formulation={formulation!r}: expected 'auto', 'primal' or 'dual'")
        fitter = _fit_convex if formulation == "primal" else _fit_convex_dual
        B, start, result = fitter(data, lambdas, solver)
        status = "optimal" if result is None or result.status == "optimal" else result.status
        fit = _finish(data, method, B, lambdas, start, [], status, 0)
        fit.solver = "cholesky" if result is None else result.solver
        return fit
    scipy_method = "SLSQP" if method == "slsqp" else "L-BFGS-B"
    B, start, history, status, n_iter = _fit_scipy(data, lr.coef, lambdas, scipy_method, maxiter, time_limit, tol)
    return _finish(data, method, B, lambdas, start, history, status, n_iter)


# =========================================================================== stability (Table 2)

def contributions(surrogate: Surrogate, data: ClemoData) -> np.ndarray:
    """Feature contributions per component (1+q, features): β_ck·θ0_k for linear surrogates (at the
    present problem, intercept excluded), feature importances for trees."""
    if surrogate.coef is not None:
        return (surrogate.coef[:-1, :] * data.X[0, :-1, None]).T
    return surrogate.importances


def top_features(contrib: np.ndarray, k: int, *, eps: float = 1e-3) -> list[set]:
    """Per component, the k features with the largest |contribution| above `eps` (fewer if not enough)."""
    out = []
    for row in np.abs(contrib):
        order = [j for j in np.argsort(-row, kind="stable") if row[j] > eps]
        out.append(set(order[:k]))
    return out


def stability(contribs: list[np.ndarray], *, top: int = 5, eps: float = 1e-3) -> dict:
    """Std and normalized std |std/mean| over resamples of the top-`top` contributions (by |mean|, with
    |mean| > eps) of each component, averaged over components and features."""
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
    """FSI (Appendix A.4.2): Σ_{k=1..5} of the mean (k, j)-concordance |F_kj^r1 ∩ F_kj^r2| / k over all
    pairs of resamples and all components j. Between 0 and 5; higher is more stable."""
    if len(contribs) < 2:
        raise ValueError("the FSI needs at least two resamples")
    total = 0.0
    for k in range(1, k_max + 1):
        tops = [top_features(c, k, eps=eps) for c in contribs]
        conc = [len(a[j] & b[j]) / k for a, b in combinations(tops, 2) for j in range(len(a))]
        total += float(np.mean(conc))
    return total


# =========================================================================== experiments of Section 4

def _row(method, fit, data=None):
    obj_acc = float(np.sum(data.weights * (fit.f_hat - data.objective) ** 2)) if data is not None else float("nan")
    return {"method": method, "accuracy": fit.accuracy, "objective_accuracy": obj_acc, "A1": fit.terms["A1"], "A2": fit.terms["A2"],
            "objective_incoherence": fit.terms["C1"], "feasibility_incoherence": fit.terms["C2"],
            "fit_time_s": fit.fit_time, "total_loss": fit.loss, "status": fit.status}


@single_threaded_blas
def shortest_path_experiment(*, n_samples: int = 1000, seed: int = 42, maxiter: int = 1000,
                             time_limit: float | None = None, grid: int = 201, kernel: str = "code") -> dict:
    """Section 4.1: LR vs CLEMO (SLSQP and L-BFGS) on the SPP-θ instance; Table 1 and Figure 1 data.

    `kernel`: the RBF weights of the authors' code (``"code"``) or of the paper's eq. (11) (``"paper"``).
    """
    from .problems import ShortestPath

    problem = ShortestPath.from_registry()
    data = build_dataset(problem, n_samples=n_samples, random_state=seed, kernel=kernel)
    lr = fit_lr(data)
    fits = {"LR": lr,
            "CLEMO (SLSQP)": fit_clemo(data, method="slsqp", warm_start=lr, maxiter=maxiter, time_limit=time_limit),
            "CLEMO (L-BFGS)": fit_clemo(data, method="lbfgs", warm_start=lr, maxiter=maxiter, time_limit=time_limit)}
    thetas = np.linspace(*problem.theta_range, grid)[:, None]
    sols = [problem.solve(t) for t in thetas]
    Xg = np.column_stack([problem.features(thetas), np.ones(grid)])
    curves = {"theta": thetas[:, 0], "true_f": np.array([s.objective for s in sols]),
              "true_x": np.vstack([s.x for s in sols])[:, data.explained]}
    for name, fit in fits.items():
        Z = Xg @ fit.coef
        curves[name] = (Z[:, 0], sigmoid(Z[:, 1:]))
    return {"table": [_row(name, fit, data) for name, fit in fits.items()], "curves": curves,
            "components": data.component_names, "lambdas": fits["CLEMO (SLSQP)"].lambdas}


@single_threaded_blas
def knapsack_run(*, kind: str, instance: int, resample: int, n_samples: int = 1000, n_items: int = 25,
                 clemo_method: str = "convex", seed: int = 42, maxiter: int = 1000,
                 time_limit: float | None = None) -> dict:
    """One (instance, resample) of Section 4.2: DTR, LR and CLEMO on the authors' knapsack instance.

    Resample r uses random_state seed + r (the authors' seeds 42..51). Returns the loss terms and the
    feature contributions of each method (for the stability measures of Table 2).
    """
    from .problems import Knapsack

    problem = Knapsack.from_registry(kind, instance, n_items=n_items)
    data = build_dataset(problem, n_samples=n_samples, random_state=seed + resample)
    lr = fit_lr(data)
    fits = {"DTR": fit_dtr(data), "LR": lr,
            "CLEMO": fit_clemo(data, method=clemo_method, warm_start=lr, maxiter=maxiter, time_limit=time_limit)}
    return {"kind": kind, "instance": instance, "resample": resample,
            "rows": [_row(name, fit, data) for name, fit in fits.items()],
            "contributions": {name: contributions(fit, data) for name, fit in fits.items()}}


def knapsack_tables(runs: list[dict]):
    """Table 2 (mean and std over instances×resamples; stability per instance, averaged) and the
    per-run frame behind Figures 5–8."""
    import pandas as pd

    per_run = pd.DataFrame([{"kind": r["kind"], "instance": r["instance"], "resample": r["resample"], **row}
                            for r in runs for row in r["rows"]])
    per_run["incoherence"] = per_run["objective_incoherence"] + per_run["feasibility_incoherence"]
    stab = []
    keys = sorted({(r["kind"], r["instance"]) for r in runs})
    for kind, inst in keys:
        group = [r for r in runs if (r["kind"], r["instance"]) == (kind, inst)]
        if len(group) < 2:
            continue
        for method in group[0]["contributions"]:
            contribs = [r["contributions"][method] for r in group]
            stab.append({"kind": kind, "instance": inst, "method": method, **stability(contribs),
                         "FSI": feature_stability_index(contribs)})
    agg = per_run.groupby(["kind", "method"], sort=False).agg(
        accuracy_mean=("accuracy", "mean"), accuracy_std=("accuracy", "std"),
        objective_mean=("objective_incoherence", "mean"), objective_std=("objective_incoherence", "std"),
        feasibility_mean=("feasibility_incoherence", "mean"), feasibility_std=("feasibility_incoherence", "std"))
    if stab:
        s = pd.DataFrame(stab).groupby(["kind", "method"], sort=False)[["std", "normalized_std", "FSI"]].mean()
        agg = agg.join(s)
    return agg, per_run


@single_threaded_blas
def runtime_run(*, n_items: int, seed: int = 0, n_samples: int = 1000, kind: str = "uncorrelated",
                slsqp_maxiter: int = 1000, slsqp_time_limit: float | None = None) -> dict:
    """Table 3 / Figure 2: DTR, LR and CLEMO (SLSQP, capped; convex; L-BFGS) on one generated instance,
    all on the same samples."""
    from .problems import pisinger_instance

    problem = pisinger_instance(n_items, kind, random_state=seed)
    data = build_dataset(problem, n_samples=n_samples, random_state=42 + seed)
    dtr, lr = fit_dtr(data), fit_lr(data)
    slsqp = fit_clemo(data, method="slsqp", warm_start=lr, maxiter=slsqp_maxiter, time_limit=slsqp_time_limit)
    convex = fit_clemo(data, method="convex", warm_start=lr)
    lbfgs = fit_clemo(data, method="lbfgs", warm_start=lr, maxiter=slsqp_maxiter, time_limit=slsqp_time_limit)
    return {"n_items": n_items, "n_features": 2 * n_items, "seed": seed,
            "DTR_s": dtr.fit_time, "LR_s": lr.fit_time,
            "SLSQP_s": slsqp.fit_time, "SLSQP_loss": slsqp.loss, "SLSQP_iter": slsqp.n_iter,
            "SLSQP_status": slsqp.status,
            "convex_s": convex.fit_time, "convex_loss": convex.loss, "convex_solver": convex.solver,
            "LBFGS_s": lbfgs.fit_time, "LBFGS_loss": lbfgs.loss, "LBFGS_status": lbfgs.status,
            "LR_loss": total_loss(lr.terms, slsqp.lambdas),
            "SLSQP_history": slsqp.history, "LBFGS_history": lbfgs.history}


@single_threaded_blas
def vrp_experiment(*, n_samples: int = 1000, time_limit: float = 5.0, seed: int = 42, n_jobs: int = 1,
                   maxiter: int = 1000, fit_time_limit: float | None = None, distance: str = "notebook") -> dict:
    """Section 4.3: LR vs CLEMO explaining OR-Tools on the CVRP instance (Table 4, Figure 3 data)."""
    from .problems import CVRP

    problem = CVRP.from_registry(time_limit=time_limit, distance=distance)
    data = build_dataset(problem, n_samples=n_samples, random_state=seed, n_jobs=n_jobs)
    lr = fit_lr(data)
    fits = {"LR": lr,
            "CLEMO (SLSQP)": fit_clemo(data, method="slsqp", warm_start=lr, maxiter=maxiter, time_limit=fit_time_limit),
            "CLEMO (L-BFGS)": fit_clemo(data, method="lbfgs", warm_start=lr, maxiter=maxiter, time_limit=fit_time_limit)}
    present = solve_many(problem, problem.theta0)[0]
    return {"table": [_row(name, fit, data) for name, fit in fits.items()],
            "contributions": {name: contributions(fit, data) for name, fit in fits.items()},
            "components": data.component_names, "features": data.feature_names[:-1],
            "routes": present.extra["routes"], "coordinates": problem.coordinates,
            "present_objective": present.objective, "solve_time_s": data.solve_time,
            "n_explained": len(data.explained)}


# =========================================================================== figures

def plot_spp_curves(result: dict, *, components=(0, 1, 2, 3), axes=None):
    """Figure 1 (b, c) / Figure 4: true vs. predicted objective and decision variables along θ."""
    import matplotlib.pyplot as plt

    from .plots import PALETTE

    cur, names = result["curves"], result["components"]
    comps = [c for c in components if c < len(names)]
    if axes is None:
        _, axes = plt.subplots(1, len(comps), figsize=(3.2 * len(comps), 3.0), sharex=True)
    for ax, c in zip(np.atleast_1d(axes), comps):
        true = cur["true_f"] if c == 0 else cur["true_x"][:, c - 1]
        ax.plot(cur["theta"], true, color="black", lw=2, label="Dijkstra")
        for color, name in zip(PALETTE, ("LR", "CLEMO (SLSQP)", "CLEMO (L-BFGS)")):
            f, x = cur[name]
            ax.plot(cur["theta"], f if c == 0 else x[:, c - 1], color=color, ls="--", label=name)
        ax.set_title(names[c])
        ax.set_xlabel("θ")
    np.atleast_1d(axes)[0].legend(fontsize="small")
    return axes


def plot_knapsack_scatter(per_run, *, axes=None):
    """Figures 5–8: total incoherence vs. total accuracy loss per run, one panel per instance type."""
    import matplotlib.pyplot as plt

    from .plots import PALETTE

    kinds = list(dict.fromkeys(per_run["kind"]))
    if axes is None:
        _, axes = plt.subplots(1, len(kinds), figsize=(3.4 * len(kinds), 3.2))
    for ax, kind in zip(np.atleast_1d(axes), kinds):
        sub = per_run[per_run["kind"] == kind]
        for color, (method, grp) in zip(PALETTE, sub.groupby("method", sort=False)):
            ax.scatter(grp["accuracy"], grp["incoherence"] + 1e-6, s=12, color=color, label=method, alpha=0.7)
        ax.set_yscale("log")
        ax.set_title(kind.replace("_", " "))
        ax.set_xlabel("accuracy loss (weighted)")
    np.atleast_1d(axes)[0].set_ylabel("total incoherence (log)")
    np.atleast_1d(axes)[0].legend(fontsize="small")
    return axes


def plot_convergence(runs: list[dict], *, ax=None):
    """Figure 2: CLEMO loss over iterations (SLSQP solid, L-BFGS dotted), relative to the convex optimum."""
    import matplotlib.pyplot as plt

    from .plots import PALETTE

    ax = ax or plt.gca()
    for color, run in zip(PALETTE, runs):
        for key, ls in (("SLSQP_history", "-"), ("LBFGS_history", ":")):
            h = np.array(run[key])
            if len(h):
                gap = np.maximum(h[:, 2] - run["convex_loss"], 1e-12) / run["convex_loss"]
                ax.plot(h[:, 0], gap, ls=ls, color=color,
                        label=f"{run['n_items']} items ({key.split('_')[0]})")
    ax.set_yscale("log")
    ax.set_xscale("symlog", linthresh=1)
    ax.set_xlim(left=0)
    ax.set_xlabel("iteration")
    ax.set_ylabel("(loss − convex optimum) / optimum")
    ax.legend(fontsize="x-small", ncol=2)
    return ax


def plot_vrp_explanation(result: dict, *, method: str = "CLEMO (SLSQP)", component: int = 0, top: int = 10,
                         axes=None):
    """Figure 3: contributions drawn on the network (node colour: demand, depot-arc colour: cost) and
    the top-10 relative contributions."""
    import matplotlib.pyplot as plt

    contrib = result["contributions"][method][component]
    names, xy = result["features"], np.asarray(result["coordinates"])
    n = len(xy)
    rel = contrib / max(np.abs(contrib).sum(), 1e-12)
    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=(10, 4.2), gridspec_kw={"width_ratios": [1.3, 1]})
    ax, bx = axes
    lim = np.abs(rel).max()
    cmap, norm = plt.get_cmap("vlag"), plt.Normalize(-lim, lim)
    for route in result["routes"]:
        ax.plot(xy[route, 0], xy[route, 1], color="0.75", lw=1.5, zorder=1)
    for j in range(1, n):
        ax.plot([xy[0, 0], xy[j, 0]], [xy[0, 1], xy[j, 1]], color=cmap(norm(rel[n - 2 + j])), lw=2.5,
                alpha=0.8, zorder=2)
    ax.scatter(xy[1:, 0], xy[1:, 1], c=[cmap(norm(v)) for v in rel[:n - 1]], s=160, edgecolors="black", zorder=3)
    ax.scatter(*xy[0], marker="s", s=200, color="black", zorder=3)
    for j in range(n):
        ax.annotate(str(j), xy[j], ha="center", va="center", fontsize=7, color="white" if j == 0 else "black", zorder=4)
    ax.set_title(f"{result['components'][component]}: contributions ({method})")
    ax.set_axis_off()
    plt.colorbar(plt.cm.ScalarMappable(norm=norm, cmap=cmap), ax=ax, label="relative contribution",
                 orientation="horizontal", fraction=0.05, pad=0.02)
    order = np.argsort(-np.abs(rel))[:top][::-1]
    bx.barh([names[i] for i in order], rel[order], color=[cmap(norm(rel[i])) for i in order])
    bx.set_xlabel("relative contribution")
    bx.set_title(f"top {top}")
    return axes


# =========================================================================== tables

PAPER_TABLE3_S = {5: 8.54, 10: 50.0, 20: 413.0, 40: ">1000"}

_ROW_COLUMNS = ("accuracy: objective", "accuracy: decisions", "incoherence: objective", "incoherence: feasible region")
#: The paper's Table 1 (SPP-θ) and Table 4 (CVRP), in the column order of :func:`rows_table`.
PAPER_TABLE1 = {"LR": (32.03, 648.06, 112.52, 54.55), "CLEMO": (32.12, 646.28, 6.91, 21.08)}
PAPER_TABLE4 = {"LR": (4.24, 1207.0, 12.35, 802.55), "CLEMO": (4.24, 1198.0, 11.77, 780.26)}
#: The paper's Table 2: (type, method) -> (accuracy μ, objective incoherence μ, feasibility incoherence μ,
#: std, normalized std, FSI). Types 1..4 are kplib's uncorrelated, weakly, strongly and inverse strongly
#: correlated instances.
PAPER_TABLE2 = {
    ("uncorrelated", "DTR"): (405, 6.48, 22.50, 0.18, 5.36, 2.02),
    ("uncorrelated", "LR"): (437, 0.24, 5.49, 0.22, 1.70, 2.44),
    ("uncorrelated", "CLEMO"): (479, 0.08, 0.01, 0.18, 1.75, 2.26),
    ("weakly_correlated", "DTR"): (868, 20.09, 38.55, 0.14, 2.74, 3.00),
    ("weakly_correlated", "LR"): (1076, 1.01, 9.49, 0.19, 0.74, 3.40),
    ("weakly_correlated", "CLEMO"): (1203, 0.38, 0.03, 0.16, 0.81, 3.34),
    ("strongly_correlated", "DTR"): (865, 28.45, 39.41, 0.14, 2.77, 2.91),
    ("strongly_correlated", "LR"): (1061, 1.39, 9.90, 0.20, 0.71, 3.22),
    ("strongly_correlated", "CLEMO"): (1189, 0.58, 0.04, 0.16, 0.79, 3.23),
    ("inverse_strongly_correlated", "DTR"): (893, 13.80, 37.74, 0.14, 2.52, 2.99),
    ("inverse_strongly_correlated", "LR"): (1111, 0.70, 8.94, 0.18, 0.66, 3.31),
    ("inverse_strongly_correlated", "CLEMO"): (1241, 0.27, 0.03, 0.16, 0.77, 3.38),
}


def with_paper_rows(table, paper: dict):
    """Table 1 / Table 4 with the paper's rows ("LR (paper)", "CLEMO (paper)") beside ours."""
    import pandas as pd

    rows = pd.DataFrame([dict(zip(_ROW_COLUMNS, v), status="paper") for v in paper.values()],
                        index=pd.Index([f"{k} (paper)" for k in paper], name=table.index.name))
    return pd.concat([table, rows])


def knapsack_vs_paper(table2):
    """Table 2 means next to the paper's, with the CLEMO/LR ratios (comparable across sample sizes)."""
    import pandas as pd

    cols = ("accuracy", "objective", "feasibility", "std", "normalized_std", "FSI")
    out = []
    for (kind, method), row in table2.iterrows():
        paper = PAPER_TABLE2.get((kind, method))
        rec = {"kind": kind, "method": method}
        for i, c in enumerate(cols):
            key = f"{c}_mean" if c in cols[:3] else c
            rec[f"{c} (ours)"] = row.get(key, float("nan"))
            rec[f"{c} (paper)"] = paper[i] if paper else float("nan")
        out.append(rec)
    return pd.DataFrame(out).set_index(["kind", "method"])


def clemo_vs_lr(table2):
    """Per type: CLEMO's change relative to LR (accuracy cost, objective and feasibility incoherence cuts),
    ours and the paper's."""
    import pandas as pd

    out = []
    for kind in dict.fromkeys(table2.index.get_level_values("kind")):
        lr, cl = table2.loc[(kind, "LR")], table2.loc[(kind, "CLEMO")]
        plr, pcl = PAPER_TABLE2.get((kind, "LR")), PAPER_TABLE2.get((kind, "CLEMO"))
        rec = {"kind": kind,
               "accuracy cost (ours)": cl["accuracy_mean"] / lr["accuracy_mean"] - 1,
               "objective cut (ours)": 1 - cl["objective_mean"] / lr["objective_mean"],
               "feasibility cut (ours)": 1 - cl["feasibility_mean"] / lr["feasibility_mean"]}
        if plr and pcl:
            rec.update({"accuracy cost (paper)": pcl[0] / plr[0] - 1, "objective cut (paper)": 1 - pcl[1] / plr[1],
                        "feasibility cut (paper)": 1 - pcl[2] / plr[2]})
        out.append(rec)
    return pd.DataFrame(out).set_index("kind")


def rows_table(rows: list[dict]):
    """Table 1 / Table 4 layout: accuracy (objective, decisions) and incoherence (objective, feasibility)."""
    import pandas as pd

    frame = pd.DataFrame(rows).set_index("method")
    frame["accuracy: decisions"] = frame["accuracy"] - _objective_accuracy(rows)
    return pd.DataFrame({
        "accuracy: objective": _objective_accuracy(rows),
        "accuracy: decisions": frame["accuracy: decisions"],
        "incoherence: objective": frame["objective_incoherence"],
        "incoherence: feasible region": frame["feasibility_incoherence"],
        "fit time (s)": frame["fit_time_s"],
        "status": frame["status"]})


def _objective_accuracy(rows):
    return [r["objective_accuracy"] for r in rows]


def runtime_table(runs: list[dict]):
    """Table 3 with both CLEMO paths: time and final total loss per size, next to the paper's SLSQP time."""
    import pandas as pd

    out = []
    for r in runs:
        out.append({"#items": r["n_items"], "#features": r["n_features"], "DTR (s)": r["DTR_s"], "LR (s)": r["LR_s"],
                    "paper CLEMO (s)": PAPER_TABLE3_S.get(r["n_items"], ""),
                    "SLSQP (s)": r["SLSQP_s"], "SLSQP iterations": r["SLSQP_iter"], "SLSQP status": r["SLSQP_status"],
                    "convex (s)": r["convex_s"], "L-BFGS (s)": r["LBFGS_s"],
                    "LR loss": r["LR_loss"], "SLSQP loss": r["SLSQP_loss"], "convex loss": r["convex_loss"],
                    "L-BFGS loss": r["LBFGS_loss"],
                    "SLSQP gap to convex (%)": 100 * (r["SLSQP_loss"] - r["convex_loss"]) / r["convex_loss"]})
    return pd.DataFrame(out).set_index("#items")
