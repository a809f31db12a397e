"""The committed paper-scale results store reproduces: a few stored cells per chapter, computed again.

Which cells is a seeded draw whose seed is the hash of the store's content, so each change of the store
checks other cells. The numerical code paths are pinned (explainopt.numerics) and networks are trained
with CPU-independent arithmetic (explainopt.training), so a cell computed on one x86-64 machine reproduces
on another. Only small cells (stored wall time at most SMALL_S) that no wall-clock limit
decided are drawn, about a minute in all. Deterministic fields must match: statuses, flags and counts
exactly, numbers and counterfactuals to solver tolerance; times are not compared.
"""

import hashlib
from pathlib import Path

import numpy as np
import pytest

from explainopt.experiments import ResultStore, differences, limited, stored_form

ROOT = Path(__file__).resolve().parents[1]
STORE = ROOT / "results" / "paper"
SMALL_S, PER_CHAPTER, BUDGET_S = 12.0, 3, 60.0


def _draw() -> list[tuple[str, dict]]:
    if not STORE.is_dir():
        return []
    content = b"".join(p.read_bytes() for p in sorted(STORE.rglob("*.jsonl.gz")))
    rng = np.random.default_rng(int(hashlib.sha256(content).hexdigest()[:12], 16))
    chosen = []
    folders = sorted(p for p in STORE.iterdir() if p.is_dir())
    for folder in folders:
        small = [c for c in ResultStore(folder).current()
                 if c["provenance"]["wall_time_s"] <= SMALL_S and not limited(c["result"])]
        rng.shuffle(small)
        spent = 0.0
        for cell in small[:PER_CHAPTER]:
            if spent + cell["provenance"]["wall_time_s"] > BUDGET_S / max(1, len(folders)):
                break
            spent += cell["provenance"]["wall_time_s"]
            chosen.append((folder.name, cell))
    return chosen


def assert_reproduces(stored, again):
    """Times skipped, numbers to the store's tolerance, everything else exactly (experiments.differences)."""
    found = differences(stored, again)
    assert not found, "; ".join(found[:5])


CELLS = _draw()


@pytest.mark.skipif(not CELLS, reason="the results store holds no small current cell")
@pytest.mark.parametrize("chapter, cell", CELLS, ids=[f"{ch}-{c['key'][:8]}" for ch, c in CELLS])
def test_a_stored_cell_reproduces(chapter, cell):
    again = cell["function"](**cell["provenance"]["config"])
    assert_reproduces(cell["result"], stored_form(again))


def test_the_comparison_ignores_times_and_tolerates_round_off():
    assert_reproduces({"status": "optimal", "time": 1.0, "x": [0.1, 0.2]},
                      {"status": "optimal", "time": 9.0, "x": [0.1 + 1e-9, 0.2]})
    with pytest.raises(AssertionError, match="status"):
        assert_reproduces({"status": "optimal"}, {"status": "infeasible"})
    with pytest.raises(AssertionError, match="x"):
        assert_reproduces({"x": [0.1, 0.2]}, {"x": [0.1, 0.3]})
