"""Counterfactual explanations built on :mod:`explainopt.encoders`."""

from .nearest import CounterfactualResult, nearest_counterfactual

__all__ = ["CounterfactualResult", "nearest_counterfactual"]
