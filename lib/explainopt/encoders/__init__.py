"""Trained models as mixed-integer constraints; see :mod:`explainopt.encoders.base` for the API."""

from .base import Encoding, as_bounds, encode, model_output, model_predict, register, supported_models

# Importing the family modules registers their encoders.
from . import linear, networks, trees  # noqa: E402,F401
from .networks import IntervalNetwork, network_layers  # noqa: E402

__all__ = [
    "Encoding", "IntervalNetwork", "as_bounds", "encode", "model_output", "model_predict", "network_layers",
    "register", "supported_models",
]
