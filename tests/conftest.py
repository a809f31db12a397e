"""Shared test set-up: the data mirror, the smoke-scale book and small helpers."""

import os
import shutil
from pathlib import Path

import explainopt  # noqa: F401  (first: it pins the numerical code paths before NumPy loads its kernels)
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"

if "EXPLAINOPT_DATA" not in os.environ and SHARED_DATA.is_dir():
    os.environ["EXPLAINOPT_DATA"] = str(SHARED_DATA)


def pytest_configure(config):
    config.addinivalue_line("filterwarnings", "ignore::sklearn.exceptions.ConvergenceWarning")


def pytest_collection_modifyitems(items):
    """The chapter notebooks (the longest tests, a minute or more each) first, so that the parallel workers
    (``-n 2 --dist worksteal``) do not end on one of them while the other worker idles."""
    items.sort(key=lambda item: item.get_closest_marker("notebook") is None)


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture(scope="session")
def smoke_html():
    """The book built at the smoke scale with warnings as errors (chapters executed by the notebook tests
    of the first pytest run, or here if missing); returns the folder of the built HTML."""
    from explainopt import book

    root = ROOT / "_build" / "smoke"
    chapters = root / "book" / "chapters"
    os.environ["EXPLAINOPT_RESULTS"] = str(chapters / "results")
    chapters.mkdir(parents=True, exist_ok=True)
    for name in ("_config.yml", "_toc.yml"):
        shutil.copy(ROOT / name, root / name)
    shutil.copytree(ROOT / "_static", root / "_static", dirs_exist_ok=True)  # the book's CSS
    for page in (ROOT / "book").glob("*.*"):
        shutil.copy(page, root / "book" / page.name)
    for notebook in book.chapter_notebooks():
        if not (chapters / notebook.name).exists():
            book.execute_chapter(notebook, chapters, {"scale": "smoke"}, progress=False)
    book.write_pages(chapters)
    shutil.rmtree(root / "_build", ignore_errors=True)
    book.build(root, warnings_as_errors=True)
    return root / "_build" / "html"


@pytest.fixture
def book_style():
    """The book's figure style with its layout check: a figure drawn with a layout problem fails the test."""
    import warnings

    import matplotlib
    import matplotlib.pyplot as plt

    from explainopt import plots

    with matplotlib.rc_context(), warnings.catch_warnings():
        plots.use_book_style()
        warnings.simplefilter("error", plots.FigureLayoutWarning)
        yield plots
    plt.close("all")
