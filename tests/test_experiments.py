import gzip
import json
import pickle
import time
from pathlib import Path

import numpy as np
import pytest

from explainopt import experiments
from explainopt.experiments import (ResultStore, atomic_write_bytes, code_fingerprint, config_key, grid_progress,
                                    results_frame, run_grid)

CALLS = []


def square(x, offset=0):
    CALLS.append(x)
    return {"value": x * x + offset}


def fragile(x):
    if x == 3:
        raise RuntimeError("interrupted at x=3")
    return {"value": x}


def test_grid_results_come_back_in_order_and_match_direct_calls(tmp_path):
    configs = [{"x": x, "offset": 1} for x in range(5)]
    results = run_grid(square, configs, cache=tmp_path, progress=False)
    assert [r["value"] for r in results] == [x * x + 1 for x in range(5)]
    frame = results_frame(configs, results)
    assert list(frame.columns) == ["x", "offset", "value"] and len(frame) == 5


def test_cached_configurations_are_not_recomputed(tmp_path):
    configs = [{"x": x} for x in range(4)]
    run_grid(square, configs, cache=tmp_path, progress=False)
    CALLS.clear()
    again = run_grid(square, configs + [{"x": 9}], cache=tmp_path, progress=False)
    assert CALLS == [9]
    assert again[-1] == {"value": 81}


def test_an_interrupted_run_keeps_what_was_finished_and_resumes(tmp_path):
    configs = [{"x": x} for x in range(6)]
    with pytest.raises(RuntimeError, match="x=3"):
        run_grid(fragile, configs, cache=tmp_path, progress=False)
    finished = sorted(pickle.loads(p.read_bytes())["result"]["value"] for p in tmp_path.glob("fragile-*.pkl"))
    assert finished[:3] == [0, 1, 2]
    assert not list(tmp_path.glob(".*.tmp"))  # no partial files left behind


def test_parallel_processes_give_the_same_results(tmp_path):
    configs = [{"x": x} for x in range(6)]
    serial = run_grid(square, configs, progress=False)
    parallel = run_grid(square, configs, n_jobs=2, progress=False)
    assert serial == parallel


def test_cache_key_depends_on_function_and_configuration():
    assert config_key(square, {"x": 1, "offset": 0}) == config_key(square, {"offset": 0, "x": 1})
    assert config_key(square, {"x": 1}) != config_key(square, {"x": 2})
    assert config_key(square, {"x": 1}) != config_key(fragile, {"x": 1})


def test_the_default_solver_of_the_environment_is_part_of_the_key(monkeypatch):
    monkeypatch.delenv("EXPLAINOPT_SOLVER", raising=False)
    plain = config_key(square, {"x": 1, "solver": "auto"})
    monkeypatch.setenv("EXPLAINOPT_SOLVER", "gurobi")
    assert config_key(square, {"x": 1, "solver": "auto"}) != plain
    assert config_key(square, {"x": 1, "solver": "highs"}) == config_key(square, {"x": 1, "solver": "highs"})


def test_atomic_write_replaces_whole_files(tmp_path):
    path = tmp_path / "sub" / "file.bin"
    atomic_write_bytes(path, b"first")
    atomic_write_bytes(path, b"second")
    assert path.read_bytes() == b"second"
    assert [p.name for p in path.parent.iterdir()] == ["file.bin"]


def test_every_cached_cell_carries_its_provenance(tmp_path):
    run_grid(square, [{"x": 2}], cache=tmp_path, progress=False)
    (path,) = tmp_path.glob("square-*.pkl")
    cell = pickle.loads(path.read_bytes())
    prov = cell["provenance"]
    assert cell["result"] == {"value": 4}
    assert prov["code"] == code_fingerprint(square) and prov["config"] == {"x": 2}
    assert prov["function"].endswith("square") and prov["wall_time_s"] >= 0
    assert {"numpy", "cvxpy", "python"} <= set(prov["versions"]) and "cores" in prov["machine"]


def test_a_cell_computed_by_other_code_is_stale_and_computed_again(tmp_path, monkeypatch):
    run_grid(square, [{"x": 3}], cache=tmp_path, progress=False)
    monkeypatch.setattr(experiments, "code_fingerprint", lambda func: "changed-code")
    CALLS.clear()
    assert run_grid(square, [{"x": 3}], cache=tmp_path, progress=False) == [{"value": 9}]
    assert CALLS == [3]


