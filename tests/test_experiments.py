import contextlib
import gzip
import math
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

    monkeypatch.setattr(experiments, "LOADED_AT", time.time())
    before = code_fingerprint.__wrapped__(probe_fingerprint.cell)
    module.write_text(module.read_text().replace("return 0", "return 1"))
    monkeypatch.setattr(experiments, "LOADED_AT", time.time())
    assert code_fingerprint.__wrapped__(probe_fingerprint.cell) == before  # unrelated edit
    module.write_text(module.read_text().replace("x + 1", "x + 2"))
    monkeypatch.setattr(experiments, "LOADED_AT", time.time())
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


def _stored_cell(x):
    return {"result": {"value": x}, "provenance": {"code": code_fingerprint(square), "function": "test_experiments.square",
                                                   "config": {"x": x}}}


def test_a_reader_that_also_writes_still_sees_what_another_process_appended(tmp_path):
    mine, theirs = ResultStore(tmp_path), ResultStore(tmp_path)
    mine.put(square, {"x": 1}, _stored_cell(1))
    theirs.put(square, {"x": 2}, _stored_cell(2))  # another runner on the same store
    mine.put(square, {"x": 3}, _stored_cell(3))    # appended after theirs (audit 42b M4)
    assert mine.get(square, {"x": 2}, fresh=True)["result"] == {"value": 2}


def test_compacting_keeps_the_lines_another_process_appended_meanwhile(tmp_path):
    mine, theirs = ResultStore(tmp_path), ResultStore(tmp_path)
    mine.put(square, {"x": 1}, _stored_cell(1))
    mine.put(square, {"x": 1}, _stored_cell(10))   # supersedes the first line
    theirs.put(square, {"x": 2}, _stored_cell(2))  # a fill appends while `mine` holds what it read
    mine.compact(square)                           # as revalidate does at its end (audit 42b M3)
    again = ResultStore(tmp_path)
    assert len(_stored_lines(tmp_path / "square.jsonl.gz")) == 2
    assert again.get(square, {"x": 1})["result"] == {"value": 10} and again.get(square, {"x": 2}) is not None
    assert mine.get(square, {"x": 2})["result"] == {"value": 2}


def test_a_compaction_waits_for_an_append_in_progress(tmp_path):
    """The write lock (audit 43 N1): a process that has opened the file to append holds it, so a compaction
    cannot replace the file under it (its line would go to the replaced file and be lost)."""
    import multiprocessing

    ResultStore(tmp_path).put(square, {"x": 1}, _stored_cell(1))
    late = gzip.compress(json.dumps({"key": config_key(square, {"x": 2}), **_stored_cell(2)}).encode() + b"\n")
    context = multiprocessing.get_context("fork")
    locked, writer = context.Event(), None

    def append_slowly():
        store = ResultStore(tmp_path)
        with store._writing(square), store.path(square).open("ab") as handle:
            locked.set()
            time.sleep(0.5)           # the compaction below starts meanwhile
            handle.write(late)

    writer = context.Process(target=append_slowly)
    writer.start()
    assert locked.wait(10)
    ResultStore(tmp_path).compact(square)
    writer.join(10)
    again = ResultStore(tmp_path)
    assert again.get(square, {"x": 1}) is not None and again.get(square, {"x": 2}) is not None


def test_an_append_waits_for_a_compaction_in_progress(tmp_path):
    """The write lock on the fill's side (audit 43b P5): a compaction reads the file, then replaces it; an append
    between the two would go to the replaced file and be lost."""
    import multiprocessing

    ResultStore(tmp_path).put(square, {"x": 1}, _stored_cell(1))
    context = multiprocessing.get_context("fork")
    locked = context.Event()

    def compact_slowly():
        store = ResultStore(tmp_path)
        with store._writing(square):
            read = store.path(square).read_bytes()
            locked.set()
            time.sleep(0.5)           # the append below starts meanwhile
            atomic_write_bytes(store.path(square), read)

    compactor = context.Process(target=compact_slowly)
    compactor.start()
    assert locked.wait(10)
    ResultStore(tmp_path).put(square, {"x": 2}, _stored_cell(2))
    compactor.join(10)
    assert ResultStore(tmp_path).get(square, {"x": 2}) is not None


