"""The magnitude of the model shifts per data set in Jiang et al.'s PROPLACE experiments (chapter 4), as in
the authors' code.

Chapter 6 measures every method's robustness against the same shifts, so the values live here, apart from
chapter 4's protocol module: a chapter-6 cell then depends on these numbers alone, not on chapter 4's
tables and claims (a cell's fingerprint covers every module it imports).
"""

#: δ of the model shifts (the Δ of Δ-robustness) per data set.
DELTAS = {"carla/adult": 0.035, "carla/compas": 0.025, "carla/give_me_some_credit": 0.045, "carla/heloc": 0.025}
#: MILP-R's own δ (``delta_target`` in the authors' code) per data set.
MILP_R_DELTA = {"carla/adult": 0.05, "carla/compas": 0.03, "carla/give_me_some_credit": 0.08, "carla/heloc": 0.04}

__all__ = ["DELTAS", "MILP_R_DELTA"]
