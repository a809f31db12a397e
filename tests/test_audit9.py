"""Audit 9 (helper audit9, /work/notes/audit9.md): a further audit of issue 26, over every claim that is not
*reproduced* at the paper or book scale and 8 random reproduced ones, looking for values produced under a cap read
as the paper's measurement and for ties and degenerate inputs that decide a comparison vacuously. Each test names
the defect (G1, G2) it pins; the pins failed on /work/main at 5257ff7, the guards beside them pass there too."""

import pandas as pd
import test_chapter_clemo as T3

from explainopt.chapters import clemo as C3
from explainopt.chapters import robust_ensembles as C5
from explainopt.reporting import DIFFERS, NOT_RUN, REPRODUCED


# --------------------------------------------------------------------------- G1: 03-scatter counts the runs it leaves out

def _scatter_runs(coherent: int):
    """Every type's 10 matched runs, `coherent` of them with LR and CLEMO both at incoherence 0 (a cut 0/0)."""
    runs = T3.per_run()
    both_coherent = runs["resample"] < coherent
    runs.loc[both_coherent, ["objective_incoherence", "incoherence"]] = 0.0
    return runs


def test_g1_scatter_runs_left_out_as_0_over_0_are_no_evidence():
    # 9 of every type's 10 runs are left out (LR already coherent): one run per type is not the rule's 10
    c = C3.scatter_claim(_scatter_runs(9))
    assert c.verdict == NOT_RUN and c.evidence == 1
    assert "36 runs where LR's incoherence is 0 left out" in c.why


def test_g1_scatter_with_every_run_defined_still_holds_and_fails():
    assert C3.scatter_claim(_scatter_runs(0)).verdict == REPRODUCED
    assert C3.scatter_claim(T3.per_run(clemo=(1.1, 20.0))).verdict == DIFFERS


# --------------------------------------------------------------------------- G2: 05-solve-time reads capped solves as measured

def _solves(naive, direct, *, cap: float):
    """A simulation frame of one (dataset, solver): the naive and Direct-SAA solve times, a time at `cap` stopped
    by the time limit (its true time is at least the cap)."""
    rows = [{"dataset": "COMPAS", "method": m, "solver": "highs", "solve_time": t,
             "status": "time_limit" if t >= cap else "optimal"}
            for m, times in (("naive", naive), ("direct-saa", direct)) for t in times]
    return pd.DataFrame(rows)


def _claim(naive, direct, *, cap: float = 20.0):
    return C5.claim_solve_time(C5.solve_time_table(_solves(naive, direct, cap=cap)))


def test_g2_a_capped_direct_saa_solve_does_not_pass_the_ratio():
    # 1 of 20 Direct-SAA solves stopped at the 20 s cap: its mean 1.95 s is a lower bound, so "≤ 2x" is undecided
    c = _claim([1.0] * 20, [1.0] * 19 + [20.0])
    assert c.verdict == NOT_RUN and "lower bound" in c.why


def test_g2_a_capped_naive_solve_does_not_fail_the_ratio():
    # 1 of 20 naive solves capped: the naive mean is a lower bound, the ratio 2.6 an upper bound: undecided
    c = _claim([1.0] * 19 + [9.0], [3.6] * 20, cap=9.0)
    assert c.verdict == NOT_RUN and "upper bound" in c.why


def test_g2_a_bound_on_the_deciding_side_still_decides():
    assert _claim([1.0] * 20, [3.0] * 19 + [20.0]).verdict == DIFFERS             # a lower bound above 2x
    assert _claim([1.0] * 19 + [9.0], [1.2] * 20, cap=9.0).verdict == REPRODUCED   # an upper bound below 2x
    assert _claim([1.0] * 20, [1.5] * 20).verdict == REPRODUCED                    # nothing capped
    assert _claim([1.0] * 20, [2.5] * 20).verdict == DIFFERS