def test_a_store_reads_its_file_once_while_only_it_writes(tmp_path, monkeypatch):
    """Audit 43b P6: a store that notes its own appends does not read the file again for them."""
    store, reads = ResultStore(tmp_path), []
    read = experiments.read_store_file
    monkeypatch.setattr(experiments, "read_store_file", lambda path: reads.append(path) or read(path))
    for x in range(3):
        store.put(square, {"x": x}, _stored_cell(x))
        assert store.get(square, {"x": x}, fresh=True) is not None
    store.compact(square)                             # reads it once, under the lock
    assert store.get(square, {"x": 0}, fresh=True) is not None and len(reads) == 1


def _foreign_line(tmp_path, x):
    """Append the cell of `x` to the store file as another process would, without this process's lock."""
    with (tmp_path / "square.jsonl.gz").open("ab") as handle:
        handle.write(gzip.compress(json.dumps({"key": config_key(square, {"x": x}), **_stored_cell(x)}).encode() + b"\n"))


def test_a_line_appended_while_a_store_reads_its_file_is_read_later(tmp_path, monkeypatch):
    """Audit 43c E9: a store notes the file's version before it reads the file; noted after, a line another process
    appended in between would look read, and the store would never read it."""
    ResultStore(tmp_path).put(square, {"x": 1}, _stored_cell(1))
    read = experiments.read_store_file
    monkeypatch.setattr(experiments, "read_store_file", lambda path: [read(path), _foreign_line(tmp_path, 2)][0])
    store = ResultStore(tmp_path)
    assert store.get(square, {"x": 1}) is not None and store.get(square, {"x": 2}) is None   # read before the append
    monkeypatch.setattr(experiments, "read_store_file", read)
    assert store.get(square, {"x": 2}, fresh=True)["result"] == {"value": 2}


def test_a_line_appended_before_a_store_takes_its_lock_is_read_later(tmp_path, monkeypatch):
    """Audit 43c E7: a store compares the file's version with what it read under the write lock; compared before
    it, a line another process appended just before the lock was taken would be taken for read."""
    mine = ResultStore(tmp_path)
    mine.put(square, {"x": 1}, _stored_cell(1))
    writing = ResultStore._writing

    @contextlib.contextmanager
    def late_foreign_append(self, func):
        _foreign_line(tmp_path, 2)          # another process appends and releases its lock just before ours
        with writing(self, func):
            yield

    monkeypatch.setattr(ResultStore, "_writing", late_foreign_append)
    mine.put(square, {"x": 3}, _stored_cell(3))
    monkeypatch.setattr(ResultStore, "_writing", writing)
    assert mine.get(square, {"x": 2}, fresh=True)["result"] == {"value": 2}


def test_a_reader_sees_a_compaction_that_brought_the_file_back_to_the_size_it_read(tmp_path):
    """Audit 43 N2: a file's size alone misses a rewrite that shrinks it by what another process appended."""
    mine, theirs = ResultStore(tmp_path), ResultStore(tmp_path)
    mine.put(square, {"x": 1}, _stored_cell(1))
    mine.put(square, {"x": 1}, _stored_cell(2))        # a superseded line, as long as the one below
    size = (tmp_path / "square.jsonl.gz").stat().st_size
    theirs.put(square, {"x": 3}, _stored_cell(3))
    theirs.compact(square)                               # drops the superseded line
    assert (tmp_path / "square.jsonl.gz").stat().st_size == size
    theirs.compact(square)                               # ext4 may hand the first inode back (audit 43b P1)
    assert mine.get(square, {"x": 3}, fresh=True)["result"] == {"value": 3}
    mine.put(square, {"x": 4}, _stored_cell(4))
    assert mine.get(square, {"x": 3}, fresh=True) is not None


