"""The claim contract of every chapter: each claim has a declared id, check and evidence rule
(``chapters/data/<chapter>_claims.csv``); every check reads *not run* without data and explains it; each claim
with a declared fixture holds on it, fails on its perturbation (so the check can fail) and is not run on no data."""

import inspect

import numpy as np
import pandas as pd
import pytest

from explainopt import reporting
from explainopt.chapters import clemo as C3
from explainopt.chapters import module
from explainopt.chapters import optimizing_explanations as C1
from explainopt.chapters import proplace as C4
from explainopt.chapters import robust_regions as C2
from explainopt.chapters import robustness_benchmark as C6
from explainopt.reporting import DIFFERS, NOT_RUN, REPRODUCED

CHAPTERS = ("01", "02", "03", "04", "05", "06")


def _no_data_claims(chapter: str) -> list[reporting.Claim]:
    """Every claim of `chapter` computed on a run without data."""
    empty = pd.DataFrame()
    if chapter == "01":
        return C1.paper_claims(empty, empty, empty, empty, empty)
    if chapter == "02":
        return C2.paper_claims(empty, C2.summary_table(empty), empty, [], time_limit=4)
    if chapter == "03":
        return C3.claims(vrp_samples=40, vrp_solution_limit=20, vrp_chunks=2)
    if chapter == "04":
        table = pd.DataFrame(columns=["dataset", "method", "n", "found", "vΔ", "vr", "l1", "lof", "paper l1"])
        return C4.claims(table, empty, n_retrained=0)
    if chapter == "05":
        from test_chapter_robust_ensembles import EMPTY
        return module("05").claims(**EMPTY, datasets=[])
    return C6.claims(empty)


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_claim_is_declared_once_with_its_check_and_rule(chapter):
    book = module(chapter).CLAIMS
    assert len(book.ids) == len(set(book.ids)) and all(i.startswith(f"{chapter}-") for i in book.ids)
    for check in book.table["check"]:
        assert inspect.isfunction(getattr(module(chapter), check)), check
    assert (book.table["claim"] != "").all() and (book.table["decides"] != "").all()


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_without_data_every_claim_is_not_run_in_declared_order_and_says_why(chapter):
    claims = _no_data_claims(chapter)
    assert [c.id for c in claims] == module(chapter).CLAIMS.ids
    for c in claims:
        assert c.verdict == NOT_RUN, c.id
        assert c.explanation.startswith("Too little evidence"), c.id
        assert c.rule and "decides: " in c.rule, c.id


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_each_claim_names_its_check(chapter):
    """The id leads from a row to the code: the declared check is a function of the chapter whose source
    names the id (directly, or through the name its id is built from)."""
    book = module(chapter).CLAIMS
    for id, check in zip(book.ids, book.table["check"]):
        source = inspect.getsource(getattr(module(chapter), check))
        stem = id.split("-", 1)[1].removesuffix("-slsqp").removesuffix("-convex")
        assert id in source or f'"{stem}"' in source, (id, check)


# --------------------------------------------------------------------------- the shared predicates

def test_all_of_at_least_needs_n_present_values_and_can_fail():
    assert reporting.all_of_at_least([1, 2, 3], 3, lambda v: v > 0) is True
    assert reporting.all_of_at_least([1, -2, 3], 3, lambda v: v > 0) is False
    assert reporting.all_of_at_least([1, np.nan, 3], 3, lambda v: v > 0) is None
    assert reporting.all_of_at_least([], 1) is None and reporting.all_of_at_least(None, 1) is None


def test_share_of_matched_pairs_counts_only_pairs_with_both_sides_and_flips():
    a = pd.Series({"x": 1.0, "y": 1.0, "z": 1.0, "w": np.nan})
    b = pd.Series({"x": 2.0, "y": 2.0, "z": 2.0, "v": 0.0})
    assert reporting.share_of_matched_pairs(a, b, 3) == (1.0, 3)
    assert reporting.share_of_matched_pairs(b, a, 3) == (0.0, 3)   # the compared series flipped
    share, n = reporting.share_of_matched_pairs(a, b, 4)
    assert np.isnan(share) and n == 3
    with pytest.raises(ValueError, match="pair up"):
        reporting.share_of_matched_pairs([1.0, 2.0], [1.0], 1)


def test_interval_above_and_below():
    assert reporting.interval_above(0.6, 0.5) is True and reporting.interval_above(0.4, 0.5) is False
    assert reporting.interval_below(0.4, 0.5) is True and reporting.interval_below(0.6, 0.5) is False
    assert reporting.interval_above(np.nan, 0.5) is None and reporting.interval_below(None, 0.5) is None


