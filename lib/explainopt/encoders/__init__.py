"""Trained models as mixed-integer constraints: :func:`encode` a fitted model on a cvxpy variable; :func:`model_output`
and :func:`model_predict` give the model's own output and class, which every counterfactual is re-checked with."""

from .base import (FAMILIES, Encoding, as_bounds, encode, model_family, model_output, model_predict, register,
                   supported_models)

# Importing the family modules registers their encoders.
from . import linear, networks, pipelines, trees  # noqa: E402,F401
from .linear import linear_weights  # noqa: E402
from .pipelines import column_map, preprocess  # noqa: E402
from .networks import IntervalNetwork, delta_robust, interval_lower, network_layers, torch_network  # noqa: E402
from .trees import Tree, TreeEnsemble, gradient_boosting_offset, snap_to_chosen_leaves, tree_ensemble  # noqa: E402

__all__ = [
    "FAMILIES", "Encoding", "IntervalNetwork", "Tree", "TreeEnsemble", "as_bounds", "column_map", "encode",
    "gradient_boosting_offset", "linear_weights", "model_family", "model_output", "model_predict", "network_layers",
    "preprocess", "register", "snap_to_chosen_leaves", "supported_models", "torch_network", "tree_ensemble",
    "delta_robust", "interval_lower",
]
