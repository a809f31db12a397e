"""explainopt: optimization-based explanations of machine-learning and optimization models.

The shared library of the explainopt compendium, in two layers.

Algorithms, by concept, reusable on your own models and data: ``solvers`` (choosing and calling
solvers), ``datasets`` and ``featurespace`` (data and the feature space of a counterfactual),
``encoders`` (trained models as mixed-integer constraints), ``counterfactuals`` (nearest, robust-region,
PROPLACE, robust-ensemble counterfactuals and baselines), ``attributions`` (explanation optimization),
``problems`` and ``clemo`` (explaining optimization models).

Chapters (``explainopt.chapters``): each paper's experimental protocol, its transcribed numbers and
claim checks, on top of the algorithms. Infrastructure: ``experiments`` (cached, resumable grids),
``reporting`` (claims and verdicts), ``plots`` (one figure style), ``benchmark`` and ``book`` (the
notebook runner); ``numerics`` pins the numerical code paths (BLAS and torch kernels) when the package is
imported, so that results do not depend on the CPU, and ``training`` trains networks bit for bit alike on
any CPU.
"""

from .numerics import pin_code_paths

pin_code_paths()  # before NumPy, SciPy or torch load their kernels in this process or in those it starts

__version__ = "0.1.0"
