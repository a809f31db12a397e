"""explainopt: optimization-based explanations of machine-learning and optimization models.

The shared library of the explainopt compendium. Modules by concept:
``solvers`` (choosing and calling solvers), ``datasets`` (registry and loaders), ``encoders`` (trained
models as mixed-integer constraints), ``counterfactuals`` (nearest, robust-region, PROPLACE and
robust-ensemble counterfactuals), ``attributions`` (explanation optimization), ``problems`` and
``clemo`` (explaining optimization models), ``metrics``, ``experiments``, ``plots``, ``reporting``
and ``book`` (the notebook runner).
"""

__version__ = "0.1.0"
