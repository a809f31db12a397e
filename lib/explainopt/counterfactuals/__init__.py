"""Counterfactual explanations built on :mod:`explainopt.encoders`.

Every method shares one contract (``counterfactuals.base``): its inputs are checked once by
``explainopt.validation`` (``x0`` as an array, Series or one-row DataFrame; the box from
``lower``/``upper`` or ``X``; ``target=None`` for the other class), and its result has ``x``,
``status`` (one vocabulary), ``detail``, ``distance``, ``valid``, ``target``, ``time`` and ``solver``.
The core modules import neither torch nor OR-Tools; the gradient methods (``gradient``,
``roar``, ``baselines``, ``adversarial_recourse``) need torch (``pip install explainopt[torch]``).
"""

from .base import Counterfactual, check_factual, is_valid
from .nearest import CounterfactualProblem, CounterfactualResult, counterfactual_problem, nearest_counterfactual

__all__ = ["Counterfactual", "CounterfactualProblem", "CounterfactualResult", "counterfactual_problem", "check_factual", "is_valid", "nearest_counterfactual"]