def test_a_stored_result_reads_back_bit_for_bit():
    """What a cell reads of another cell through the store (chapter 4's networks) is the cell as computed: the
    machinery is outside every fingerprint (audit 43 N3), so its encoding must not move a number."""
    rng = np.random.default_rng(0)
    result = {"layers": [rng.normal(size=(7, 5)), rng.normal(size=5).astype(np.float32), np.arange(4)],
              "loss": float(rng.normal()), "steps": 12, "name": "net"}
    again = experiments.stored_form(result)
    for a, b in zip(result["layers"], again["layers"]):
        assert a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()
    assert again["loss"] == result["loss"] and again["steps"] == 12 and again["name"] == "net"


def test_the_package_machinery_is_in_no_fingerprint(monkeypatch):
    from explainopt.chapters import proplace

    parts = experiments._module_parts.__wrapped__
    before = code_fingerprint.__wrapped__(proplace.run_factual)  # reaches run_grid for its networks

    def edited(module):
        return (*parts(module), "# edited") if module in experiments.MACHINERY else parts(module)

    monkeypatch.setattr(experiments, "_module_parts", edited)
    assert code_fingerprint.__wrapped__(proplace.run_factual) == before
    assert code_fingerprint.__wrapped__(proplace.network_cell) == code_fingerprint(proplace.network_cell)
    monkeypatch.setattr(experiments, "_module_parts", lambda m: (*parts(m), "# edited"))  # an algorithm edited
    assert code_fingerprint.__wrapped__(proplace.run_factual) != before


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



def aborting(x):
    """A cell whose process dies outright at x = 1, as a solver's native crash ("free(): invalid pointer")."""
    if x == 1:
        import os
        os.abort()
    return x


def test_an_isolated_fill_loses_only_the_cell_whose_worker_died_and_goes_on(tmp_path):
    """Chapter 6's paper fill stopped twice when SCIP aborted inside one cell (heloc's forest): in-process, a
    native crash ends the run. Filled one cell per worker, that cell stays missing and the cells after it are
    computed."""
    from explainopt.book import fill_isolated

    store = ResultStore(tmp_path)
    configs = [{"x": x} for x in range(4)]
    with pytest.warns(RuntimeWarning, match=r"aborting\{'x': 1\}: its worker died"):
        fill_isolated(aborting, configs, store)
    assert run_grid(aborting, configs, cache=store, missing="skip", progress=False) == [0, None, 2, 3]
    assert grid_progress(aborting, configs, store)["computed"] == 3

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


# --------------------------------------------------------------------------- a store that never loses a cell

def _compacted_store(tmp_path, n=20):
    configs = [{"x": x} for x in range(n)]
    store = ResultStore(tmp_path)
    run_grid(vector_cell, configs, cache=store, progress=False)
    store.compact(vector_cell)
    return configs, tmp_path / "vector_cell.jsonl.gz"


def test_a_damaged_byte_of_a_compacted_file_loses_one_cell_with_a_warning(tmp_path):
    configs, path = _compacted_store(tmp_path)
    data = bytearray(path.read_bytes())
    members = [i for i in range(len(data)) if data.startswith(b"\x1f\x8b\x08", i)]
    data[members[10] + 20] ^= 0xFF  # one flipped byte in the compressed data of cell 10 (header bytes are unchecked)
    path.write_bytes(bytes(data))
    with pytest.warns(UserWarning, match=r"vector_cell.jsonl.gz: skipped .* 1 damaged gzip members"):
        out = run_grid(vector_cell, configs, cache=ResultStore(tmp_path), missing="skip", progress=False)
    assert sum(r is None for r in out) == 1