def test_matched_share_of_chapter_2_ignores_unmatched_configurations():
    """Defect 2 of issue 26 stays fixed: a configuration without its partner is no evidence either way."""
    wide = pd.DataFrame({0.01: [1.0] * 26 + [np.nan] * 27, 0.05: [2.0] * 26 + [3.0] * 27})
    assert C2.matched_share(wide, 0.01, 0.05) == (1.0, 26)
    assert C2.matched_share(wide, 0.05, 0.01) == (0.0, 26)


# --------------------------------------------------------------------------- holds, fails, no data

def _rows(method, model, values, *, col="retrained", param=None, **extra):
    return [{**dict(dataset="toy", factual=i, model=model, method=method, param=param, recommended=True, valid=True,
                    status="converged", excess_distance=0.0, tol=1e-4), col: v, **extra} for i, v in enumerate(values)]


def _better(method, model, col, against=C6.NEAREST, param=None):
    """A hypothesis "`method` above `against` on `col`": holds on higher values, fails when the two compared
    series are flipped."""
    high, low = [0.9, 0.8, 1.0, 0.7], [0.1, 0.2, 0.0, 0.1]

    def frame(ours, base):
        return pd.DataFrame(_rows(against, model, base, col=col) + _rows(method, model, ours, col=col, param=param))
    return frame(high, low), frame(low, high)


def _smallest(method, col, good, bad, **extra):
    return (pd.DataFrame(_rows(method, "network", good, col=col, **extra)),
            pd.DataFrame(_rows(method, "network", bad, col=col, **extra)))


#: Claim id -> (the check, an input on which it holds, one on which it fails). The empty input is the third.
FIXTURES = {
    "06-h1-nearest-closest": (C6.h1_nearest_closest, *_smallest(C6.NEAREST, "excess_distance", [0, 0.1, 0.2], [0, -0.1, 0.2])),
    "06-h2-region-certified": (C6.h2_region_certified, pd.DataFrame(_rows(C6.REGION, "network", [0.06, 0.05, 0.1], col="radius_linf", param=0.05)),
                               pd.DataFrame(_rows(C6.REGION, "network", [0.06, 0.01, 0.1], col="radius_linf", param=0.05))),
    "06-h3-proplace-delta": (C6.h3_proplace_delta, pd.DataFrame(_rows(C6.PROPLACE, "network", [0.1, 0.2, 0.3], col="delta_interval", param=0.1)),
                             pd.DataFrame(_rows(C6.PROPLACE, "network", [0.1, 0.05, 0.3], col="delta_interval", param=0.1))),
    "06-h4-saa-margin": (C6.h4_saa_margin, *_smallest(C6.DIRECT_SAA, "margin", [0.0, 0.1, 0.2], [0.0, -0.1, 0.2])),
    "06-h5-region-retrained-network": (C6.h5_region_retrained_network, *_better(C6.REGION, "network", "retrained", param=C6.RHO)),
    "06-h6-region-retrained-forest": (C6.h6_region_retrained_forest, *_better(C6.REGION, "forest", "retrained", param=C6.RHO)),
    "06-h7-proplace-radius": (C6.h7_proplace_radius, *_better(C6.PROPLACE, "network", "radius_linf")),
    "06-h8-region-model-shift": (C6.h8_region_model_shift, *_better(C6.REGION, "network", "delta_exact")),
    "06-h9-saa-radius": (C6.h9_saa_radius, *_better(C6.DIRECT_SAA, "forest", "radius_linf")),
    "06-h10-region-vs-stretched": (C6.h10_region_vs_stretched, *_better(C6.REGION, "network", "retrained", against=C6.STRETCHED)),
    "06-h11-proplace-retrained": (C6.h11_proplace_retrained, *_better(C6.PROPLACE, "network", "retrained")),
}


def test_the_fixtures_name_declared_claims():
    declared = {i for chapter in CHAPTERS for i in module(chapter).CLAIMS.ids}
    assert set(FIXTURES) <= declared


@pytest.mark.parametrize("id", sorted(FIXTURES))
def test_claim_holds_fails_and_is_not_run_without_data(id):
    check, holds, fails = FIXTURES[id]
    good, bad, none = check(holds), check(fails), check(pd.DataFrame())
    assert (good.id, bad.id, none.id) == (id, id, id)
    assert good.verdict == REPRODUCED and not good.explanation
    assert bad.verdict == DIFFERS and bad.explanation.startswith("Genuine finding"), "the check cannot fail"
    assert none.verdict == NOT_RUN and none.explanation.startswith("Too little evidence")


@pytest.mark.parametrize("id", sorted(FIXTURES))
def test_the_perturbed_input_changes_the_verdict(id):
    check, holds, fails = FIXTURES[id]
    assert check(holds).verdict != check(fails).verdict
