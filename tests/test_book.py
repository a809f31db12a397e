"""The pipeline as a user meets it: clean notebooks, the papermill runner, the book build."""

import gzip
import json
from pathlib import Path

import nbformat
import pytest
import yaml

import pandas as pd

from explainopt import book
from explainopt.chapters import as_list, settings, solver_key

ROOT = Path(__file__).resolve().parents[1]
SMOKE_CHAPTERS = ROOT / "_build" / "smoke" / "book" / "chapters"  # see conftest.smoke_html
NOTEBOOKS = book.chapter_notebooks()


def test_there_is_a_notebook_for_every_chapter_in_the_table_of_contents():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [entry["file"] for part in toc["parts"] for entry in part["chapters"]]
    listed = {Path(f).name for f in files if f.startswith("book/chapters/")}
    assert {nb.stem for nb in NOTEBOOKS} | {"status"} == listed


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebooks_are_stored_clean_with_a_tagged_parameters_cell(notebook):
    nb = nbformat.read(notebook, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(not c.outputs and c.execution_count is None for c in code), "outputs must be stripped"
    first = code[0]
    assert "parameters" in first.metadata.get("tags", []), "first code cell must be tagged 'parameters'"
    for name in ("scale", "solver", "seed"):
        assert any(line.startswith(f"{name} =") for line in first.source.splitlines()), name
    assert 'scale = "book"' in first.source, "the default scale is book"


def _notebook(tmp_path, *sources):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src in sources]
    nb.cells[0].metadata["tags"] = ["parameters"]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path = tmp_path / "99_probe.ipynb"
    nbformat.write(nb, path)
    return path


def test_runner_injects_parameters_and_hides_the_parameter_cells(tmp_path):
    path = _notebook(tmp_path, 'scale = "book"\nseed = 0', "value = seed * 2")
    out = book.execute_chapter(path, tmp_path / "out", {"scale": "smoke", "seed": 21}, progress=False)
    nb = nbformat.read(out, as_version=4)
    tags = [c.metadata.get("tags", []) for c in nb.cells]
    assert any("injected-parameters" in t and "remove-cell" in t for t in tags)
    assert "seed = 21" in "".join(c.source for c in nb.cells)


def test_a_failing_cell_fails_the_run_naming_notebook_and_cell(tmp_path):
    path = _notebook(tmp_path, 'scale = "book"', "x = 1", "raise ValueError('broken on purpose')")
    with pytest.raises(book.ChapterFailed, match=r"99_probe.ipynb: cell \d+ raised ValueError: broken on purpose"):
        book.execute_chapter(path, tmp_path / "out", {"scale": "smoke"}, progress=False)


def test_start_chapter_refuses_an_unknown_scale():
    with pytest.raises(ValueError, match="scale='huge'"):
        book.start_chapter("00", scale="huge", solver="auto", seed=0)


@pytest.mark.notebook
@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_chapter_runs_at_smoke_scale(notebook, monkeypatch):
    monkeypatch.setenv("EXPLAINOPT_RESULTS", str(SMOKE_CHAPTERS / "results"))
    out = book.execute_chapter(notebook, SMOKE_CHAPTERS, {"scale": "smoke"}, progress=False)
    nb = nbformat.read(out, as_version=4)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors
    if notebook.stem[0].isdigit():  # chapters (not appendices) save their claims for the status page
        results = json.loads((SMOKE_CHAPTERS / "results" / f"{notebook.stem[:2]}.json").read_text())
        assert results["claims"] and results["provenance"]["scale"] == "smoke"