def test_code_fingerprint_follows_the_code_an_experiment_reaches():
    from explainopt.counterfactuals import nearest, regions

    # regions reaches nearest through its imports, nearest does not reach regions
    assert "explainopt.counterfactuals.nearest" in experiments._module_closure("explainopt.counterfactuals.regions")
    assert "explainopt.counterfactuals.regions" not in experiments._module_closure("explainopt.counterfactuals.nearest")
    assert code_fingerprint(square) != code_fingerprint(fragile)
    assert code_fingerprint(nearest.nearest_counterfactual) == code_fingerprint(nearest.nearest_counterfactual)


def test_code_fingerprint_includes_the_module_level_helpers_a_function_calls(monkeypatch, tmp_path):
    import textwrap

    module = tmp_path / "probe_fingerprint.py"
    module.write_text(textwrap.dedent("""
        def helper(x):
            return x + 1

        def unrelated():
            return 0

        def cell(x):
            return helper(x)
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    import probe_fingerprint

    before = code_fingerprint.__wrapped__(probe_fingerprint.cell)
    module.write_text(module.read_text().replace("return 0", "return 1"))
    assert code_fingerprint.__wrapped__(probe_fingerprint.cell) == before  # unrelated edit
    module.write_text(module.read_text().replace("x + 1", "x + 2"))
    assert code_fingerprint.__wrapped__(probe_fingerprint.cell) != before  # the helper it calls changed


def vector_cell(x, n=3):
    CALLS.append(x)
    return {"x": np.arange(n) * x, "status": "optimal", "value": float(x) / 3}


def _stored_lines(path):
    with gzip.open(path, "rt") as handle:  # the concatenated members, read as one stream
        return handle.read().splitlines()


def test_the_store_keeps_one_json_line_per_cell_and_restores_arrays(tmp_path):
    store = ResultStore(tmp_path)
    configs = [{"x": x} for x in range(4)]
    first = run_grid(vector_cell, configs, cache=store, progress=False)
    lines = _stored_lines(tmp_path / "vector_cell.jsonl.gz")
    assert len(lines) == 4 and all(json.loads(line)["provenance"]["code"] for line in lines)
    again = run_grid(vector_cell, configs, cache=ResultStore(tmp_path), progress=False)  # a fresh reader
    for a, b in zip(first, again):
        assert isinstance(b["x"], np.ndarray) and np.array_equal(a["x"], b["x"]) and a["value"] == b["value"]


def test_deleting_one_stored_cell_recomputes_exactly_that_cell(tmp_path):
    configs = [{"x": x} for x in range(5)]
    run_grid(vector_cell, configs, cache=ResultStore(tmp_path), progress=False)
    path = tmp_path / "vector_cell.jsonl.gz"
    lines = _stored_lines(path)
    path.write_bytes(gzip.compress("".join(line + "\n" for line in lines[:2] + lines[3:]).encode()))
    CALLS.clear()
    run_grid(vector_cell, configs, cache=ResultStore(tmp_path), progress=False)
    assert CALLS == [2]


def test_a_torn_last_line_is_ignored_and_that_cell_computed_again(tmp_path):
    configs = [{"x": x} for x in range(3)]
    run_grid(vector_cell, configs, cache=ResultStore(tmp_path), progress=False)
    path = tmp_path / "vector_cell.jsonl.gz"
    path.write_bytes(path.read_bytes()[:-25])  # an interrupted write
    CALLS.clear()
    run_grid(vector_cell, configs, cache=ResultStore(tmp_path), progress=False)
    assert CALLS == [2]


def test_cells_appended_after_a_torn_member_are_read(tmp_path):
    configs = [{"x": x} for x in range(4)]
    run_grid(vector_cell, configs[:3], cache=ResultStore(tmp_path), progress=False)
    path = tmp_path / "vector_cell.jsonl.gz"
    path.write_bytes(path.read_bytes()[:-25])  # cell 2 torn by an interrupted write
    run_grid(vector_cell, configs, cache=ResultStore(tmp_path), progress=False)  # appends 2 and 3 after it
    CALLS.clear()
    out = run_grid(vector_cell, configs, cache=ResultStore(tmp_path), progress=False)
    assert CALLS == [] and [r["value"] for r in out] == pytest.approx([x / 3 for x in range(4)])


def test_a_store_of_many_members_reads_back_every_cell(tmp_path):
    configs = [{"x": x, "n": 2000} for x in range(300)]  # many members, which straddle the read chunks
    run_grid(vector_cell, configs, cache=ResultStore(tmp_path), progress=False)
    out = run_grid(vector_cell, configs, cache=ResultStore(tmp_path), missing="skip", progress=False)
    assert all(r is not None and r["x"][-1] == 1999 * c["x"] for r, c in zip(out, configs))


def test_stale_cells_are_counted_and_recomputed(tmp_path, monkeypatch):
    configs = [{"x": x} for x in range(3)]
    run_grid(vector_cell, configs, cache=ResultStore(tmp_path), progress=False)
    monkeypatch.setattr(experiments, "code_fingerprint", lambda func: "new-code")
    store = ResultStore(tmp_path)
    assert grid_progress(vector_cell, configs, store) == {"cells": 3, "computed": 0, "stale": 3}
    run_grid(vector_cell, configs, cache=store, progress=False)
    assert grid_progress(vector_cell, configs, store) == {"cells": 3, "computed": 3, "stale": 0}
    store.compact(vector_cell)
    assert len(_stored_lines(tmp_path / "vector_cell.jsonl.gz")) == 3


def marking_cell(x, folder, seconds=1.0, fails=()):
    """Sleeps, then leaves a mark in `folder`; raises at once for the x in `fails`."""
    if x in fails:
        raise ValueError(f"cell {x} fails")
    time.sleep(seconds)
    (Path(folder) / f"done-{x}").touch()
    return {"x": x}


def test_a_budget_starts_no_cell_after_its_deadline(tmp_path):
    configs = [{"x": x, "folder": str(tmp_path)} for x in range(6)]
    out = run_grid(marking_cell, configs, n_jobs=2, budget=0.2, progress=False)
    assert [r is not None for r in out] == [True, True, False, False, False, False]  # one cell per worker
    assert sorted(p.name for p in tmp_path.iterdir()) == ["done-0", "done-1"]


def test_a_failing_cell_stops_the_cells_in_flight_and_keeps_those_finished(tmp_path):
    configs = [{"x": x, "folder": str(tmp_path / "marks"), "seconds": 2.0 * x, "fails": [2]} for x in range(3)]
    (tmp_path / "marks").mkdir()
    store = ResultStore(tmp_path / "store")
    with pytest.raises(ValueError, match="cell 2 fails"):
        run_grid(marking_cell, configs, cache=store, n_jobs=2, progress=False)
    time.sleep(3.0)  # longer than cell 1 would have taken, had it been left running
    assert sorted(p.name for p in (tmp_path / "marks").iterdir()) == ["done-0"]
    assert grid_progress(marking_cell, configs, ResultStore(tmp_path / "store"))["computed"] == 1


def test_skip_renders_what_is_stored_and_leaves_the_rest_none(tmp_path):
    store = ResultStore(tmp_path)
    run_grid(vector_cell, [{"x": 1}], cache=store, progress=False)
    CALLS.clear()
    out = run_grid(vector_cell, [{"x": 1}, {"x": 2}], cache=store, missing="skip", progress=False)
    assert out[0]["value"] == pytest.approx(1 / 3) and out[1] is None and CALLS == []


def slow_cell(x):
    time.sleep(0.3)
    return {"x": x}


def test_a_budget_stops_the_run_and_a_later_run_goes_on(tmp_path):
    configs = [{"x": x} for x in range(8)]
    out = run_grid(slow_cell, configs, cache=tmp_path, budget=0.5, progress=False)
    done = [r is not None for r in out]
    assert 1 <= sum(done) < 8
    out = run_grid(slow_cell, configs, cache=tmp_path, progress=False)
    assert [r["x"] for r in out] == list(range(8))


def test_order_decides_which_cells_run_first(tmp_path):
    configs = [{"x": x} for x in range(6)]
    CALLS.clear()
    run_grid(vector_cell, configs, order=[5, 4], cache=tmp_path, progress=False)
    assert CALLS[:2] == [5, 4] and sorted(CALLS) == list(range(6))


def test_a_dask_cluster_gives_the_same_results_as_the_local_run(tmp_path):
    distributed = pytest.importorskip("distributed")
    configs = [{"x": x} for x in range(6)]
    local = run_grid(vector_cell, configs, progress=False)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        remote = run_grid(vector_cell, configs, cache=ResultStore(tmp_path), scheduler=cluster.scheduler_address,
                          n_jobs=2, progress=False)
    assert all(np.array_equal(a["x"], b["x"]) and a["value"] == b["value"] for a, b in zip(local, remote))
    assert len(_stored_lines(tmp_path / "vector_cell.jsonl.gz")) == 6
