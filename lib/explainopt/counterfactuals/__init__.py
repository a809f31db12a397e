"""Counterfactual explanations built on :mod:`explainopt.encoders`."""

from .base import Counterfactual, check_factual, is_valid
from .nearest import CounterfactualProblem, CounterfactualResult, counterfactual_problem, nearest_counterfactual

__all__ = ["Counterfactual", "CounterfactualProblem", "CounterfactualResult", "counterfactual_problem", "check_factual", "is_valid", "nearest_counterfactual"]