@pytest.mark.book
def test_book_builds_without_warnings_and_shows_every_chapter(smoke_html):
    """The smoke-scale book (built by the `smoke_html` fixture with warnings as errors)."""
    assert (smoke_html / "book" / "intro.html").exists()
    status = (smoke_html / "book" / "chapters" / "status.html").read_text()
    for notebook in NOTEBOOKS:
        page = (smoke_html / "book" / "chapters" / f"{notebook.stem}.html").read_text()
        assert "<img" in page, f"{notebook.stem} shows no figure"
        assert "injected-parameters" not in page
        if notebook.stem[0].isdigit():
            assert f"<p>{notebook.stem[:2]}</p></td>" in status, f"{notebook.stem} missing from the status page"


def test_a_students_copy_is_the_chapter_at_the_smoke_scale_and_keeps_their_edits(tmp_path):
    copy = book.prepare_student_copy("01", tmp_path)
    nb = nbformat.read(copy, as_version=4)
    injected = [c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert injected and 'scale = "smoke"' in injected[0].source
    assert all(not getattr(c, "outputs", None) for c in nb.cells if c.cell_type == "code")
    copy.write_text(copy.read_text() + "\n")  # the student's edit
    edited = copy.read_text()
    book.prepare_student_copy("01", tmp_path)
    assert copy.read_text() == edited


def test_list_parameters_from_papermill_strings():
    assert as_list("[2, 3]") == [2, 3]
    assert as_list('["x^3", "sin x"]') == ["x^3", "sin x"]
    assert as_list("x^3, sin x") == ["x^3", "sin x"]
    assert as_list((1, 2)) == [1, 2]
    with pytest.raises(TypeError, match="dimensions"):
        as_list(None, name="dimensions")


def test_the_default_solver_keys_cells_as_none_whatever_the_notebook_calls_it():
    assert solver_key("auto") is None and solver_key("AUTO") is None and solver_key(None) is None
    assert solver_key("highs") == "highs" and solver_key("gurobi") == "gurobi"
    grids = book.chapters.module("03").grids
    settings_ = settings(book.chapters.module("03").SCALES, "smoke")
    keys = lambda solver: [c["solver"] for g in grids(settings_, solver=solver).values() for c in g.configs if "solver" in c]
    assert keys("auto") == keys(None) and set(keys("auto")) == {None}


def test_settings_are_the_scale_with_the_readers_overrides():
    scales = {"smoke": {"datasets": ["a"], "instances": 1}, "book": {"datasets": ["a", "b"], "instances": 2}}
    assert settings(scales, "book") == {"datasets": ["a", "b"], "instances": 2}
    assert settings(scales, "book", datasets='["b"]', instances=None) == {"datasets": ["b"], "instances": 2}
    assert settings(scales, "smoke", instances=5)["instances"] == 5
    with pytest.raises(ValueError, match="unknown setting"):
        settings(scales, "book", rhos=[0.1])
    with pytest.raises(ValueError, match="scale='paper'"):
        settings(scales, "paper")


def test_the_run_records_the_solvers_its_results_name():
    run = book.ChapterRun("99", {"scale": "smoke"})
    run.record([{"solver": "highs+scip"}, {"solver": "highs", "fallback_from": "gurobi"}])
    run.record(pd.DataFrame({"solver": ["clarabel"]}))
    prov = run.provenance()
    assert prov["solvers"] == "clarabel, highs, scip" and prov["fallbacks"] == {"gurobi": 1}


def test_every_exercise_has_a_unique_label_and_a_known_level():
    table = book.exercises()
    assert len(table) and not table.label.duplicated().any()
    assert set(table.level) <= set(book.LEVELS), set(table.level) - set(book.LEVELS)
    assert all(label.startswith(f"ex-{chapter[:2]}-") for label, chapter in zip(table.label, table.chapter))


def test_the_exercise_index_links_every_exercise_by_level(tmp_path):
    page = book.write_exercise_index(tmp_path).read_text()
    for label in book.exercises().label:
        assert f"{{ref}}`{label}`" in page
    assert "**Derivation**" in page and "**Research**" in page


# ------------------------------------------------------------------ the paper scale renders from the store


def _stored(x: int) -> dict:
    return {"x": x}


def _doubled(x: int) -> dict:
    return {"x": 2 * x}


class _TwoGrids:
    """A chapter whose second grid exists only for the first grid's stored cells (as chapter 4's factuals
    are drawn with its stored networks)."""

    SCALES = {"paper": {}}
    cache = None

    @classmethod
    def grids(cls, settings):
        first = book.Grid(_stored, [{"x": 1}, {"x": 2}])
        done = [c for c in first.configs if cls.cache.get(_stored, c) is not None]
        return {"first": first, "second": book.Grid(_doubled, done)}


def test_fill_reads_the_grids_again_after_each_one_and_fills_only_the_named_grids(monkeypatch, tmp_path):
    from explainopt.experiments import ResultStore

    _TwoGrids.cache = ResultStore(tmp_path)
    monkeypatch.setattr(book.chapters, "module", lambda chapter: _TwoGrids)
    monkeypatch.setattr(book, "chapter_cache", lambda chapter, scale: _TwoGrids.cache)
    assert book.fill("99", only=["first"], n_jobs=1) == {"first": {"cells": 2, "computed": 2, "stale": 0}}
    assert not _TwoGrids.cache.path(_doubled).exists()
    report = book.fill("99", n_jobs=1)
    assert report["second"] == {"cells": 2, "computed": 2, "stale": 0}  # the second grid saw the first's cells
    with pytest.raises(ValueError, match="no grid"):
        book.fill("99", only=["third"])


def test_merge_adds_the_other_stores_cells_that_this_one_lacks_with_their_provenance(tmp_path):
    from explainopt.experiments import ResultStore

    mine, theirs = tmp_path / "mine", tmp_path / "theirs"
    book.run_grid(_stored, [{"x": x} for x in (1, 2)], cache=ResultStore(mine / "99"), progress=False)
    book.run_grid(_stored, [{"x": x} for x in (2, 3, 4)], cache=ResultStore(theirs / "99"), progress=False)
    assert book.merge(theirs, into=mine) == {"99": {"added": 2, "problems": []}}
    merged = {c["provenance"]["config"]["x"]: c for c in ResultStore(mine / "99").current()}
    assert sorted(merged) == [1, 2, 3, 4]
    stored = {c["provenance"]["config"]["x"]: c for c in ResultStore(theirs / "99").current()}
    assert merged[3]["provenance"] == stored[3]["provenance"] and merged[3]["result"] == stored[3]["result"]
    assert book.merge(theirs, into=mine)["99"]["added"] == 0  # nothing twice
    assert book.merge(theirs / "99", into=mine)["99"]["added"] == 0  # a chapter's folder is one chapter


def test_merge_names_what_it_cannot_read_and_refuses_a_folder_without_a_store(tmp_path):
    from explainopt.experiments import ResultStore

    theirs = tmp_path / "theirs"
    book.run_grid(_stored, [{"x": x} for x in (1, 2)], cache=ResultStore(theirs / "99"), progress=False)
    (theirs / "99" / "plain.jsonl.gz").write_text('{"key": "k"}\n')  # not gzip
    lines = gzip.decompress((theirs / "99" / "_stored.jsonl.gz").read_bytes())
    (theirs / "99" / "renamed.jsonl.gz").write_bytes(gzip.compress(lines.replace(b"._stored", b"._renamed")))
    report = book.merge(theirs, into=tmp_path / "mine")["99"]
    assert report["added"] == 2
    assert any("plain.jsonl.gz: not a results-store file" in p for p in report["problems"])
    assert any("_renamed is not in the code any more" in p for p in report["problems"])
    with pytest.raises(ValueError, match="no results-store files"):
        book.merge(tmp_path, into=tmp_path / "mine2")
    with pytest.raises(FileNotFoundError, match="no such folder"):
        book.merge(tmp_path / "nowhere", into=tmp_path / "mine3")


def test_off_defaults_names_the_parameters_a_reader_changed():
    from explainopt.chapters import optimizing_explanations as CH, settings

    defaults = {"scale": "book", "solver": "auto", "seed": 0, "tie_rtol": 1e-6, **settings(CH.SCALES, "book")}
    assert book.off_defaults("01", defaults) == {}
    assert book.off_defaults("01", {**defaults, "n_jobs": 7}) == {}  # how it runs, not what it computes
    assert book.off_defaults("01", {**defaults, **settings(CH.SCALES, "book", dimensions=[1])}) == {"dimensions": [1]}
    assert book.off_defaults("01", {**defaults, "seed": 3}) == {"seed": 3}


def test_a_run_off_the_defaults_leaves_the_committed_verdicts_alone(tmp_path, monkeypatch):
    from explainopt import reporting

    monkeypatch.setenv("EXPLAINOPT_RESULTS", str(tmp_path / "run"))
    monkeypatch.setattr(book, "RESULTS", tmp_path / "results")
    claim = reporting.Claim("c", "paper", "ours", reporting.REPRODUCED, "why")
    book.ChapterRun("01", {"scale": "book", "seed": 3}).finish([claim])
    assert (tmp_path / "run" / "01.json").exists() and not (tmp_path / "results" / "book" / "01.json").exists()
    book.ChapterRun("01", {"scale": "book", "seed": 0}).finish([claim])
    assert (tmp_path / "results" / "book" / "01.json").exists()


def test_a_missing_figure_says_how_to_compute_it():
    run = book.ChapterRun("02", {"scale": "paper"})
    assert "not computed yet (run `make paper NAME=02`)" in run.not_computed("Figure 5").data
    assert "make paper" not in book.ChapterRun("02", {"scale": "book"}).not_computed("Figure 5").data


def test_the_status_page_has_a_column_per_scale(monkeypatch, tmp_path):
    from explainopt import reporting

    monkeypatch.setattr(book, "RESULTS", tmp_path / "results")
    for scale, holds in (("book", False), ("paper", True)):
        reporting.save_chapter_results("05", [reporting.claim("a", paper=1, ours=1, holds=holds)], {"scale": scale},
                                       folder=tmp_path / "results" / scale)
    built = tmp_path / "out"
    reporting.save_chapter_results("05", [reporting.claim("a", paper=1, ours=1, holds=True)], {"scale": "smoke"},
                                   folder=built / "results")
    page = book.write_status_page(built).read_text()
    assert "this build: scale" in page and "book (committed): differ" in page and "paper (committed): reproduced" in page
    reporting.save_chapter_results("05", [reporting.claim("a", paper=1, ours=1, holds=False)], {"scale": "book"},
                                   folder=built / "results")
    assert "this build" not in book.write_status_page(built).read_text()  # a book build is the committed book column


def test_a_paper_run_shows_the_verdicts_that_moved_from_the_book_scale(monkeypatch, tmp_path):
    from explainopt import reporting

    shown = []
    monkeypatch.setattr(book, "RESULTS", tmp_path / "results")
    monkeypatch.setattr(book, "display", shown.append)
    run = book.ChapterRun("05", {"scale": "paper"})
    run.show_scale_changes([reporting.claim("a", paper=1, ours=2, holds=True)])
    assert "No book-scale verdicts are committed" in shown.pop().data
    reporting.save_chapter_results("05", [reporting.claim("a", paper=1, ours=1, holds=False)],
                                   {"scale": "book", "date": "2026-11-23"}, folder=tmp_path / "results" / "book")
    run.show_scale_changes([reporting.claim("a", paper=1, ours=2, holds=True, why="more cells")])
    text, table = shown
    assert "1 of the claims" in text.data and "2026-11-23" in text.data
    assert table.to_dict("records")[0]["paper: why"] == "more cells" and table.iloc[0]["book: verdict"] == "differs"
