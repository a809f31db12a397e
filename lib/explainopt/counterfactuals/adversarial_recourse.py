"""Gradient-based adversarially robust recourse, in the style of Dominguez-Olmedo et al. (2021).

The baseline of Table 3 of Maragno et al.: for a differentiable classifier, find ``x`` close to the
factual whose prediction stays the target class under every perturbation ``||s||_2 <= rho``, by a
min-max problem solved with gradients only:

    minimize_x  ||x - x_hat||_1 + lam * max_{||s|| <= rho} loss(f(x + s), target)

The inner maximization is projected gradient ascent over the ball (normalized-gradient steps with a
random start, then projection); the outer minimization is gradient descent (Adam) on ``x``, projected
onto the feature domain. The multiplier ``lam`` is doubled until the inner adversary no longer flips the
prediction. Nothing here is a certificate: the chapter checks the returned point exactly with the
adversarial problem of :mod:`explainopt.counterfactuals.regions`.

Accepts scikit-learn ``MLPClassifier`` (ReLU, converted to torch) and torch modules returning a logit.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np


@dataclass
class AdversarialRecourse:
    """Result of :func:`adversarial_recourse`.

    x: the recourse; valid: ``model.predict(x) == target``; robust_by_attack: the inner PGD attack at the
    end did not flip the prediction (the method's own, heuristic, robustness check); lam: the multiplier
    used; distance: l1 distance to the factual.
    """

    x: np.ndarray
    target: int
    valid: bool
    robust_by_attack: bool
    distance: float
    lam: float
    time: float


def torch_network(model):
    """A torch ``nn.Sequential`` computing the logit of class 1 of a ReLU ``MLPClassifier`` (or `model`)."""
    import torch
    from sklearn.neural_network import MLPClassifier

    if isinstance(model, torch.nn.Module):
        return model
    if not isinstance(model, MLPClassifier):
        raise TypeError(f"adversarial_recourse needs a ReLU MLPClassifier or a torch module, got {type(model).__name__}")
    if model.activation != "relu" or model.n_outputs_ != 1:
        raise ValueError("adversarial_recourse supports binary MLPClassifier with activation='relu'")
    layers = []
    for i, (W, b) in enumerate(zip(model.coefs_, model.intercepts_)):
        lin = torch.nn.Linear(W.shape[0], W.shape[1]).double()
        with torch.no_grad():
            lin.weight.copy_(torch.as_tensor(W.T))
            lin.bias.copy_(torch.as_tensor(b))
        layers.append(lin)
        if i < len(model.coefs_) - 1:
            layers.append(torch.nn.ReLU())
    net = torch.nn.Sequential(*layers)
    for p in net.parameters():
        p.requires_grad_(False)
    return net


def _project_ball(s, rho: float):
    import torch

    norm = torch.linalg.vector_norm(s)
    return s if norm <= rho else s * (rho / norm)


def worst_perturbation(net, x, *, rho: float, target: int, steps: int = 20, step_size: float | None = None,
                       generator=None):
    """Inner maximization: projected gradient ascent of the loss over ``||s||_2 <= rho`` (from a random start)."""
    import torch

    sign = 1.0 if target == 1 else -1.0
    step_size = step_size or 2.5 * rho / steps
    s = torch.randn(x.shape, dtype=x.dtype, generator=generator)
    s = _project_ball(s / torch.linalg.vector_norm(s) * rho * 0.5, rho)
    for _ in range(steps):
        s.requires_grad_(True)
        loss = torch.nn.functional.softplus(-sign * net(x + s)).sum()  # BCE with logits towards target
        (grad,) = torch.autograd.grad(loss, s)
        with torch.no_grad():
            s = _project_ball(s + step_size * grad / (torch.linalg.vector_norm(grad) + 1e-12), rho)
    return s.detach()


def adversarial_recourse(model, x_hat, *, rho: float, target: int | None = None, lower=0.0, upper=1.0,
                         lam: float = 0.1, lam_growth: float = 2.0, max_lam_rounds: int = 12,
                         outer_steps: int = 200, inner_steps: int = 20, learning_rate: float = 0.01,
                         seed=0) -> AdversarialRecourse:
    """Robust recourse by gradient min-max (Dominguez-Olmedo et al. style; l2 perturbations).

    For each multiplier ``lam`` (doubled each round, starting at `lam`), run `outer_steps` Adam steps on
    ``||x - x_hat||_1 + lam * loss(f(x + s*(x)))`` with ``s*`` from :func:`worst_perturbation`; stop at the
    first round whose result is valid and survives a fresh attack.
    """
    import torch

    if not rho > 0:
        raise ValueError(f"rho must be positive, got {rho!r}")
    start = time.perf_counter()
    net = torch_network(model)
    x_hat_np = np.asarray(x_hat, dtype=float).reshape(-1)
    x_hat_t = torch.as_tensor(x_hat_np, dtype=torch.float64)
    lo = torch.as_tensor(np.broadcast_to(np.asarray(lower, dtype=float), x_hat_np.shape).copy())
    hi = torch.as_tensor(np.broadcast_to(np.asarray(upper, dtype=float), x_hat_np.shape).copy())
    if target is None:
        target = 1 - int(np.asarray(model.predict(x_hat_np[None]))[0]) if hasattr(model, "predict") else 1
    sign = 1.0 if target == 1 else -1.0
    gen = torch.Generator().manual_seed(int(seed))
    x_best = x_hat_np.copy()
    robust = valid = False
    for _ in range(max_lam_rounds):
        x = x_hat_t.clone().requires_grad_(True)
        opt = torch.optim.Adam([x], lr=learning_rate)
        for _ in range(outer_steps):
            s = worst_perturbation(net, x.detach(), rho=rho, target=target, steps=inner_steps, generator=gen)
            loss = torch.sum(torch.abs(x - x_hat_t)) + lam * torch.nn.functional.softplus(-sign * net(x + s)).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
            with torch.no_grad():
                x.copy_(torch.minimum(torch.maximum(x, lo), hi))
        x_best = x.detach().numpy().copy()
        s = worst_perturbation(net, x.detach(), rho=rho, target=target, steps=inner_steps, generator=gen)
        with torch.no_grad():
            valid = bool(sign * float(net(x.detach()).sum()) > 0)
            robust = valid and bool(sign * float(net(x.detach() + s).sum()) > 0)
        if robust:
            break
        lam *= lam_growth
    if hasattr(model, "predict"):
        valid = bool(int(np.asarray(model.predict(x_best[None]))[0]) == target)
    return AdversarialRecourse(x_best, target, valid, robust, float(np.abs(x_best - x_hat_np).sum()),
                               float(lam), time.perf_counter() - start)
