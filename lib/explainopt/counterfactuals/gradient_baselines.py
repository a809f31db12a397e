"""Wachter et al.'s counterfactual and a ROAR-style robust recourse: the gradient baselines of PROPLACE's
Table 1 (Jiang et al. 2023) for ReLU networks on inputs in [0, 1]. They need torch (``explainopt[torch]``).

* :func:`wachter` -- Wachter et al. (2017): gradient descent on lam (p(x') - 1)^2 + ||x' - x0||_1 / d,
  lam doubled until the counterfactual is valid.
* :func:`roar_style` -- a ROAR-like robust recourse (Upadhyay et al. 2021), gradient based. ROAR
  linearises the model (LIME) and takes the worst l_inf shift of the linear model's weights and bias,
  which lowers the score by delta (||x'||_1 + 1); here the same worst shift of a local linear model is
  applied to the network's own logit: loss lam BCE(f(x') - delta (||x'||_1 + 1), 1) + ||x' - x0||_1 / d.
  Not the authors' implementation (no LIME surrogate).

Both run the gradient core of :mod:`.gradient` and name its optimiser, :data:`~.gradient.GRADIENT_SOLVER`
(``adam``), as their solver; both search class 1 from a factual of class 0
(:func:`~explainopt.validation.class_one_factual`).
"""

from __future__ import annotations

import copy
import time

import numpy as np
import torch

from ..encoders import model_output, torch_network
from ..encoders.networks import is_torch_sequential
from ..validation import check_positive, class_one_factual
from .base import Counterfactual, contract
from .gradient import GRADIENT_SOLVER, growing, multiplier_rounds


def _gradient_ce(model, x0, robust_shift: float, *, target, lam: float, lam_growth: float, rounds: int, steps: int,
                 learning_rate: float) -> Counterfactual:
    """The gradient core (:func:`~.gradient.multiplier_rounds`) on lam * (validity loss) + normalised l1,
    lam growing until valid: detail ``valid``, or ``not_valid`` with the last round's point. `model`: a
    torch ``nn.Sequential`` (its own float64 copy is differentiated) or another network
    (:func:`~explainopt.encoders.torch_network`)."""
    start = time.perf_counter()
    x0 = class_one_factual(model, x0, method="the gradient counterfactual", target=target, default=(0.0, 1.0),
                           families=("network",))
    net = copy.deepcopy(model).double() if is_torch_sequential(model) else torch_network(model)
    for p in net.parameters():
        p.requires_grad_(False)
    x0t = torch.as_tensor(x0)
    d = x0t.numel()

    def loss(lam):
        def at(xp):
            logit = net(xp[None])[0, 0]
            dist = (xp - x0t).abs().sum() / d
            if robust_shift:
                robust = logit - robust_shift * (xp.abs().sum() + 1)
                return lam * torch.nn.functional.softplus(-robust) + dist
            return lam * (torch.sigmoid(logit) - 1) ** 2 + dist
        return at

    def valid(cand) -> bool:
        logit = float(model_output(model, cand[None])[0])
        return logit - robust_shift * (np.abs(cand).sum() + 1) > 0 if robust_shift else logit > 0

    found = multiplier_rounds(loss, valid, x0, growing(lam, lam_growth, rounds), lower=0.0, upper=1.0,
                              learning_rate=learning_rate, steps=steps)
    return contract(Counterfactual(found.x, "valid" if found.accepted else "not_valid", time.perf_counter() - start,
                                   GRADIENT_SOLVER), model, x0, 1)


def wachter(model, x0, *, target=None, lam: float = 0.5, lam_growth: float = 2.0, rounds: int = 8, steps: int = 300,
            learning_rate: float = 0.01) -> Counterfactual:
    """Wachter et al.: the first valid gradient-descent counterfactual as lam grows (else the last).

    Examples
    --------
    >>> from sklearn.neural_network import MLPClassifier
    >>> X = np.array([[0.1, 0.2], [0.2, 0.1], [0.8, 0.9], [0.9, 0.8]] * 10)
    >>> net = MLPClassifier((4,), max_iter=2000, random_state=0).fit(X, [0, 0, 1, 1] * 10)
    >>> ce = wachter(net, X[0])
    >>> ce.status, ce.solver, ce.valid
    ('feasible', 'adam', True)
    """
    return _gradient_ce(model, x0, 0.0, target=target, lam=lam, lam_growth=lam_growth, rounds=rounds, steps=steps,
                        learning_rate=learning_rate)


def roar_style(model, x0, *, delta: float, target=None, lam: float = 0.5, lam_growth: float = 2.0, rounds: int = 8,
               steps: int = 300, learning_rate: float = 0.01) -> Counterfactual:
    """ROAR-like robust recourse (module docstring): robust to the worst l_inf shift `delta` of a local
    linear model's weights.

    Examples
    --------
    >>> from sklearn.neural_network import MLPClassifier
    >>> X = np.array([[0.1, 0.2], [0.2, 0.1], [0.8, 0.9], [0.9, 0.8]] * 10)
    >>> net = MLPClassifier((4,), max_iter=2000, random_state=0).fit(X, [0, 0, 1, 1] * 10)
    >>> roar_style(net, X[0], delta=0.01).valid
    True
    """
    check_positive(delta, "delta", strict=False)
    return _gradient_ce(model, x0, delta, target=target, lam=lam, lam_growth=lam_growth, rounds=rounds, steps=steps,
                        learning_rate=learning_rate)


__all__ = ["GRADIENT_SOLVER", "roar_style", "wachter"]
