"""Gradient-based adversarially robust recourse, in the style of Dominguez-Olmedo et al. (2021).

The baseline of Table 3 of Maragno et al.: for a differentiable classifier, find ``x`` close to the
factual ``x0`` whose prediction stays the target class under every perturbation ``||s||_2 <= rho``, by a
min-max problem solved with gradients only:

    minimize_x  ||x - x0||_1 + lam * max_{||s|| <= rho} loss(f(x + s), target)

The inner maximization is projected gradient ascent over the ball (normalized-gradient steps with a
random start, then projection); the outer minimization is gradient descent (Adam) on ``x``, projected
onto the feature domain. The multiplier ``lam`` is doubled until the inner adversary no longer flips the
prediction. Nothing here is a certificate: :func:`explainopt.counterfactuals.regions.certify_region`
checks a returned point exactly.

Accepts the ReLU networks the encoders read (:func:`explainopt.encoders.network_layers`): scikit-learn
``MLPClassifier`` and torch ``nn.Sequential``, run as a torch network of their logit.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch

from ..encoders import torch_network
from ..validation import check_seed, counterfactual_inputs
from .base import Counterfactual, contract
from .costs import l1
from .gradient import GRADIENT_SOLVER, growing, multiplier_rounds


@dataclass
class AdversarialRecourse(Counterfactual):
    """Result of :func:`adversarial_recourse` (fields of :class:`~.base.Counterfactual` first).

    detail: ``converged`` (a round's point survived a fresh attack) or ``round_limit`` (every multiplier
    tried was flipped); solver: :data:`~.gradient.GRADIENT_SOLVER` (Adam outside, projected gradient
    ascent inside). valid: the model itself predicts `target` at x; robust_by_attack: the inner PGD attack
    at the end did not flip the prediction (the method's own, heuristic, robustness check); lam: the
    multiplier used (after a round limit, the next one of the schedule); distance: l1 distance to the
    factual.
    """

    target: object = 1
    robust_by_attack: bool = False
    lam: float = float("nan")


def _project_ball(s, rho: float):
    norm = torch.linalg.vector_norm(s)
    return s if norm <= rho else s * (rho / norm)


def worst_perturbation(net, x, *, rho: float, target: int, steps: int = 20, step_size: float | None = None,
                       generator=None):
    """Inner maximization: projected gradient ascent of the loss over ``||s||_2 <= rho`` (from a random start)."""
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


def adversarial_recourse(model, x0, *, rho: float, target=None, lower=0.0, upper=1.0,
                         lam: float = 0.1, lam_growth: float = 2.0, rounds: int = 12, steps: int = 200,
                         inner_steps: int = 20, learning_rate: float = 0.01,
                         random_state: int = 0) -> AdversarialRecourse:
    """Robust recourse by gradient min-max (Dominguez-Olmedo et al. style; l2 perturbations).

    For each multiplier ``lam`` (times `lam_growth` each round, `rounds` of them), run `steps` Adam steps
    (:func:`~.gradient.multiplier_rounds`) on ``||x - x0||_1 + lam * loss(f(x + s*(x)))`` with ``s*`` from
    :func:`worst_perturbation` (`inner_steps` ascent steps); stop at the first round whose result is valid
    and survives a fresh attack. random_state: the integer seed of the attacks' random starts. target:
    default the class other than the model's prediction at `x0`.
    """
    if not rho > 0:
        raise ValueError(f"rho must be positive, got {rho!r}")
    check_seed(random_state)
    start = time.perf_counter()
    checked = counterfactual_inputs(model, x0, target=target, lower=lower, upper=upper, families=("network",))
    net = torch_network(model)
    x0, target = checked.x0, checked.target
    x0_t = torch.as_tensor(x0, dtype=torch.float64)
    sign = 1.0 if target == 1 else -1.0
    gen = torch.Generator().manual_seed(int(random_state))

    def attack(x):
        return worst_perturbation(net, x, rho=rho, target=target, steps=inner_steps, generator=gen)

    def loss(lam):
        def at(x):
            s = attack(x.detach())
            return torch.sum(torch.abs(x - x0_t)) + lam * torch.nn.functional.softplus(-sign * net(x + s)).sum()
        return at

    def survives(x) -> bool:  # valid, and still valid under a fresh attack
        x = torch.as_tensor(x)
        s = attack(x)
        with torch.no_grad():
            return sign * float(net(x).sum()) > 0 and sign * float(net(x + s).sum()) > 0

    schedule = growing(lam, lam_growth, rounds + 1)  # the last one is reported after a round limit
    found = multiplier_rounds(loss, survives, x0, schedule[:-1], lower=lower, upper=upper,
                              learning_rate=learning_rate, steps=steps)
    x = x0.copy() if found.x is None else found.x
    return contract(AdversarialRecourse(
        x, "converged" if found.accepted else "round_limit", time.perf_counter() - start, GRADIENT_SOLVER,
        robust_by_attack=found.accepted, distance=l1(x, x0), lam=float(found.lam if found.accepted else schedule[-1])),
        model, x0, target)