def test_a_cut_file_keeps_its_readable_prefix(tmp_path):
    configs, path = _compacted_store(tmp_path)
    path.write_bytes(path.read_bytes()[: int(0.99 * path.stat().st_size)])
    with pytest.warns(UserWarning, match="damaged"):
        out = run_grid(vector_cell, configs, cache=ResultStore(tmp_path), missing="skip", progress=False)
    assert sum(r is None for r in out) == 1 and out[0] is not None


def test_a_damaged_single_member_file_keeps_the_lines_before_the_damage(tmp_path):
    configs = [{"x": x} for x in range(20)]
    run_grid(vector_cell, configs, cache=ResultStore(tmp_path), progress=False)
    path = tmp_path / "vector_cell.jsonl.gz"
    path.write_bytes(gzip.compress("".join(line + "\n" for line in _stored_lines(path)).encode()))  # one member
    path.write_bytes(path.read_bytes()[: int(0.9 * path.stat().st_size)])
    with pytest.warns(UserWarning, match="damaged"):
        out = run_grid(vector_cell, configs, cache=ResultStore(tmp_path), missing="skip", progress=False)
    assert 10 <= sum(r is not None for r in out) < 20


def test_an_unreadable_file_is_an_error_naming_it_never_zero_cells(tmp_path):
    path = tmp_path / "vector_cell.jsonl.gz"
    path.write_text('{"key": "abc", "result": 1, "provenance": {}}\n')  # JSON lines, not gzip
    with pytest.raises(experiments.StoreError, match="vector_cell.jsonl.gz: not a results-store file"):
        run_grid(vector_cell, [{"x": 1}], cache=ResultStore(tmp_path), missing="skip", progress=False)
    path.write_bytes(gzip.compress(b'{"key": "abc", "result": 1}\n'))  # a line without provenance
    with pytest.raises(experiments.StoreError, match="vector_cell.jsonl.gz: no readable cell"):
        run_grid(vector_cell, [{"x": 1}], cache=ResultStore(tmp_path), missing="skip", progress=False)


def _probe_module(tmp_path, monkeypatch, body):
    import importlib
    import sys
    import textwrap

    (tmp_path / "probe_cells.py").write_text(textwrap.dedent(body))
    monkeypatch.syspath_prepend(str(tmp_path))
    code_fingerprint.cache_clear()
    module = importlib.reload(sys.modules["probe_cells"]) if "probe_cells" in sys.modules else importlib.import_module("probe_cells")
    monkeypatch.setattr(experiments, "LOADED_AT", time.time())  # a fresh process would load it now
    return module


def test_docstrings_and_comments_stale_no_cell_and_a_data_file_the_code_names_does(tmp_path, monkeypatch):
    monkeypatch.setattr(experiments, "DATA_FOLDERS", (tmp_path,))
    experiments._module_parts.cache_clear()
    (tmp_path / "probe_grid.csv").write_text("D,N\n3,125\n")
    body = '''
        """A probe."""
        GRID = "probe_grid"

        def cell(x):
            """Doc."""
            return {"value": x * 2, "grid": GRID}  # a comment
        '''
    before = code_fingerprint(_probe_module(tmp_path, monkeypatch, body).cell)
    edited = body.replace('"""Doc."""', '"""Another doc."""').replace("# a comment", "# another")
    assert code_fingerprint(_probe_module(tmp_path, monkeypatch, edited).cell) == before
    (tmp_path / "probe_grid.csv").write_text("D,N\n3,64\n")
    assert code_fingerprint(_probe_module(tmp_path, monkeypatch, edited).cell) != before


def test_the_fingerprint_covers_the_chapters_grid_file():
    from explainopt.chapters import optimizing_explanations as CH

    parts = {f.name for f in experiments._data_files(experiments.ast.parse(Path(CH.__file__).read_text()))}
    assert "optimizing_explanations_grids.csv" in parts


