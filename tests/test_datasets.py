import hashlib
import shutil

import numpy as np
import pytest

from explainopt import datasets
from explainopt.datasets import DataUnavailableError, FeatureSpec, fetch, list_datasets, load_dataset


@pytest.mark.parametrize("name", list_datasets())
def test_every_registered_dataset_loads_with_a_consistent_spec(name):
    data = load_dataset(name)
    assert data.n_features == len(data.spec) > 0
    assert len(data.X) == len(data.y) > 100
    assert set(np.unique(data.y)) == {0, 1}
    assert not data.X.isna().any().any()
    X = data.X.to_numpy()
    assert np.all(X >= data.lower - 1e-12) and np.all(X <= data.upper + 1e-12)
    for group, columns in data.groups().items():
        assert np.allclose(X[:, columns].sum(axis=1), 1.0), group
    for j, f in enumerate(data.spec):
        if f.kind in ("binary", "categorical"):
            assert set(np.unique(X[:, j])) <= {0.0, 1.0}, f.name
        if f.kind == "discrete":
            assert np.all(X[:, j] == np.round(X[:, j])), f.name


def test_ocean_header_rows_give_types_and_actionability():
    data = load_dataset("ensembles/German-Credit")
    spec = {f.name: f for f in data.spec}
    assert spec["Age"].kind == "discrete" and spec["Age"].actionability == "increase"
    sex = [f for f in data.spec if f.group == "Sex"]
    assert len(sex) == 2 and all(f.kind == "categorical" and f.actionability == "fixed" for f in sex)
    purpose = [f for f in data.spec if f.group == "Purpose"]
    assert len(purpose) > 2 and all(f.actionability == "free" for f in purpose)


def test_scaling_maps_to_unit_interval_and_back():
    data = load_dataset("robust-ce/ionosphere")
    scaled = data.scaled()
    X = scaled.X.to_numpy()
    assert X.min() >= 0 and X.max() <= 1
    assert np.allclose(scaled.unscale(X), data.X.to_numpy())
    constant = [f for f in scaled.spec if f.upper == 0.0]
    assert [f.name for f in constant] == ["a02"]  # the one constant column of ionosphere


def test_unknown_names_are_refused_with_a_hint():
    with pytest.raises(KeyError, match="did you mean 'carla/adult.csv'"):
        fetch("adult.csv")
    with pytest.raises(KeyError, match="unknown dataset 'mnist'"):
        load_dataset("mnist")
    with pytest.raises(KeyError, match="unknown CARLA dataset"):
        load_dataset("carla/mnist")


def test_hash_mismatch_is_reported_with_what_to_do(tmp_path, monkeypatch):
    path = "robust-ce/diabetes.csv"
    (tmp_path / "robust-ce").mkdir()
    shutil.copy(fetch(path), tmp_path / path)
    with open(tmp_path / path, "a") as handle:
        handle.write("1,2,3,4,5,6,7,8,1\n")
    monkeypatch.setenv("EXPLAINOPT_DATA", str(tmp_path))
    with pytest.raises(DataUnavailableError, match="delete it to download it again"):
        fetch(path)


def test_file_without_public_address_must_be_provided(tmp_path, monkeypatch):
    monkeypatch.setenv("EXPLAINOPT_DATA", str(tmp_path))
    with pytest.raises(DataUnavailableError, match="no public download address.*EXPLAINOPT_DATA"):
        fetch("clemo/spp_instance.json")


def test_missing_file_without_network_says_how_to_work_offline(tmp_path, monkeypatch):
    monkeypatch.setenv("EXPLAINOPT_DATA", str(tmp_path))
    entry = dict(datasets.registry()["robust-ce/diabetes.csv"], url="http://127.0.0.1:9/diabetes.csv")
    monkeypatch.setitem(datasets.registry(), "robust-ce/diabetes.csv", entry)
    with pytest.raises(DataUnavailableError, match="set EXPLAINOPT_DATA"):
        fetch("robust-ce/diabetes.csv")


def test_registry_hashes_match_the_mirror():
    for path, entry in datasets.registry().items():
        digest = hashlib.sha256(fetch(path).read_bytes()).hexdigest()
        assert digest == entry["sha256"], path


def test_feature_spec_validates_its_fields():
    with pytest.raises(ValueError, match="kind 'text'"):
        FeatureSpec("a", kind="text")
    with pytest.raises(ValueError, match="actionability 'decrease'"):
        FeatureSpec("a", actionability="decrease")
    with pytest.raises(ValueError, match="needs its one-hot group"):
        FeatureSpec("a", kind="categorical")
