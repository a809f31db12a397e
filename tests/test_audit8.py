"""Audit 8 (helper audit8, /work/notes/audit8.md): the confirming audit of issue 26, over every claim that is not
*reproduced* at the paper or book scale and 8 random reproduced ones. Each test names the defect (F1-F4) it pins;
each failed on /work/main at 5737770."""

import pandas as pd
import test_audit5 as A5
import test_chapter_clemo as T3
import test_chapter_robust_regions as T2

from explainopt.chapters import clemo as C3
from explainopt.chapters import proplace as C4
from explainopt.chapters import robust_regions as C2
from explainopt.reporting import DIFFERS, NOT_RUN, REPRODUCED


# --------------------------------------------------------------------------- F1: an invalid counterfactual decides "sometimes invalid"

def _table3(n: int, invalid: int) -> pd.DataFrame:
    return T2._baselines([True] * n, [False] * invalid + [True] * (n - invalid), [True] * n)


def test_f1_one_invalid_baseline_counterfactual_decides_sometimes_invalid_below_the_minimum():
    # the paper scale's committed evidence: 1 invalid of 23 (4%); no further counterfactual can bring the share to 0
    c = C2.claim_baseline_invalid(_table3(23, 1))
    assert c.verdict == REPRODUCED and c.evidence == 23 and not c.explanation


def test_f1_without_an_invalid_one_below_the_minimum_it_stays_undecided_and_can_still_fail():
    assert C2.claim_baseline_invalid(_table3(23, 0)).verdict == NOT_RUN
    assert C2.claim_baseline_invalid(_table3(C2.MIN_TABLE3, 0)).verdict == DIFFERS
    assert C2.claim_baseline_invalid(_table3(C2.MIN_TABLE3, 4)).verdict == REPRODUCED


# --------------------------------------------------------------------------- F2: a tie of every method is not "least robust"

def test_f2_wce_tied_with_every_method_is_not_the_least_robust():
    paper = A5._paper_like()
    assert C4.claim_wce_least_robust(paper).verdict == REPRODUCED        # the paper's table: WCE strictly lowest
    tied = paper.copy()
    tied.loc[tied["dataset"] == "heloc", "vr"] = 100.0                  # every method 100 on heloc, WCE too
    c = C4.claim_wce_least_robust(tied)
    assert c.verdict == DIFFERS and "lowest vr on 3 of 4" in c.ours


def test_f2_wce_sharing_the_lowest_vr_with_another_method_still_counts():
    shared = A5._paper_like({("RBR", "heloc", "vr"): 49.0})              # WCE 49 = RBR 49, the rest higher
    assert C4.claim_wce_least_robust(shared).verdict == REPRODUCED


# --------------------------------------------------------------------------- F3: a time-capped SLSQP time is a lower bound

def test_f3_a_capped_slsqp_time_within_3x_of_the_paper_decides_nothing():
    # the book scale caps SLSQP at 10 s: a 5-item run stopped there is 1.17x the paper's 8.54 s, but its own time is unknown
    capped = T3.table3(slsqp_s=(10.0, 60.0, 1, 1), status=("time_limit", "converged", "converged", "converged"))
    assert C3.runtime_absolute_claim(capped).verdict == NOT_RUN


def test_f3_a_capped_slsqp_time_does_not_read_faster_than_the_paper():
    capped = T3.table3(slsqp_s=(8.0, 10.0, 1, 1), status=("converged", "time_limit", "converged", "converged"))
    c = C3.runtime_absolute_claim(capped)
    assert c.verdict == NOT_RUN and "faster" not in c.why


def test_f3_a_capped_time_already_beyond_3x_decides_the_failure():
    capped = T3.table3(slsqp_s=(30.0, 60.0, 1, 1), status=("time_limit", "converged", "converged", "converged"))
    assert C3.runtime_absolute_claim(capped).verdict == DIFFERS


def test_f3_a_capped_slsqp_time_below_100x_lr_does_not_fail_the_ratio_claim():
    # a run stopped at the cap would have taken longer: a ratio of 50 there is a lower bound, not a failure
    capped = T3.table3(slsqp_s=(1.0, 2.0, 5.0, 0.05), lr_s=0.001)
    assert C3.runtime_ratio_claim(capped).verdict == NOT_RUN
    assert C3.runtime_ratio_claim(T3.table3(slsqp_s=(1.0, 2.0, 5.0, 0.2), lr_s=0.001)).verdict == REPRODUCED
    uncapped = T3.table3(slsqp_s=(1.0, 0.05, 5.0, 10.0), lr_s=0.001)       # 10 items converged at 50x LR
    assert C3.runtime_ratio_claim(uncapped).verdict == DIFFERS


# --------------------------------------------------------------------------- F4: early stops at a limit below the paper's 1000 s

def _stops(early: int, n: int) -> pd.DataFrame:
    return pd.DataFrame({"early_stop": [True] * early + [False] * (n - early), "solver": ["highs"] * n})


def test_f4_early_stops_at_the_book_scales_8_s_limit_do_not_fail_the_paper_times():
    # the book scale's committed evidence: median ratio 0.33, 14 of 99 instances stopped at its 8 s limit
    c = C2.claim_times([pd.DataFrame({"ratio": [0.2, 0.33, 0.5]})], _stops(14, 99), time_limit=8)
    assert c.verdict == NOT_RUN and "1000" in c.why


def test_f4_early_stops_at_the_papers_limit_still_decide_and_a_slow_median_still_fails_below_it():
    at_paper_limit = C2.claim_times([pd.DataFrame({"ratio": [0.2, 0.33, 0.5]})], _stops(14, 99), time_limit=1000)
    assert at_paper_limit.verdict == DIFFERS
    slow = C2.claim_times([pd.DataFrame({"ratio": [4.0, 5.0, 6.0]})], _stops(14, 99), time_limit=8)
    assert slow.verdict == DIFFERS
    few = C2.claim_times([pd.DataFrame({"ratio": [0.2, 0.33, 0.5]})], _stops(5, 99), time_limit=8)
    assert few.verdict == REPRODUCED