def test_two_runners_never_compute_the_same_cell(tmp_path):
    configs = [{"x": x} for x in range(3)]
    other = ResultStore(tmp_path).claim(vector_cell, configs[1])  # another runner is on cell 1
    CALLS.clear()
    out = run_grid(vector_cell, configs, cache=ResultStore(tmp_path), progress=False)
    assert CALLS == [0, 2] and out[1] is None
    ResultStore(tmp_path).put(vector_cell, configs[1], experiments.compute_cell(vector_cell, configs[1]))
    other.release()  # it stored its cell: a later runner reads it instead of computing it
    CALLS.clear()
    assert run_grid(vector_cell, configs, cache=ResultStore(tmp_path), progress=False)[1]["value"] == pytest.approx(1 / 3)
    assert CALLS == []


RUNNER = """
import sys
from explainopt.experiments import run_grid
sys.path.insert(0, {tests!r})
from test_experiments import pid_cell
run_grid(pid_cell, [dict(x=x, folder={folder!r}) for x in range(4)], n_jobs=2, progress=False)
"""
#: A budgeted fill from the command line: one cell at a time in a worker, each stored by its worker.
FILL = """
import sys
from explainopt.book import fill_isolated
from explainopt.experiments import ResultStore
sys.path.insert(0, {tests!r})
from test_experiments import pid_cell
fill_isolated(pid_cell, [dict(x=x, folder={folder!r}) for x in range(2)], ResultStore({folder!r}))
"""


def pid_cell(x, folder):
    import os

    # written whole, then renamed: the test polls for pid-* and must never read a file still empty
    written = Path(folder) / f".pid-{x}"
    written.write_text(str(os.getpid()))
    os.replace(written, Path(folder) / f"pid-{x}")
    time.sleep(60)
    return {"x": x}


def _alive(pid: int) -> bool:
    import os

    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists() and "Z" not in Path(f"/proc/{pid}/stat").read_text().split()[2]


@pytest.mark.parametrize("script, n_workers, how", [(RUNNER, 2, "SIGKILL"), (FILL, 1, "SIGKILL"), (FILL, 1, "SIGTERM")])
def test_a_killed_runner_leaves_no_workers_behind(tmp_path, script, n_workers, how):
    """A worker left computing after its runner is gone would hold its cell's claim, so that the next fill
    skips the cell, and store it behind that fill's back."""
    import signal
    import subprocess
    import sys

    runner = subprocess.Popen([sys.executable, "-c", script.format(tests=str(Path(__file__).parent), folder=str(tmp_path))])
    deadline = time.monotonic() + 60
    while len(list(tmp_path.glob("pid-*"))) < n_workers and time.monotonic() < deadline:
        time.sleep(0.2)
    workers = [int(p.read_text()) for p in tmp_path.glob("pid-*")]
    assert len(workers) == n_workers and runner.pid not in workers
    runner.send_signal(getattr(signal, how))
    runner.wait()
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(_alive(pid) for pid in workers)
    assert ResultStore(tmp_path).claim(pid_cell, {"x": 0, "folder": str(tmp_path)}) is not None  # its claim is free


# --------------------------------------------------------------------------- revalidate

PROBE = '''
def cell(x):
    return {"value": x * 2, "status": "optimal"}
'''


def _filled(tmp_path, monkeypatch, n=40):
    module = _probe_module(tmp_path, monkeypatch, PROBE)
    store = ResultStore(tmp_path / "store")
    run_grid(module.cell, [{"x": x} for x in range(n)], cache=store, progress=False)
    return store


def test_revalidate_keeps_the_store_through_a_refactor_that_changes_no_result(tmp_path, monkeypatch):
    _filled(tmp_path, monkeypatch)
    module = _probe_module(tmp_path, monkeypatch, PROBE.replace("x * 2", "x + x"))  # same results, other code
    store = ResultStore(tmp_path / "store")
    report = experiments.revalidate(store, module.cell)
    assert report["stale"] == 40 and report["sampled"] == 3 and not report["differs"] and report["restamped"] == 37
    assert len(store.cells(module.cell)) == 40
    restamped = [c for c in store.cells(module.cell) if "revalidated" in c["provenance"]]
    assert len(restamped) == 37  # a re-stamped cell says so: the old code, the date, the sample
    stamp = restamped[0]["provenance"]["revalidated"]
    assert stamp["from"] != code_fingerprint(module.cell) and len(stamp["sample"]) == 3 and stamp["of"] == 40


