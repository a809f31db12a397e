"""Datasets: a hash-checked registry, pooch fetching, and loaders that return a :class:`Dataset`.

Every file the chapters use is listed in ``registry.json`` (path in the cache, sha256, original URL).
Files are fetched with pooch from their original public location into ``$EXPLAINOPT_DATA`` (default:
the user cache directory) and checked against their sha256; a file already in that folder with the
right hash is used as is, so pointing ``EXPLAINOPT_DATA`` at a pre-seeded copy needs no network.

A :class:`Dataset` holds the feature frame ``X`` (categorical features one-hot encoded, two-level ones
as a single 0/1 column), the target ``y`` and one :class:`FeatureSpec` per column: its type, bounds,
actionability and one-hot group. The OCEAN-style files of Forel et al. carry the types and the
actionability in two header rows; the other loaders infer types from the values.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field, replace
from functools import cache
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

KINDS = ("continuous", "discrete", "binary", "categorical")
ACTIONABILITY = ("free", "fixed", "increase")


class DataUnavailableError(RuntimeError):
    """A dataset file cannot be fetched or fails its hash check."""


@dataclass(frozen=True)
class FeatureSpec:
    """One column of the feature matrix.

    kind: ``continuous``, ``discrete`` (integer-valued), ``binary`` or ``categorical`` (one column of a
    one-hot group named by ``group``). actionability: ``free``, ``fixed`` or ``increase`` (increase only).
    """

    name: str
    kind: str = "continuous"
    lower: float = 0.0
    upper: float = 1.0
    actionability: str = "free"
    group: str | None = None

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"feature {self.name!r}: kind {self.kind!r} not in {KINDS}")
        if self.actionability not in ACTIONABILITY:
            raise ValueError(f"feature {self.name!r}: actionability {self.actionability!r} not in {ACTIONABILITY}")
        if self.kind == "categorical" and self.group is None:
            raise ValueError(f"feature {self.name!r}: a categorical column needs its one-hot group")


@dataclass
class Dataset:
    """Features, target and per-feature spec of one dataset (NumPy/pandas in and out)."""

    name: str
    X: pd.DataFrame
    y: pd.Series
    spec: list[FeatureSpec]
    description: str = ""
    scaling: dict = field(default_factory=dict)

    def __post_init__(self):
        if list(self.X.columns) != [f.name for f in self.spec]:
            raise ValueError("Dataset: spec names must match the columns of X, in order")
        if len(self.X) != len(self.y):
            raise ValueError(f"Dataset: X has {len(self.X)} rows but y has {len(self.y)}")

    @property
    def feature_names(self) -> list[str]:
        return list(self.X.columns)

    @property
    def n_features(self) -> int:
        return self.X.shape[1]

    @property
    def lower(self) -> np.ndarray:
        return np.array([f.lower for f in self.spec], dtype=float)

    @property
    def upper(self) -> np.ndarray:
        return np.array([f.upper for f in self.spec], dtype=float)

    def groups(self) -> dict[str, list[int]]:
        """One-hot groups: group name -> column indices (exactly one of them is 1)."""
        out: dict[str, list[int]] = {}
        for j, f in enumerate(self.spec):
            if f.group is not None:
                out.setdefault(f.group, []).append(j)
        return out

    def scaled(self) -> "Dataset":
        """Min-max scale every non-categorical column to [0, 1] (constant columns become 0).

        The scaling (``lower``, ``upper`` per column) is kept in ``scaling`` so that counterfactuals
        can be mapped back with :meth:`unscale`. Discrete columns become continuous: their integer grid
        is no longer integer after scaling.
        """
        lo, hi = self.X.min().to_numpy(float), self.X.max().to_numpy(float)
        width = np.where(hi > lo, hi - lo, 1.0)
        X = (self.X - lo) / width
        spec = [replace(f, lower=0.0, upper=1.0 if h > l else 0.0, kind="continuous" if f.kind == "discrete" else f.kind)
                for f, l, h in zip(self.spec, lo, hi)]
        return Dataset(self.name, X, self.y, spec, self.description, {"lower": lo, "width": width})

    def unscale(self, X_scaled) -> np.ndarray:
        """Map scaled points back to the original units."""
        if not self.scaling:
            return np.asarray(X_scaled, dtype=float)
        return np.asarray(X_scaled, dtype=float) * self.scaling["width"] + self.scaling["lower"]


# --------------------------------------------------------------------------- registry and fetching

@cache
def registry() -> dict[str, dict]:
    """Path in the cache -> {sha256, url, note} for every file the chapters use."""
    text = resources.files("explainopt").joinpath("registry.json").read_text()
    return json.loads(text)["files"]


def _pooch():
    """pooch, imported where data is fetched (an extra: ``pip install explainopt[book]``)."""
    try:
        import pooch
    except ImportError:
        raise ImportError("fetching datasets needs pooch: pip install 'explainopt[book]' (or pooch)") from None
    return pooch


def data_dir() -> Path:
    """The data cache: ``$EXPLAINOPT_DATA`` or the user cache directory."""
    if os.environ.get("EXPLAINOPT_DATA"):
        return Path(os.environ["EXPLAINOPT_DATA"]).expanduser()
    return Path(_pooch().os_cache("explainopt")).expanduser()


def fetch(path: str) -> Path:
    """Local path of a registry file, downloaded and hash-checked if needed."""
    files = registry()
    if path not in files:
        close = [p for p in files if Path(p).stem.lower() == Path(path).stem.lower()]
        hint = f"; did you mean {close[0]!r}?" if close else f"; known files: {', '.join(sorted(files)[:8])}, ..."
        raise KeyError(f"{path!r} is not in the dataset registry{hint}")
    entry, target = files[path], data_dir() / path
    if target.exists():
        digest = hashlib.sha256(target.read_bytes()).hexdigest()
        if digest != entry["sha256"]:
            raise DataUnavailableError(
                f"{target} has sha256 {digest}, expected {entry['sha256']}: the file is corrupt or another "
                f"version; delete it to download it again" + (f" from {entry['url']}" if entry["url"] else "")
            )
        return target
    if not entry["url"]:
        raise DataUnavailableError(
            f"{path} has no public download address ({entry['note']}); copy it into {data_dir()} "
            f"(set EXPLAINOPT_DATA to a folder that holds it, e.g. the project's shared data mirror)"
        )
    try:
        local = _pooch().retrieve(entry["url"], known_hash=f"sha256:{entry['sha256']}",
                                  fname=Path(path).name, path=target.parent, progressbar=False)
    except ValueError as exc:  # pooch's hash mismatch
        raise DataUnavailableError(f"{path}: downloaded file fails its hash check ({exc})") from exc
    except Exception as exc:
        raise DataUnavailableError(
            f"cannot download {path} from {entry['url']} ({exc.__class__.__name__}: {exc}); without network, "
            f"set EXPLAINOPT_DATA to a folder holding a copy"
        ) from exc
    return Path(local)


# --------------------------------------------------------------------------- loaders

def _infer_spec(X: pd.DataFrame) -> list[FeatureSpec]:
    spec = []
    for name in X.columns:
        col = X[name].to_numpy(float)
        lo, hi = float(col.min()), float(col.max())
        if set(np.unique(col)) <= {0.0, 1.0}:
            kind = "binary"
        elif np.all(col == np.round(col)):
            kind = "discrete"
        else:
            kind = "continuous"
        spec.append(FeatureSpec(name, kind, lo, hi))
    return spec


def _encode_categoricals(frame: pd.DataFrame, categorical: list[str]) -> pd.DataFrame:
    """Two-level categoricals -> one 0/1 column; more levels -> one-hot columns `name=level`."""
    parts = []
    for name in frame.columns:
        col = frame[name]
        if name not in categorical:
            parts.append(col.astype(float))
            continue
        levels = sorted(col.unique(), key=str)
        if len(levels) == 2:
            parts.append((col == levels[1]).astype(float).rename(name))
        else:
            parts.append(pd.get_dummies(col, prefix=name, prefix_sep="=").astype(float))
    return pd.concat(parts, axis=1)


def _robust_ce(file: str, columns: list[str] | None, target: str, positive=1) -> tuple[pd.DataFrame, pd.Series]:
    frame = pd.read_csv(fetch(f"robust-ce/{file}"), header=None if columns else 0, names=columns)
    y = (frame.pop(target) == positive).astype(int)
    return frame.astype(float), y


def load_robust_ce(name: str) -> Dataset:
    """banknote, diabetes, ionosphere: the datasets of Maragno et al. (raw units; call ``.scaled()``)."""
    if name == "banknote":
        cols = ["variance", "skewness", "curtosis", "entropy", "class"]
        X, y = _robust_ce("data_banknote_authentication.csv", cols, "class")
    elif name == "diabetes":
        X, y = _robust_ce("diabetes.csv", None, "Outcome")
    elif name == "ionosphere":
        cols = [f"a{j:02d}" for j in range(1, 35)] + ["class"]
        X, y = _robust_ce("ionosphere.csv", cols, "class", positive="g")
    else:
        raise KeyError(f"unknown robust-CE dataset {name!r}; expected banknote, diabetes or ionosphere")
    return Dataset(name, X, y, _infer_spec(X), description=f"UCI {name} (Maragno et al.)")


CARLA_TARGETS = {
    "adult": ("adult.csv", "income"),
    "compas": ("compas.csv", "score"),
    "give_me_some_credit": ("give_me_some_credit_test.csv", "SeriousDlqin2yrs"),
    "heloc": ("heloc.csv", "RiskPerformance"),
}


def load_carla(name: str) -> Dataset:
    """CARLA-preprocessed adult, compas, give_me_some_credit (test split only), heloc (Jiang et al.)."""
    if name not in CARLA_TARGETS:
        raise KeyError(f"unknown CARLA dataset {name!r}; expected one of {sorted(CARLA_TARGETS)}")
    file, target = CARLA_TARGETS[name]
    frame = pd.read_csv(fetch(f"carla/{file}"))
    y = frame.pop(target).astype(int)
    categorical = [c for c in frame.columns if frame[c].dtype == object]
    X = _encode_categoricals(frame, categorical)
    return Dataset(name, X, y, _infer_spec(X), description=f"CARLA {name}")


OCEAN_KIND = {"N": "continuous", "D": "discrete", "B": "binary", "C": "categorical"}
OCEAN_ACTION = {"FREE": "free", "FIXED": "fixed", "INC": "increase"}
ENSEMBLE_DATASETS = ("Adult", "COMPAS", "Credit-Card-Default", "German-Credit", "Phishing", "Spambase",
                     "Students-Performance")


def load_ocean(name: str) -> Dataset:
    """The datasets of Forel et al. in OCEAN's format (header rows: names, types, actionability).

    Constant columns are dropped; categorical features become one-hot groups and are never
    increase-only (forced free), as in the authors' code.
    """
    if name not in ENSEMBLE_DATASETS:
        raise KeyError(f"unknown ensemble dataset {name!r}; expected one of {ENSEMBLE_DATASETS}")
    raw = pd.read_csv(fetch(f"ensembles/{name}.csv"), header=[0, 1, 2], skipinitialspace=True)
    raw.columns = [(n.strip(), t.strip(), a.strip()) for n, t, a in raw.columns]
    target = next(c for c in raw.columns if c[2] == "PREDICT")
    y = raw.pop(target).astype(int).rename(target[0])
    raw = raw.loc[:, raw.nunique() > 1]
    spec, parts = [], []
    for (col, t, a), values in raw.items():
        kind, action = OCEAN_KIND[t], OCEAN_ACTION[a]
        if kind == "categorical":
            dummies = pd.get_dummies(values, prefix=col, prefix_sep="=").astype(float)
            action = "fixed" if action == "fixed" else "free"
            spec += [FeatureSpec(d, "categorical", 0.0, 1.0, action, col) for d in dummies.columns]
            parts.append(dummies)
        else:
            if kind == "binary" and not pd.api.types.is_numeric_dtype(values):
                values = values == sorted(values.unique())[1]  # e.g. school GP/MS -> 0/1
            v = values.astype(float)
            spec.append(FeatureSpec(col, kind, float(v.min()), float(v.max()), action))
            parts.append(v.rename(col))
    X = pd.concat(parts, axis=1)
    return Dataset(name, X, y, spec, description=f"{name} (Forel et al., OCEAN format)")


def load_dataset(name: str) -> Dataset:
    """Load by qualified name: ``robust-ce/diabetes``, ``carla/adult``, ``ensembles/Spambase``, ..."""
    family, _, short = name.partition("/")
    loaders = {"robust-ce": load_robust_ce, "carla": load_carla, "ensembles": load_ocean}
    if family not in loaders or not short:
        raise KeyError(f"unknown dataset {name!r}; expected one of {', '.join(list_datasets())}")
    return loaders[family](short)


def list_datasets() -> list[str]:
    """Qualified names accepted by :func:`load_dataset`."""
    return ([f"robust-ce/{n}" for n in ("banknote", "diabetes", "ionosphere")]
            + [f"carla/{n}" for n in CARLA_TARGETS] + [f"ensembles/{n}" for n in ENSEMBLE_DATASETS])
