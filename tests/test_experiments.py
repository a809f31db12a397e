import pickle

import pytest

from explainopt.experiments import atomic_write_bytes, config_key, results_frame, run_grid

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
    results = run_grid(square, configs, cache_dir=tmp_path, progress=False)
    assert [r["value"] for r in results] == [x * x + 1 for x in range(5)]
    frame = results_frame(configs, results)
    assert list(frame.columns) == ["x", "offset", "value"] and len(frame) == 5


def test_cached_configurations_are_not_recomputed(tmp_path):
    configs = [{"x": x} for x in range(4)]
    run_grid(square, configs, cache_dir=tmp_path, progress=False)
    CALLS.clear()
    again = run_grid(square, configs + [{"x": 9}], cache_dir=tmp_path, progress=False, backend="threading")
    assert CALLS == [9]
    assert again[-1] == {"value": 81}


def test_an_interrupted_run_keeps_what_was_finished_and_resumes(tmp_path):
    configs = [{"x": x} for x in range(6)]
    with pytest.raises(RuntimeError, match="x=3"):
        run_grid(fragile, configs, cache_dir=tmp_path, progress=False)
    finished = sorted(pickle.loads(p.read_bytes())["value"] for p in tmp_path.glob("fragile-*.pkl"))
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


def test_atomic_write_replaces_whole_files(tmp_path):
    path = tmp_path / "sub" / "file.bin"
    atomic_write_bytes(path, b"first")
    atomic_write_bytes(path, b"second")
    assert path.read_bytes() == b"second"
    assert [p.name for p in path.parent.iterdir()] == ["file.bin"]
