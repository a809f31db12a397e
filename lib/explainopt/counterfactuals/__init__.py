"""Counterfactual explanations built on :mod:`explainopt.encoders`.

Every method shares one contract (``counterfactuals.base``): its inputs are checked once by
``explainopt.validation`` (``x0`` as an array, Series or one-row DataFrame; the box from
``lower``/``upper`` or ``X``; ``target=None`` for the other class), and its result has ``x``,
``status`` (one vocabulary), ``detail``, ``distance``, ``valid``, ``target``, ``time`` and ``solver``.

The methods, importable from this package:

* nearest: :func:`nearest_counterfactual` (and :func:`counterfactual_problem` to add constraints);
* robust regions (Maragno et al.): ``robust_region``, ``single_leaf_region``, ``certify_region``;
* robust counterfactuals of tree ensembles (Direct-/Robust-SAA): ``ensemble_counterfactual``,
  ``ensemble_counterfactuals``;
* Delta-robust baselines: :func:`milp_r`, :func:`robx`, :func:`proto_r`; gradient methods: :func:`wachter`,
  :func:`roar_style`.

Four methods share their name with their module, so the module keeps the package's attribute and the
method is imported from it: ``from explainopt.counterfactuals.proplace import proplace`` (PROPLACE),
``...rbr import rbr`` (RBR), ``...roar import roar`` (ROAR) and ``...adversarial_recourse import
adversarial_recourse``.

The core modules import neither torch nor OR-Tools. The gradient methods (``wachter`` and ``roar_style`` of
``gradient_baselines``; ``roar``, ``rbr``, ``adversarial_recourse``) need torch
(``pip install explainopt[torch]``): their names are imported here on first use, never with the package.
"""

import importlib

from .base import Counterfactual, check_factual, is_valid
from .nearest import CounterfactualProblem, CounterfactualResult, counterfactual_problem, nearest_counterfactual

#: Exported names imported on first use (PEP 562) -> their module: torch's (``gradient_baselines``) are then loaded
#: only by who calls them, and the package's import stays that of the core.
LAZY = {
    "RobustRegion": "regions", "robust_region": "regions", "single_leaf_region": "regions",
    "Certificate": "regions", "certify_region": "regions",
    "EnsembleCounterfactual": "ensembles", "ensemble_counterfactual": "ensembles",
    "ensemble_counterfactuals": "ensembles",
    "ProtoResult": "proto", "proto_r": "proto",
    "MilpRResult": "baselines", "milp_r": "baselines", "robx": "baselines", "wachter": "gradient_baselines",
    "roar_style": "gradient_baselines",
}

#: Modules whose import needs torch (the ``[torch]`` extra).
NEEDS_TORCH = {"gradient_baselines", "gradient", "roar", "rbr", "adversarial_recourse"}


def __getattr__(name: str):
    if name not in LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = LAZY[name]
    try:
        value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    except ModuleNotFoundError as error:
        if module in NEEDS_TORCH and error.name == "torch":
            raise ImportError(f"{name} needs torch: pip install explainopt[torch]") from error
        raise
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(LAZY))


__all__ = ["Counterfactual", "CounterfactualProblem", "CounterfactualResult", "counterfactual_problem", "check_factual",
           "is_valid", "nearest_counterfactual", *LAZY]
