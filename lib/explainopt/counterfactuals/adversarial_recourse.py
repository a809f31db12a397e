"""Adversarially robust recourse for differentiable classifiers: Algorithm 1 of Dominguez-Olmedo, Karimi
and Schölkopf (2022), "On the adversarial robustness of causal algorithmic recourse", without a causal
model (the action is added to the features), as Maragno et al. ran it for their Table 3.

For a factual ``x0``, a target class and an l2 radius ``rho`` the method minimises

    BCE(f(x + s(x)), target) + lam * ||x - x0||_1,    s(x) = rho * g / ||g||,  g = d/dx BCE(f(x), target),

where ``f`` is the network's logit and ``s(x)`` the first-order (one-step, FGSM-like) approximation of the
worst perturbation in the ball, held constant in the gradient. Adam on ``x`` from ``x0``, one run throughout
(:func:`~.gradient.continued_rounds` of the gradient core): `steps` steps at each multiplier, the
multiplier of the cost shrinking by `lam_growth` (< 1) from one round to the next, `rounds` rounds; ``x`` kept in the feature box.
Before every step the iterate is accepted when the model predicts the target both at ``x`` and at
``x + s(x)``; the first accepted iterate is the recourse. When none is accepted the method has no recourse
and returns the factual itself (the authors' code returns the zero action): it is then *invalid*, which is
how the baseline of Maragno et al.'s Table 3 can be invalid.

Defaults are the authors' (float32, ``utils.get_recourse_hyperparams`` of ``RicardoDominguez/AdversariallyRobustRecourse``:
lr 0.1, lambd_init 1.0, decay_rate 0.9, inner_iters 50, outer_iters 100; ``recourse.DifferentiableRecourse``
with ``robust=True``, the first-order inner maximisation, no early stopping). Their float32 is the default (``dtype``). The NaN
matters: in float32 the sigmoid saturates once the logit passes about 17, the gradient of the loss is then
exactly zero, ``s = rho * 0 / 0`` is NaN and so is every later iterate, and the method ends with the factual,
invalid; Adam's first steps (lr 0.1) can overshoot that far (``benchmarks/baselines.py`` found it in 3 of
Table 3's 80 cells, banknote at rho = 0.2, where float64 finds a recourse). Where we differ: a run whose
iterate became NaN stops there (theirs runs on, NaN, to its last round); a target of class 0 flips the sign
of the logit (their code assumes target 1). The acceptance test only tries ``s(x)``, so
nothing here is a certificate: :func:`explainopt.counterfactuals.regions.certify_region` checks a returned
point exactly. ``benchmarks/baselines.py --authors-dominguez PATH`` runs their code beside this one.

Accepts the ReLU networks the encoders read (:func:`explainopt.encoders.network_layers`): scikit-learn
``MLPClassifier`` and torch ``nn.Sequential``, run as a torch network of their logit.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch

from ..encoders import torch_network
from ..validation import counterfactual_inputs
from .base import Counterfactual, contract
from .costs import l1
from .gradient import GRADIENT_SOLVER, continued_rounds, growing


@dataclass
class AdversarialRecourse(Counterfactual):
    """Result of :func:`adversarial_recourse` (fields of :class:`~.base.Counterfactual` first).

    x: the accepted iterate, or the factual when none was accepted; detail: ``converged`` (an iterate was
    accepted) or ``round_limit`` (none in `rounds` x `steps` Adam steps); solver:
    :data:`~.gradient.GRADIENT_SOLVER`. valid: the model itself predicts `target` at x; robust_by_attack:
    x was accepted, i.e. the first-order perturbation s(x) did not flip it (the method's own, heuristic,
    robustness check); lam: the cost multiplier of the round that accepted x (the last round's otherwise);
    rounds: rounds begun; distance: l1 distance to the factual; diverged: the iterate became NaN (the first-order
    step normalised a zero gradient: module docstring), which ended the run without recourse.
    """

    target: object = 1
    robust_by_attack: bool = False
    lam: float = float("nan")
    rounds: int = 0
    diverged: bool = False


def bce_towards(net, x, target: int):
    """Binary cross-entropy of the network's logit at `x` (rows) towards `target`, summed over rows: torch's
    ``binary_cross_entropy_with_logits``, as the authors' code, whose gradient ``sigmoid(z) - target``
    saturates (module docstring)."""
    z = net(x).reshape(-1)
    return torch.nn.functional.binary_cross_entropy_with_logits(z, torch.full_like(z, float(target)), reduction="sum")


def first_order_perturbation(net, x, *, rho: float, target: int):
    """``s(x) = rho * g / ||g||_2`` with ``g`` the gradient of :func:`bce_towards` at `x` (module docstring);
    NaN where ``g`` is zero, as in the authors' code (module docstring)."""
    x = x.detach().clone().requires_grad_(True)
    (g,) = torch.autograd.grad(bce_towards(net, x, target), x)
    return rho * g / torch.linalg.vector_norm(g)


def adversarial_recourse(model, x0, *, rho: float, target=None, lower=0.0, upper=1.0,
                         lam: float = 1.0, lam_growth: float = 0.9, rounds: int = 100, steps: int = 50,
                         learning_rate: float = 0.1, dtype=torch.float32) -> AdversarialRecourse:
    """Dominguez-Olmedo et al.'s Algorithm 1 (module docstring) for `model` at `x0` with l2 radius `rho`.

    lam: the first multiplier of the l1 cost (``lambd_init``); lam_growth: its factor per round
    (``decay_rate``); rounds: ``outer_iters``; steps: Adam steps per round (``inner_iters``);
    learning_rate: Adam's (``lr``). target: default the class other than the model's prediction at `x0`.
    lower, upper: the feature box (scalars or per feature). dtype: the precision of the network and the
    iterate (float32: the authors' code's, with its saturation; module docstring).
    """
    if not rho > 0:
        raise ValueError(f"rho must be positive, got {rho!r}")
    start = time.perf_counter()
    checked = counterfactual_inputs(model, x0, target=target, lower=lower, upper=upper, families=("network",))
    net = torch_network(model).to(dtype)
    x0, target = checked.x0, checked.target
    x0_t = torch.as_tensor(x0, dtype=dtype)
    sign = 1.0 if target == 1 else -1.0

    def loss(lam):
        def at(x):
            s = first_order_perturbation(net, x, rho=rho, target=target)
            return bce_towards(net, x + s, target) + lam * torch.sum(torch.abs(x - x0_t))
        return at

    def accepted(x) -> bool:  # the target at x and at x + s(x) (False when s(x) is NaN)
        x = torch.as_tensor(x, dtype=dtype)
        s = first_order_perturbation(net, x, rho=rho, target=target)
        with torch.no_grad():
            return sign * float(net(x).sum()) >= 0 and sign * float(net(x + s).sum()) >= 0

    found = continued_rounds(loss, accepted, x0, growing(lam, lam_growth, rounds), lower=lower, upper=upper,
                             learning_rate=learning_rate, steps=steps, dtype=dtype)
    x = found.x if found.accepted else x0.copy()
    diverged = found.x is not None and not np.isfinite(found.x).all()
    return contract(AdversarialRecourse(
        x, "converged" if found.accepted else "round_limit", time.perf_counter() - start, GRADIENT_SOLVER,
        robust_by_attack=found.accepted, distance=l1(x, x0), lam=float("nan") if found.lam is None else float(found.lam),
        rounds=found.rounds, diverged=diverged), model, x0, target)