def test_revalidate_restamps_nothing_when_a_sampled_result_moves(tmp_path, monkeypatch):
    _filled(tmp_path, monkeypatch, n=3)
    module = _probe_module(tmp_path, monkeypatch, PROBE.replace("x * 2", "x * 2 + (x == 1)"))
    store = ResultStore(tmp_path / "store")
    report = experiments.revalidate(store, module.cell)
    assert report["restamped"] == 0 and list(report["differs"].values()) == [["result.value: largest difference 1"]]
    assert not any("revalidated" in c["provenance"] for c in store.all_cells(module.cell))


def test_the_revalidation_sample_covers_every_stratum_and_at_least_five_percent():
    cells = [{"key": str(i), "provenance": {"code": "old" if i < 90 else "older",
                                            "config": {"dataset": "a" if i % 2 else "b"}}} for i in range(100)]
    sample = experiments.revalidation_sample(cells, random_state=1)
    assert len(sample) >= 5
    strata = {(c["provenance"]["code"], c["provenance"]["config"]["dataset"]) for c in sample}
    assert strata == {("old", "a"), ("old", "b"), ("older", "a"), ("older", "b")}


def test_a_fingerprint_of_code_edited_after_the_process_loaded_it_is_refused(tmp_path, monkeypatch):
    module = _probe_module(tmp_path, monkeypatch, PROBE)
    monkeypatch.setattr(experiments, "LOADED_AT", time.time() - 60)  # loaded a minute ago, edited since
    code_fingerprint.cache_clear()
    with pytest.raises(experiments.CodeChanged, match="probe_cells.py changed after this process started"):
        code_fingerprint(module.cell)


def test_revalidate_leaves_cells_that_no_current_grid_has(tmp_path, monkeypatch):
    _filled(tmp_path, monkeypatch, n=10)
    module = _probe_module(tmp_path, monkeypatch, PROBE.replace("x * 2", "x + x"))
    store = ResultStore(tmp_path / "store")
    report = experiments.revalidate(store, module.cell, configs=[{"x": x} for x in range(4)])
    assert report["stale"] == 4 and report["sampled"] + report["restamped"] == 4
    assert len(store.cells(module.cell)) == 4  # the 6 orphans stay stale


def test_code_text_cuts_docstrings_with_non_ascii_text_at_their_end():
    source = 'def f(x):\n    """θ ≤ 1."""; y = 2  # note\n    return x\n'
    assert experiments.code_text(source) == "def f(x):\n    ; y = 2\n    return x"


@pytest.mark.parametrize("n, strata", [(148, 4), (148, 7), (40, 3), (7, 3), (1000, 9)])
def test_the_revalidation_sample_is_never_below_its_share(n, strata):
    cells = [{"key": str(i), "provenance": {"code": f"c{i % strata}", "config": {}}} for i in range(n)]
    sample = experiments.revalidation_sample(cells)
    assert len(sample) >= min(n, max(3, math.ceil(0.05 * n))) and len({c["key"] for c in sample}) == len(sample)


def test_revalidate_judges_each_version_of_the_code_on_its_own_sample(tmp_path, monkeypatch):
    """Cells of an older version that moved stay stale; the cells of the version that reproduces are
    re-stamped, each with the sample of its own version."""
    _filled(tmp_path, monkeypatch, n=20)
    older = _probe_module(tmp_path, monkeypatch, PROBE.replace("x * 2", "x * 2 + 1"))  # another version
    store = ResultStore(tmp_path / "store")
    run_grid(older.cell, [{"x": x} for x in range(20, 40)], cache=store, progress=False)
    module = _probe_module(tmp_path, monkeypatch, PROBE.replace("x * 2", "x + x"))
    store = ResultStore(tmp_path / "store")
    report = experiments.revalidate(store, module.cell)
    assert report["stale"] == 40 and report["sampled"] == 6 and len(report["differs"]) == 3
    assert list(report["kept"].values()) == ["a sampled cell differs"] and report["restamped"] == 17
    restamped = [c for c in store.all_cells(module.cell) if "revalidated" in c["provenance"]]
    assert {c["provenance"]["config"]["x"] < 20 for c in restamped} == {True}
    assert {len(c["provenance"]["revalidated"]["sample"]) for c in restamped} == {3}


