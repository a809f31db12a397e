"""The lean core (issue 25, point 5): what ``pip install explainopt`` gives, and what the package exports.

The library is imported by an interpreter that sees only the core requirements of ``pyproject.toml`` and
their dependencies (resolved from the installed distributions' metadata, linked into a temporary folder;
nothing installed, no network), and a nearest counterfactual is found there. A core module that imports
an extra (torch, OR-Tools, a commercial solver, the book's toolchain) at import fails it.
"""

import importlib.metadata as metadata
import inspect
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

import explainopt.counterfactuals as C

ROOT = Path(__file__).resolve().parents[1]
#: Extras no core module may import when it is imported (import names).
EXTRAS = ("torch", "ortools", "gurobipy", "mosek", "papermill", "matplotlib", "jupyter_book")


def core_closure() -> dict[str, metadata.Distribution]:
    """The distributions of pyproject's ``[project] dependencies`` and of their own requirements,
    transitively (requirements under an extra's marker, or whose marker is false here, left out)."""
    todo = [Requirement(r) for r in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]]
    found = {}
    while todo:
        requirement = todo.pop()
        name = requirement.name.lower().replace("_", "-")
        if name in found or (requirement.marker is not None and not requirement.marker.evaluate({"extra": ""})):
            continue
        found[name] = metadata.distribution(name)
        todo += [Requirement(r) for r in found[name].requires or []]
    return found


def top_level_entries(dist: metadata.Distribution) -> set[Path]:
    """What `dist` puts at the top of its site-packages folder: packages, modules, bundled libraries
    (``numpy.libs``) and its ``.dist-info`` (read by ``importlib.metadata`` at import)."""
    if dist.files is None:
        raise AssertionError(f"{dist.metadata['Name']} lists no files (no RECORD): cannot link it")
    site = Path(dist.locate_file(""))
    return {site / f.parts[0] for f in dist.files
            if f.parts[0] not in ("..", "__pycache__") and not f.parts[0].endswith(".pth")}


@pytest.fixture(scope="module")
def lean_path(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("lean-site-packages")
    for dist in core_closure().values():
        for entry in top_level_entries(dist):
            if entry.exists() and not (folder / entry.name).exists():
                (folder / entry.name).symlink_to(entry)
    return folder


def test_the_core_closure_is_read_from_the_metadata_and_holds_no_extra():
    closure = core_closure()
    assert {"numpy", "scipy", "scikit-learn", "cvxpy", "highspy", "clarabel", "joblib"} <= set(closure)
    assert not {"torch", "ortools", "gurobipy", "mosek", "papermill", "matplotlib", "jupyter-book"} & set(closure)


LEAN_RUN = f"""
import sys
import explainopt, explainopt.counterfactuals as C, explainopt.encoders
from explainopt.counterfactuals import nearest_counterfactual
from sklearn.linear_model import LogisticRegression
import numpy as np

X = np.random.default_rng(0).uniform(size=(60, 3))
y = (X @ [1.0, -1.0, 0.5] > 0.25).astype(int)
model = LogisticRegression().fit(X, y)
ce = nearest_counterfactual(model, X[0], lower=0.0, upper=1.0)
assert ce.status == "optimal" and ce.valid and model.predict(ce.x[None])[0] != model.predict(X[:1])[0], ce
assert C.milp_r.__module__ == C.robx.__module__ == "explainopt.counterfactuals.baselines"  # no torch needed
try:
    C.wachter
except ImportError as error:
    assert "explainopt[torch]" in str(error), error
else:
    raise AssertionError("wachter imported without torch")
print(sorted(m for m in {EXTRAS!r} if m in sys.modules), "site" in sys.modules)
"""


def test_the_library_runs_in_an_environment_without_the_extras(lean_path):
    """``python -I -S``: no site-packages, no PYTHONPATH, no .pth files; only the core closure and lib/."""
    code = f"import sys; sys.path[:0] = [{str(lean_path)!r}, {str(ROOT / 'lib')!r}]\n" + LEAN_RUN
    out = subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split() == ["[]", "False"], out.stdout + out.stderr


def test_the_lean_environment_misses_an_extra_that_a_core_module_imports(lean_path):
    """The check can fail: the same interpreter cannot import torch, so a core module that did would fail."""
    code = f"import sys; sys.path[:0] = [{str(lean_path)!r}, {str(ROOT / 'lib')!r}]\nimport torch"
    out = subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode != 0 and "No module named 'torch'" in out.stderr


def _documented(obj) -> bool:
    doc = inspect.getdoc(obj) or ""
    generated = inspect.isclass(obj) and doc.startswith(f"{obj.__name__}(")  # a dataclass's own signature
    return len(doc) > 20 and not generated


@pytest.mark.parametrize("name", C.__all__)
def test_every_exported_name_resolves_and_is_documented(name):
    obj = getattr(C, name)
    assert getattr(obj, "__module__", "").startswith("explainopt."), name
    assert _documented(obj), f"{name} has no docstring"


def test_the_methods_named_like_their_modules_stay_reachable_both_ways():
    """``explainopt.counterfactuals.rbr`` is the module (as chapters import it) and the method is its
    attribute; the package exports every other method itself."""
    import importlib

    for name in ("proplace", "rbr", "roar", "adversarial_recourse"):
        module = importlib.import_module(f"explainopt.counterfactuals.{name}")
        assert getattr(C, name) is module and _documented(getattr(module, name)) and name not in C.__all__
    for method in ("nearest_counterfactual", "robust_region", "single_leaf_region", "certify_region",
                   "ensemble_counterfactual", "ensemble_counterfactuals", "milp_r", "robx", "proto_r", "wachter",
                   "roar_style"):
        assert method in C.__all__ and callable(getattr(C, method))
    with pytest.raises(AttributeError, match="no_such_method"):
        C.no_such_method
