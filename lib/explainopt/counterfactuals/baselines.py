"""Baselines of PROPLACE's Table 1 (Jiang et al. 2023) for ReLU networks on inputs in [0, 1].

* :func:`milp_r` -- MILP-R (Jiang et al. 2023a): nearest l1 counterfactual by MILP with a logit margin
  eps, raised step by step until the interval test (with its own delta_target) passes.
* :func:`robx` -- RobX (Dutta et al. 2022): from the nearest counterfactual, the nearest training point
  with counterfactual stability >= tau (mean minus std of the class-1 probability over K Gaussian
  samples), then a line search back towards the nearest counterfactual keeping stability >= tau.
* :func:`wachter` -- Wachter et al. (2017): gradient descent on lam (p(x') - 1)^2 + ||x' - x||_1 / d,
  lam doubled until the counterfactual is valid.
* :func:`roar_style` -- a ROAR-like robust recourse (Upadhyay et al. 2021), gradient based. ROAR
  linearises the model (LIME) and takes the worst l_inf shift of the linear model's weights and bias,
  which lowers the score by delta (||x'||_1 + 1); here the same worst shift of a local linear model is
  applied to the network's own logit: loss lam BCE(f(x') - delta (||x'||_1 + 1), 1) + ||x' - x||_1 / d.
  Not the authors' implementation (no LIME surrogate).

All return the counterfactual as an array or None.
"""

from __future__ import annotations

import copy

import numpy as np

from ..encoders import model_output, model_predict
from .nearest import nearest_counterfactual
from .proplace import delta_robust


def milp_r(model, x, delta_target: float, *, eps0: float = 0.02, step: float = 0.2, max_steps: int = 25,
           solver=None, time_limit=None):
    """MILP-R: returns (x', eps used, robust flag); x' is the last nearest CE found (None if none)."""
    x = np.asarray(x, float)
    last = None
    for s in range(max_steps):
        eps = eps0 + s * step
        res = nearest_counterfactual(model, x, lower=np.zeros_like(x), upper=np.ones_like(x), norm="l1",
                                     margin=eps, solver=solver, time_limit=time_limit)
        if res.x is None:
            break
        last = np.clip(res.x, 0, 1)
        if delta_robust(model, last, delta_target)[0]:
            return last, eps, True
    return last, None, False


def stability(model, X, *, sigma: float = 0.1, K: int = 1000, seed: int = 0) -> np.ndarray:
    """Counterfactual stability of RobX: mean - std of the class-1 probability over K samples N(x, sigma^2)."""
    rng = np.random.default_rng(seed)
    X = np.atleast_2d(np.asarray(X, float))
    out = np.empty(len(X))
    for i, x in enumerate(X):
        p = 1 / (1 + np.exp(-model_output(model, x + sigma * rng.standard_normal((K, x.size)))))
        out[i] = p.mean() - p.std()
    return out


def robx(model, x, X_train, *, sigma: float = 0.1, K: int = 1000, tau: float = 0.5, n_line: int = 20,
         seed: int = 0, base=None, solver=None):
    """RobX over the training points predicted class 1; `base` is the nearest CE (computed if None)."""
    x = np.asarray(x, float)
    if base is None:
        res = nearest_counterfactual(model, x, lower=np.zeros_like(x), upper=np.ones_like(x), solver=solver)
        if res.x is None:
            return None
        base = res.x
    X_train = np.asarray(X_train, float)
    cand = X_train[model_predict(model, X_train) == 1]
    order = np.argsort(np.abs(cand - base).sum(axis=1))
    target = None
    for start in range(0, len(order), 50):
        block = cand[order[start:start + 50]]
        ok = np.flatnonzero(stability(model, block, sigma=sigma, K=K, seed=seed) >= tau)
        if ok.size:
            target = block[ok[0]]
            break
    if target is None:
        return None
    for alpha in np.linspace(0, 1, n_line + 1):  # from the base CE towards the stable training point
        xp = (1 - alpha) * base + alpha * target
        if model_predict(model, xp[None])[0] == 1 and stability(model, xp, sigma=sigma, K=K, seed=seed)[0] >= tau:
            return xp
    return target


def _gradient_ce(model, x, robust_shift: float, *, lam0: float, rounds: int, steps: int, lr: float):
    import torch

    net = copy.deepcopy(model).double()
    for p in net.parameters():
        p.requires_grad_(False)
    x0 = torch.as_tensor(np.asarray(x, float))
    d = x0.numel()
    lam, found = lam0, None
    for _ in range(rounds):
        xp = x0.clone().requires_grad_(True)
        opt = torch.optim.Adam([xp], lr=lr)
        for _ in range(steps):
            logit = net(xp[None])[0, 0]
            dist = (xp - x0).abs().sum() / d
            if robust_shift:
                robust = logit - robust_shift * (xp.abs().sum() + 1)
                loss = lam * torch.nn.functional.softplus(-robust) + dist
            else:
                loss = lam * (torch.sigmoid(logit) - 1) ** 2 + dist
            opt.zero_grad()
            loss.backward()
            opt.step()
            with torch.no_grad():
                xp.clamp_(0, 1)
        cand = xp.detach().numpy().copy()
        logit = float(model_output(model, cand[None])[0])
        ok = logit - robust_shift * (np.abs(cand).sum() + 1) > 0 if robust_shift else logit > 0
        if ok:
            return cand
        found = cand
        lam *= 2
    return found


def wachter(model, x, *, lam0: float = 0.5, rounds: int = 8, steps: int = 300, lr: float = 0.01):
    """Wachter et al.: the first valid gradient-descent counterfactual as lam doubles (else the last)."""
    return _gradient_ce(model, x, 0.0, lam0=lam0, rounds=rounds, steps=steps, lr=lr)


def roar_style(model, x, delta: float, *, lam0: float = 0.5, rounds: int = 8, steps: int = 300, lr: float = 0.01):
    """ROAR-like robust recourse (module docstring): robust to the worst l_inf shift `delta` of a local
    linear model's weights."""
    return _gradient_ce(model, x, delta, lam0=lam0, rounds=rounds, steps=steps, lr=lr)


__all__ = ["milp_r", "robx", "roar_style", "stability", "wachter"]