def test_the_book_revalidates_a_chapter_in_the_order_of_its_grids(tmp_path, monkeypatch):
    # a cell may read an earlier grid's cells from the store (chapter 4's factuals read its networks), so
    # the networks' function goes first although the store lists it last
    from types import SimpleNamespace

    from explainopt import book, chapters

    module = _probe_module(tmp_path, monkeypatch, "def a_factuals(x):\n    return x + 1\n\n\n"
                                                   "def z_networks(x):\n    return x\n")
    store = ResultStore(tmp_path / "results" / "paper" / "07")
    for func in (module.a_factuals, module.z_networks):
        run_grid(func, [{"x": 1}], cache=store, progress=False)
    grids = {"networks": experiments.Grid(module.z_networks, [{"x": 1}]),
             "factuals": experiments.Grid(module.a_factuals, [{"x": 1}])}
    monkeypatch.setattr(book, "RESULTS", tmp_path / "results")
    monkeypatch.setattr(chapters, "module", lambda name: SimpleNamespace(SCALES={}, grids=lambda settings: grids))
    monkeypatch.setattr(chapters, "settings", lambda scales, scale: {})
    order = [report["function"] for report in book.revalidate(["07"], "paper")]
    assert order == ["z_networks", "a_factuals"]


def test_the_book_computes_every_cheap_stale_cell_again_and_samples_only_the_costly(tmp_path, monkeypatch):
    """A 5% sample missed a change that moved a few cheap cells (SCIP without its NLP relaxation, chapter 2's
    baseline cells), so the book's revalidate computes every stale cell of at most `recompute_under`
    seconds again and judges only the costlier ones on a sample."""
    from types import SimpleNamespace

    from explainopt import book, chapters

    module = _probe_module(tmp_path, monkeypatch, PROBE)
    store = ResultStore(tmp_path / "results" / "paper" / "07")
    run_grid(module.cell, [{"x": x} for x in range(40)], cache=store, progress=False)
    for cell in store.cells(module.cell):  # half of them took long when they were computed
        if cell["provenance"]["config"]["x"] >= 20:
            store.put(module.cell, cell["provenance"]["config"],
                      {"result": cell["result"], "provenance": {**cell["provenance"], "wall_time_s": 500.0}})
    module = _probe_module(tmp_path, monkeypatch, PROBE.replace("x * 2", "x + x"))  # same results, other code
    grids = {"cells": experiments.Grid(module.cell, [{"x": x} for x in range(40)])}
    monkeypatch.setattr(book, "RESULTS", tmp_path / "results")
    monkeypatch.setattr(chapters, "module", lambda name: SimpleNamespace(SCALES={}, grids=lambda settings: grids))
    monkeypatch.setattr(chapters, "settings", lambda scales, scale: {})
    every, sampled = book.revalidate(["07"], "paper", recompute_under=60)
    assert every["all"] and every["stale"] == every["sampled"] == 20 and every["restamped"] == 0
    assert not sampled["all"] and sampled["stale"] == 20 and sampled["sampled"] == 3 and sampled["restamped"] == 17
    store = ResultStore(tmp_path / "results" / "paper" / "07")
    restamped = {c["provenance"]["config"]["x"] for c in store.cells(module.cell) if "revalidated" in c["provenance"]}
    assert len(restamped) == 17 and min(restamped) >= 20 and len(store.cells(module.cell)) == 40
