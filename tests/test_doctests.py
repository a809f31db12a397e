"""Every Examples section of the public modules runs as a doctest, so that what the API reference in the
book (book/api.md) shows is what the library does; the public entry points of the modules in
``DOCUMENTED`` each have one."""

import dataclasses
import doctest
import importlib
import inspect

import pytest

#: Modules whose public functions and classes must each show an example.
DOCUMENTED = ["explainopt.encoders", "explainopt.attributions", "explainopt.clemo", "explainopt.solvers",
              "explainopt.counterfactuals.ensembles"]
#: Every module whose examples run (the counterfactual methods' too, where they have them). doctest finds only the
#: objects a module defines, so a package's submodules (``regions.algorithm``, ...) are listed themselves.
MODULES = ["explainopt.encoders.base", "explainopt.encoders.linear", "explainopt.encoders.trees",
           "explainopt.encoders.networks", "explainopt.encoders.pipelines", "explainopt.attributions",
           "explainopt.clemo", "explainopt.solvers", "explainopt.counterfactuals.base",
           "explainopt.counterfactuals.nearest", "explainopt.counterfactuals.regions",
           "explainopt.counterfactuals.regions.algorithm", "explainopt.counterfactuals.regions.certify",
           "explainopt.counterfactuals.regions.sets", "explainopt.counterfactuals.ensembles",
           "explainopt.counterfactuals.proplace", "explainopt.counterfactuals.baselines",
           "explainopt.counterfactuals.roar", "explainopt.counterfactuals.rbr", "explainopt.counterfactuals.proto"]
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


@pytest.mark.parametrize("name", MODULES)
def test_the_examples_of_a_module_give_what_they_show(name):
    module = importlib.import_module(name)
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    report = []
    for test in doctest.DocTestFinder(exclude_empty=True).find(module, name):
        runner.run(test, out=report.append)
    assert runner.failures == 0, "".join(report)


def public_entry_points(name: str) -> list[str]:
    """The functions and classes (not exceptions, not dataclasses: results and records) a module exports:
    its ``__all__``, else its public names defined there."""
    module = importlib.import_module(name)
    names = getattr(module, "__all__", None) or [n for n, obj in vars(module).items()
                                                 if not n.startswith("_") and getattr(obj, "__module__", "") == name]
    objects = {n: getattr(module, n) for n in names}
    return [n for n, obj in objects.items() if inspect.isfunction(obj) or inspect.isclass(obj)
            and not issubclass(obj, Exception) and not dataclasses.is_dataclass(obj)]


@pytest.mark.parametrize("name", DOCUMENTED)
def test_every_public_entry_point_shows_an_example(name):
    module = importlib.import_module(name)
    missing = [n for n in public_entry_points(name) if ">>> " not in (inspect.getdoc(getattr(module, n)) or "")]
    assert not missing, f"{name}: no Examples section in {missing}"
