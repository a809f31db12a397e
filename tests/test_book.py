"""The pipeline as a user meets it: clean notebooks, the papermill runner, the book build."""

import gzip
import json
import platform
import re
import shutil
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


#: The longest code line the book's 676 px text column shows without scrolling sideways (measured in
#: Chromium: a line of 74 characters scrolls its code box, 656 px of text in 650).
CODE_LINE_MAX = 73
#: The cell tags that keep a cell's code out of the book (the runner removes the parameters cell); a
#: ``hide-input`` cell's code is one click away, so its lines count.
HIDDEN_CODE = {"remove-cell", "remove-input", "parameters"}


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_no_code_line_the_book_shows_is_wider_than_its_column(notebook):
    nb = nbformat.read(notebook, as_version=4)
    long = [f"cell {i}: {line!r} ({len(line)} characters)" for i, cell in enumerate(nb.cells)
            if cell.cell_type == "code" and not HIDDEN_CODE & set(cell.metadata.get("tags", []))
            for line in cell.source.splitlines() if len(line) > CODE_LINE_MAX]
    assert not long, f"code lines over {CODE_LINE_MAX} characters:\n" + "\n".join(long)


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


def test_the_run_box_shows_the_scales_value_where_a_parameter_is_none(monkeypatch):
    from explainopt.chapters import robust_ensembles

    shown = []
    monkeypatch.setattr(book, "display", shown.append)
    smoke = robust_ensembles.SCALES["smoke"]
    book.start_chapter("05", scale="smoke", solver="auto", seed=0, datasets=None, betas=[0.05], n_factuals=None)
    box = shown.pop().data
    assert f"| `datasets` | `None` → `{smoke['datasets']!r}` (the smoke scale's) |" in box
    assert f"| `n_factuals` | `None` → `{smoke['factuals']!r}` (the smoke scale's) |" in box  # n_factuals: factuals
    assert "| `betas` | `[0.05]` |" in box and "| `seed` | `0` |" in box
    book.start_chapter("A1", scale="smoke", solver="auto", seed=0, dataset=None)  # no chapter module
    assert "| `dataset` | `None` |" in shown.pop().data


@pytest.mark.notebook
@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_chapter_runs_at_smoke_scale(notebook, monkeypatch):
    monkeypatch.setenv("EXPLAINOPT_RESULTS", str(SMOKE_CHAPTERS / "results"))
    out = book.execute_chapter(notebook, SMOKE_CHAPTERS, {"scale": "smoke"}, progress=False)
    nb = nbformat.read(out, as_version=4)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors
    # every figure the chapter draws is checked when drawn (explainopt.plots.watch_layout)
    layout = [o.text for c in nb.cells if c.cell_type == "code" for o in c.outputs
              if o.output_type == "stream" and "FigureLayoutWarning" in o.text]
    assert not layout, "a figure does not fit the page:\n" + "\n".join(layout)
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


@pytest.mark.book
def test_the_api_reference_documents_every_public_module_with_its_examples(smoke_html):
    """book/api.md, generated from the docstrings by autodoc during the same -W -n build."""
    page = (smoke_html / "book" / "api.html").read_text(encoding="utf-8")
    for name in ("explainopt.counterfactuals.nearest_counterfactual", "explainopt.encoders.encode",
                 "explainopt.encoders.column_map", "explainopt.attributions.solve_explanations",
                 "explainopt.clemo.fit_clemo", "explainopt.solvers.solve", "explainopt.experiments.run_grid"):
        assert f'id="{name}"' in page, f"{name} is not on the API page"
    assert page.count('class="rubric">Examples<') >= 50, "the Examples sections did not render"
    assert page.count('<div class="doctest highlight') >= 50, "the examples are not shown as code"
    assert "<p>Parameters</p>" not in page and "----------" not in page, "a NumPy section rendered as text"


def test_the_api_reference_is_in_the_table_of_contents():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    assert "book/api" in [entry["file"] for part in toc["parts"] for entry in part["chapters"]]


@pytest.mark.book
def test_the_built_book_numbers_exercises_per_chapter_and_prints_no_leftovers(smoke_html):
    numbers = book.chapter_numbers()
    for notebook in NOTEBOOKS:
        page = (smoke_html / "book" / "chapters" / f"{notebook.stem}.html").read_text(encoding="utf-8")
        if notebook.stem in numbers:
            assert f"Exercise {numbers[notebook.stem]}.1 (" in page, f"{notebook.stem}: not numbered in its chapter"
        assert not re.search(r"exercise\s+<a [^>]*><span[^>]*>Exercise", page), "exercise Exercise"
        assert not re.search(r"<pre>(<span></span>)?\s*</pre>", page), f"{notebook.stem}: an empty code box"
        assert "dtype: " not in page and "CH.MIN_FACTUALS" not in page
    teaching = (smoke_html / "book" / "teaching.html").read_text(encoding="utf-8")
    assert "Exercise 2.1" in teaching and "~" in teaching


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


def test_every_level_announced_has_exercises_and_every_exercise_above_the_easiest_has_a_hint():
    table = book.exercises()
    assert set(table.level) == set(book.LEVELS), "an announced level without exercises, or the reverse"
    above = table[table.level != book.LEVELS[0]]
    assert len(above) and above.hint.all(), f"no hint: {list(above.label[~above.hint])}"
    teaching = (ROOT / "book" / "teaching.md").read_text(encoding="utf-8")
    assert all(f"*{level}*" in teaching for level in book.LEVELS) and "*reading*" not in teaching


def test_exercises_are_numbered_within_their_chapter():
    table = book.exercises()
    numbers = book.chapter_numbers()
    assert numbers["01_optimizing_explanations"] == 1 and numbers["02_robust_regions"] == 2
    for chapter, rows in table.groupby("chapter"):
        assert list(rows.number) == [f"{numbers[chapter]}.{k}" for k in range(1, len(rows) + 1)], chapter
    # Sphinx numbers them so: the chapters part is numbered, and figures count within a chapter
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert config["sphinx"]["config"]["numfig_secnum_depth"] == 1
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    numbered = [entry["file"] for part in toc["parts"] if part.get("numbered") for entry in part["chapters"]]
    assert {f"book/chapters/{chapter}" for chapter in table.chapter} <= set(numbered)


def test_the_chapter_numbers_come_from_the_numbered_part_of_the_table_of_contents(tmp_path):
    toc = tmp_path / "_toc.yml"
    toc.write_text(yaml.safe_dump({"format": "jb-book", "root": "intro", "parts": [
        {"caption": "A", "chapters": [{"file": "book/chapters/status"}]},
        {"caption": "B", "numbered": 1, "chapters": [{"file": "book/chapters/02_b"}, {"file": "book/chapters/01_a"}]}]}))
    assert book.chapter_numbers(toc) == {"02_b": 1, "01_a": 2}


def test_a_reference_to_an_exercise_is_not_preceded_by_the_word_exercise():
    """{ref} to an exercise renders "Exercise 2.1": "exercise {ref}`...`" would read "exercise Exercise 2.1"."""
    for notebook in NOTEBOOKS:
        for cell in nbformat.read(notebook, as_version=4).cells:
            if cell.cell_type == "markdown":
                assert not re.search(r"\bexercises?\s+\{(num)?ref\}", cell.source, re.I), (notebook.name, cell.id)


def test_every_directive_fence_of_the_notebooks_is_closed():
    """An unclosed ```` after a solution's text opens an empty code block in the book."""
    for notebook in NOTEBOOKS:
        for cell in nbformat.read(notebook, as_version=4).cells:
            if cell.cell_type == "markdown":
                fences = [line.strip() for line in cell.source.splitlines() if re.fullmatch(r"\s*(`{3,}|:{3,}).*", line)]
                closers = [f for f in fences if set(f) in ({"`"}, {":"})]  # a fence alone; an opener names something
                assert 2 * len(closers) == len(fences), (notebook.name, cell.id)


def test_the_exercise_index_gives_title_level_and_time_of_every_exercise_by_chapter_and_level(tmp_path):
    table = book.exercises()
    assert table.minutes.notna().all(), f"no *Time: ~N min*: {list(table.label[table.minutes.isna()])}"
    page = book.write_exercise_index(tmp_path).read_text(encoding="utf-8")
    rows = {}
    for row in _table_rows(page):
        label = re.search(r"<(ex-[\w-]+)>", row[1] if len(row) > 1 else "")
        if label:
            rows[label[1]] = row
    for ex in table.itertuples():
        level, shown, time = rows[ex.label]
        assert level == ex.level and shown == f"{{numref}}`Exercise %s <{ex.label}>`: {ex.title}"
        assert time == f"~{book.minutes_text(ex.minutes)}" and ex.minutes > 0
    headings = [line for line in page.splitlines() if line.startswith("### ")]
    assert headings == [f"### Chapter {n}" for n in sorted(book.chapter_numbers()[c] for c in set(table.chapter))]
    for section in page.split("### ")[1:]:  # within a chapter, easiest level first
        levels = [r[0] for r in _table_rows(section)]
        assert levels == sorted(levels, key=book.LEVELS.index)
    assert book.minutes_text(45) == "45 min" and book.minutes_text(90) == "1 h 30 min" and book.minutes_text(120) == "2 h"


def _solution_code_cells(nb) -> set[str]:
    """The ids of the code cells between a {solution-start} and its {solution-end}."""
    inside, ids = False, set()
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            inside = ("{solution-start}" in cell.source or inside) and "{solution-end}" not in cell.source
        elif inside:
            ids.add(cell.id)
    return ids


@pytest.mark.parametrize("notebook", [nb for nb in NOTEBOOKS if nb.stem[0].isdigit()], ids=lambda p: p.stem)
def test_the_students_copy_of_a_chapter_has_no_solution_but_every_exercise_and_hint(notebook):
    nb = nbformat.read(notebook, as_version=4)
    student = book.strip_solutions(nb)
    markdown = "\n".join(c.source for c in student.cells if c.cell_type == "markdown")
    assert "{solution" not in markdown
    hidden = _solution_code_cells(nb)
    assert hidden and {c.id for c in student.cells if c.cell_type == "code"} == \
        {c.id for c in nb.cells if c.cell_type == "code"} - hidden
    exercises = lambda n: [b for c in n.cells if c.cell_type == "markdown" for b in book.directive_blocks(c.source, "exercise")]
    assert exercises(student) == exercises(nb) and len(exercises(nb)) >= 5
    assert len(nb.cells) > len(student.cells) and "{solution" in "".join(c.source for c in nb.cells)  # a copy


def test_a_solution_block_is_cut_out_of_a_cell_and_the_text_around_it_stays():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("## Exercises\n\n```{exercise} A title\n:label: ex-99-a\n\n*Level: research.*"
                                              "\n\n:::{hint}\nLook.\n:::\n```\n\n```{solution} ex-99-a\n:class: dropdown\n\n"
                                              "The answer.\n```\n\nAfter the solution."),
                nbformat.v4.new_markdown_cell("````{solution-start} ex-99-a\n````\nAn answer"),
                nbformat.v4.new_code_cell("print('the solution')"),
                nbformat.v4.new_markdown_cell("````{solution-end}\n````\nOn we go.")]
    cells = book.strip_solutions(nb).cells
    assert [c.cell_type for c in cells] == ["markdown", "markdown"]
    assert "{exercise} A title" in cells[0].source and "{hint}" in cells[0].source
    assert "The answer" not in cells[0].source and cells[0].source.endswith("After the solution.")
    assert cells[1].source == "On we go."


def test_the_student_edition_is_the_book_without_solutions(tmp_path):
    chapters = tmp_path / "chapters"
    chapters.mkdir()
    shutil.copy(NOTEBOOKS[0], chapters / NOTEBOOKS[0].name)
    (chapters / "status.md").write_text("# Reproduction status\n")
    assert book.main(["student-book", "--chapters", str(chapters), "--output", str(tmp_path / "s"), "--no-build"]) == 0
    copy = nbformat.read(tmp_path / "s" / "book" / "chapters" / NOTEBOOKS[0].name, as_version=4)
    assert "{solution" not in "".join(c.source for c in copy.cells) and (tmp_path / "s" / "book" / "chapters" / "status.md").exists()
    assert "student edition" in (tmp_path / "s" / "book" / "intro.md").read_text(encoding="utf-8")
    assert "(student edition)" in yaml.safe_load((tmp_path / "s" / "_config.yml").read_text())["title"]
    assert (tmp_path / "s" / "_toc.yml").read_text() == (ROOT / "_toc.yml").read_text()
    empty = tmp_path / "empty"
    empty.mkdir()
    assert book.main(["student-book", "--chapters", str(empty), "--output", str(tmp_path / "t"), "--no-build"]) == 1
    makefile = (ROOT / "Makefile").read_text()
    assert "\nstudent-book:" in makefile and "explainopt.book student-book" in makefile
    assert "make student-book" in (ROOT / "README.md").read_text() and "make student-book" in (ROOT / "book" / "teaching.md").read_text()


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


COMPUTED = []


def _replicate(kind: str, index: int) -> dict:
    COMPUTED.append((kind, index))
    return {"kind": kind, "index": index}


def _other(kind: str, index: int) -> dict:
    COMPUTED.append(("other " + kind, index))
    return {"kind": kind}


def _replicates(func, kinds, n=3, **extra) -> book.Grid:
    """A grid of `n` replicates (``index``) of each kind, listed kind-major as a chapter might order them."""
    return book.Grid(func, [dict(kind=k, index=i, **extra) for k in kinds for i in range(n)])


def test_the_fill_order_is_round_robin_over_configurations_counting_the_stored_cells():
    grid = _replicates(_replicate, "abc")
    order = book.fill_order(grid, stored=set())
    assert [(grid.configs[i]["kind"], grid.configs[i]["index"]) for i in order] == \
        [("a", 0), ("b", 0), ("c", 0), ("a", 1), ("b", 1), ("c", 1), ("a", 2), ("b", 2), ("c", 2)]
    grid.order = [8, 7, 6, 5, 4, 3, 2, 1, 0]  # the chapter's priority decides within a round
    assert [grid.configs[i]["kind"] + str(grid.configs[i]["index"]) for i in book.fill_order(grid, set())] == \
        ["c2", "b2", "a2", "c1", "b1", "a1", "c0", "b0", "a0"]
    grid.order = None
    assert [grid.configs[i]["kind"] + str(grid.configs[i]["index"]) for i in book.fill_order(grid, {0, 1})] == \
        ["b0", "c0", "b1", "c1", "a2", "b2", "c2"]  # "a" has two cells stored: its third comes in round 3
    assert book.configuration({"kind": "a", "index": 1, "seed": 2, "sim": 0}) == book.configuration({"kind": "a"})


class _Chapter:
    """A chapter of two grids, two configurations with three replicates each (as every chapter's grids)."""

    SCALES = {"paper": {}, "book": {}}
    GRID_CLAIMS = {"first": ["claim A"], "second": ["claim B", "claim C"]}

    @staticmethod
    def grids(settings):
        return {"first": _replicates(_replicate, "ab"), "second": _replicates(_other, "ab")}


def _chapter(monkeypatch, store):
    monkeypatch.setattr(book.chapters, "module", lambda chapter: _Chapter)
    monkeypatch.setattr(book, "chapter_cache", lambda chapter, scale: store)
    COMPUTED.clear()


def test_fill_computes_every_configurations_first_cell_in_every_grid_before_any_second(monkeypatch, tmp_path):
    from explainopt.experiments import ResultStore

    _chapter(monkeypatch, ResultStore(tmp_path))
    report = book.fill("99", n_jobs=1)
    assert report == {"first": {"cells": 6, "computed": 6, "stale": 0}, "second": {"cells": 6, "computed": 6, "stale": 0}}
    assert COMPUTED == [("a", 0), ("b", 0), ("other a", 0), ("other b", 0),
                        ("a", 1), ("b", 1), ("a", 2), ("b", 2), ("other a", 1), ("other b", 1), ("other a", 2),
                        ("other b", 2)]


def test_a_fill_can_take_only_the_cells_of_given_configuration_values(monkeypatch, tmp_path):
    """``--where kind=b``: the cells a claim needs (chapter 2's l2 regions) without the rest of their grid."""
    from explainopt.experiments import ResultStore

    _chapter(monkeypatch, ResultStore(tmp_path))
    book.fill("99", n_jobs=1, where={"kind": "b"})
    assert COMPUTED == [("b", 0), ("other b", 0), ("b", 1), ("b", 2), ("other b", 1), ("other b", 2)]
    rows = book.chapter_plan("99", "paper", where={"kind": "a"})
    assert [len(r["todo"]) for r in rows] == [3, 3]
    assert "(cells where kind=a)" in book.plan_text("99", rows, where={"kind": "a"}).splitlines()[0]
    assert book._key_value("rho=0.05") == ("rho", 0.05) and book._key_value("norm=l2") == ("norm", "l2")
    with pytest.raises(SystemExit, match="KEY=VALUE"):
        book._key_value("l2")


def _stored_with_times(store, func, cells: dict) -> None:
    """Store the cells {(kind, index): seconds}, their provenance giving those wall times."""
    for (kind, index), seconds in cells.items():
        config = {"kind": kind, "index": index}
        cell = book.experiments.compute_cell(func, config)
        cell["provenance"]["wall_time_s"] = seconds
        store.put(func, config, cell)


def test_the_cost_filter_takes_only_cells_known_to_be_short(monkeypatch, tmp_path):
    from explainopt.experiments import ResultStore

    store = ResultStore(tmp_path)
    _stored_with_times(store, _replicate, {("a", 0): 10.0, ("a", 1): 30.0, ("b", 0): 900.0})
    _chapter(monkeypatch, store)
    grid = _Chapter.grids({})["first"]
    own, borrowed = book.cost_estimates(grid, store)
    assert own == [20.0] * 3 + [900.0] * 3 and borrowed == [None] * 6  # the median of its configuration
    plan = book.grid_plan("first", grid, store, max_cell_s=60)
    assert [grid.configs[i] for i in plan["todo"]] == [{"kind": "a", "index": 2}]
    assert (plan["too_long"], plan["unknown_left"], plan["hours"]) == (2, 0, pytest.approx(20 / 3600))
    second = book.grid_plan("second", _Chapter.grids({})["second"], store, max_cell_s=60)
    assert (second["todo"], second["unknown_left"]) == ([], 6)  # no stored cell: cost unknown, left out
    book.fill("99", n_jobs=1, max_cell_s=60)
    assert COMPUTED == [("a", 2)]
    book.fill("99", n_jobs=1, only=["first"])  # without the filter: the long ones too
    assert COMPUTED == [("a", 2), ("b", 1), ("b", 2)]


def _sized(model: str, norm: str, rho: float, index: int) -> dict:
    return {"model": model}


def test_a_configuration_never_computed_borrows_its_cost_from_the_most_similar_ones_for_the_plan_only(tmp_path):
    """Chapter 2's l2 forests had no stored cell, and the plan counted them at the grid's median (a second):
    the cost now comes from the cells that share the longest leading part of ``cost_by``."""
    from explainopt.experiments import ResultStore, compute_cell

    store = ResultStore(tmp_path)
    for (model, norm, rho), seconds in {("RF", "linf", 0.01): 100.0, ("RF", "linf", 0.05): 300.0,
                                        ("RF", "l2", 0.01): 1000.0, ("LR", "linf", 0.01): 1.0}.items():
        config = dict(model=model, norm=norm, rho=rho, index=0)
        cell = compute_cell(_sized, config)
        cell["provenance"]["wall_time_s"] = seconds
        store.put(_sized, config, cell)
    wanted = [("RF", "l2", 0.05), ("RF", "linf", 0.01), ("LR", "l2", 0.05), ("NN", "linf", 0.01)]
    grid = book.Grid(_sized, [dict(model=m, norm=n, rho=r, index=1) for m, n, r in wanted],
                     cost_by=("model", "norm", "rho"))
    own, borrowed = book.cost_estimates(grid, store)
    assert own == [None, 100.0, None, None]
    assert borrowed == [1000.0, None, 1.0, None]  # RF l2 at the other radius; LR at the other norm; NN: none
    assert book.cost_estimates(book.Grid(_sized, grid.configs), store)[1] == [None] * 4  # no cost_by: no guess
    plan = book.grid_plan("g", grid, store)
    assert (plan["borrowed"], plan["unknown"]) == (2, 1)
    assert plan["hours"] == pytest.approx((1000 + 100 + 1 + 100) / 3600)  # the unknown one at the median own
    filtered = book.grid_plan("g", grid, store, max_cell_s=10_000)
    assert [grid.configs[i]["model"] for i in filtered["todo"]] == ["RF"] and filtered["unknown_left"] == 3
    line = book.plan_text("99", [{**plan, "claims": []}]).splitlines()[1]
    assert line.endswith("2 of them estimated from similar configurations, 1 of them at the grid's median")


def test_the_plan_names_the_cells_their_core_hours_and_the_claims_they_decide(monkeypatch, tmp_path):
    from explainopt.experiments import ResultStore

    store = ResultStore(tmp_path)
    _stored_with_times(store, _replicate, {("a", 0): 360.0, ("b", 0): 3600.0})
    _chapter(monkeypatch, store)
    text = book.plan_text("99", book.chapter_plan("99", "paper"))
    lines = text.splitlines()
    assert lines[1] == "  first: 4 to compute (0 a configuration's first) of 6 (2 stored), about 2.20 core-hours"
    assert lines[2] == "      decides: claim A"
    assert lines[3].startswith("  second: 6 to compute (2 a configuration's first) of 6 (0 stored), about unknown")
    assert lines[4:6] == ["      decides: claim B", "      decides: claim C"]
    assert lines[-1] == "  in all: 10 cells, about unknown core-hours"
    filtered = book.plan_text("99", book.chapter_plan("99", "paper", max_cell_s=600), max_cell_s=600).splitlines()
    assert filtered[1].endswith("about 0.20 core-hours; left out: 2 over 600 s")
    assert "left out: 6 of unknown cost" in filtered[3] and filtered[-1] == "  in all: 2 cells, about 0.20 core-hours"
    assert COMPUTED == []  # planning computes nothing
    with pytest.raises(ValueError, match="no grid"):
        book.chapter_plan("99", "paper", only=["third"])


def test_a_run_on_a_cluster_keeps_as_many_cells_in_flight_as_it_has_worker_threads(monkeypatch):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster:
        assert book.cells_in_flight(-1, cluster.scheduler_address) == 4
    monkeypatch.setattr(book, "scheduler_slots", lambda address: 48)
    assert book.cells_in_flight(-1, "tcp://host:8786") == 48
    assert book.cells_in_flight(-1, None) == -1 and book.cells_in_flight(7, "tcp://host:8786") == 7
    with pytest.warns(UserWarning, match="at most 2 cells in flight"):
        book.cells_in_flight(2, "tcp://host:8786")


def test_the_book_scale_renders_from_its_committed_store_and_computes_only_what_it_lacks(monkeypatch, tmp_path):
    from explainopt import experiments

    monkeypatch.setattr(book, "RESULTS", tmp_path)
    monkeypatch.setattr(experiments, "RESULTS", tmp_path)
    monkeypatch.delenv(book.RECOMPUTE, raising=False)
    grid = _replicates(_replicate, "ab", n=2)
    COMPUTED.clear()
    assert book.ChapterRun("99", {"scale": "book"}).grid(grid) == [_replicate(**c) for c in grid.configs]
    store = book.chapter_cache("99", "book")
    assert isinstance(store, experiments.ResultStore) and store.folder == tmp_path / "book" / "99"
    assert len(store.cells(_replicate)) == 4
    COMPUTED.clear()
    book.ChapterRun("99", {"scale": "book"}).grid(grid)
    assert COMPUTED == []  # every cell served by the store
    kept = [c for c in store.all_cells(_replicate) if c["provenance"]["config"] != grid.configs[3]]
    kept[0]["provenance"]["code"] = "older code"  # stale: computed by other code
    store.path(_replicate).write_bytes(gzip.compress("".join(json.dumps(c) + "\n" for c in kept).encode()))
    book.ChapterRun("99", {"scale": "book"}).grid(grid)
    assert COMPUTED == [("a", 0), ("b", 1)]  # the stale cell and the missing one, nothing else
    COMPUTED.clear()
    monkeypatch.setenv(book.RECOMPUTE, "2999-01-01T00:00:00+00:00")  # run --recompute: nothing stored counts
    book.ChapterRun("99", {"scale": "book"}).grid(grid)
    assert sorted(COMPUTED) == [("a", 0), ("a", 1), ("b", 0), ("b", 1)]
    assert isinstance(book.chapter_cache("99", "smoke"), experiments.PickleCache)
    with pytest.raises(ValueError, match="recompute"):
        book.run("paper", ["01"], tmp_path / "out", recompute=True)


def test_merge_adds_the_other_stores_cells_that_this_one_lacks_with_their_provenance(tmp_path):
    from explainopt.experiments import ResultStore

    mine, theirs = tmp_path / "mine", tmp_path / "theirs"
    book.run_grid(_stored, [{"x": x} for x in (1, 2)], cache=ResultStore(mine / "99"), progress=False)
    book.run_grid(_stored, [{"x": x} for x in (2, 3, 4)], cache=ResultStore(theirs / "99"), progress=False)
    assert book.merge(theirs, into=mine) == {"99": {"added": 2, "retimed": 0, "not_taken": {}, "problems": []}}
    merged = {c["provenance"]["config"]["x"]: c for c in ResultStore(mine / "99").current()}
    assert sorted(merged) == [1, 2, 3, 4]
    stored = {c["provenance"]["config"]["x"]: c for c in ResultStore(theirs / "99").current()}
    assert merged[3]["provenance"] == stored[3]["provenance"] and merged[3]["result"] == stored[3]["result"]
    assert book.merge(theirs, into=mine)["99"]["added"] == 0  # nothing twice
    assert book.merge(theirs / "99", into=mine)["99"]["added"] == 0  # a chapter's folder is one chapter


def _limited(x: int) -> dict:
    return {"x": x, "status": "time_limit" if x == 3 else "optimal"}


def test_retime_computes_other_machines_cells_again_here_and_keeps_what_does_not_reproduce(tmp_path, monkeypatch):
    """Chapter 5 pairs a factual's naive and benchmark solve times only on one machine; cells stored by another
    machine are computed again here, keeping their result and naming the provenance they replace."""
    from types import SimpleNamespace

    from explainopt import chapters
    from explainopt.experiments import ResultStore

    store = ResultStore(tmp_path / "paper" / "99")
    book.run_grid(_limited, [{"x": x} for x in range(5)], cache=store, progress=False)
    cells = {c["provenance"]["config"]["x"]: c for c in store.current()}
    for x, cell in cells.items():  # computed elsewhere, but x = 4 here; x = 2's result does not reproduce
        mark = {"machine": "Linux x86_64, 2 cores", "wall_time_s": 9.0} if x != 4 else {}
        store.put(_limited, {"x": x}, {"result": {**cell["result"], **({"x": 7} if x == 2 else {})},
                                       "provenance": {**cell["provenance"], **mark}})
    grid = {"cells": book.Grid(_limited, [{"x": x} for x in range(5)])}
    monkeypatch.setattr(book, "RESULTS", tmp_path)
    monkeypatch.setattr(chapters, "module", lambda name: SimpleNamespace(SCALES={}, grids=lambda settings: grid))
    monkeypatch.setattr(chapters, "settings", lambda scales, scale: {})
    assert book.retime("99", where={"x": 0})["retimed"] == 1
    report = book.retime("99")
    assert report["cells"] == 3 and report["retimed"] == 1 and report["limited"] == [cells[3]["key"]]
    assert list(report["differs"].values()) == [["result.x: largest difference 5"]]
    after = {c["provenance"]["config"]["x"]: c for c in ResultStore(tmp_path / "paper" / "99").current()}
    assert after[1]["provenance"]["machine"] == book.machine() and after[1]["result"] == cells[1]["result"]
    assert after[1]["provenance"]["retimed"] == {"machine": "Linux x86_64, 2 cores", "wall_time_s": 9.0,
                                                 "date": cells[1]["provenance"]["date"]}
    assert after[2]["result"]["x"] == 7 and after[3]["provenance"]["wall_time_s"] == 9.0  # both kept as they were
    assert "retimed" not in after[4]["provenance"] and book.retime("99")["retimed"] == 0
    assert book.main(["retime", "99", "--where", "x=2"]) == 1  # what does not reproduce fails the command


def test_merge_takes_the_other_stores_retimed_cells_in_place_of_those_they_were_computed_again_from(tmp_path,
                                                                                                   monkeypatch):
    """A machine that retimes cells in its own copy (chapter 5 pairs solve times only on one machine) hands
    them over with `merge`. A retimed cell of some other stored cell (audit 42 L10: or of one whose times were
    never recorded), or whose result differs from the stored one (L9), replaces nothing; merge only appends
    (L8: a rewrite would drop what a fill appends meanwhile)."""
    from explainopt.experiments import ResultStore, read_store_file

    mine, theirs = ResultStore(tmp_path / "mine" / "99"), ResultStore(tmp_path / "theirs" / "99")
    book.run_grid(_stored, [{"x": x} for x in (1, 2, 3, 5, 6)], cache=mine, progress=False)
    for x, cell in {c["provenance"]["config"]["x"]: c for c in mine.current()}.items():
        old = {k: cell["provenance"][k] for k in ("machine", "wall_time_s", "date")}
        old = {**old, "date": "1999-01-01"} if x == 3 else dict.fromkeys(old) if x == 6 else old
        result = {**cell["result"], "x": 1000} if x == 5 else cell["result"]     # does not reproduce
        retimed = {**cell["provenance"], "machine": "elsewhere", "wall_time_s": 1.0, "retimed": old}
        theirs.put(_stored, {"x": x}, {"result": result, "provenance": retimed})
    theirs.put(_stored, {"x": 4}, {"result": {"x": 4}, "provenance": {**retimed, "config": {"x": 4}}})
    report = book.merge(tmp_path / "theirs", into=tmp_path / "mine")["99"]
    assert (report["added"], report["retimed"], report["problems"]) == (1, 2, [])
    keys = {c["provenance"]["config"]["x"]: c["key"] for c in mine.current()}
    assert report["not_taken"] == {keys[3]: "it names another stored cell (machine, wall time, date) than this store's",
                                   keys[5]: f"{book.RESULT_DIFFERS}: result.x: largest difference 995",
                                   keys[6]: "it names another stored cell (machine, wall time, date) than this store's"}
    merged = {c["provenance"]["config"]["x"]: c for c in ResultStore(tmp_path / "mine" / "99").current()}
    assert {x: c["provenance"]["machine"] for x, c in merged.items()} == {
        1: "elsewhere", 2: "elsewhere", 3: book.machine(), 4: "elsewhere", 5: book.machine(), 6: book.machine()}
    assert merged[5]["result"]["x"] == 5
    assert len(read_store_file(mine.path(_stored))) == 5 + 3  # appended: the superseded lines stay, the last counts
    again = book.merge(tmp_path / "theirs", into=tmp_path / "mine")["99"]
    assert (again["added"], again["retimed"], len(again["not_taken"])) == (0, 0, 3)
    shutil.copytree(tmp_path / "mine", tmp_path / "results" / "paper")
    monkeypatch.setattr(book, "RESULTS", tmp_path / "results")
    assert book.main(["merge", str(tmp_path / "theirs"), "--scale", "paper"]) == 1  # a result that differs fails it


def test_retimed_cells_reach_another_copy_whose_results_they_reproduce(tmp_path, monkeypatch):
    """`retime` in one copy, `merge` into another: the copy takes the retimed cells (its own are the cells they
    were computed again from) and reads no superseded line as a cell of other code."""
    from types import SimpleNamespace

    from explainopt import chapters
    from explainopt.experiments import ResultStore

    store = ResultStore(tmp_path / "paper" / "99")
    book.run_grid(_limited, [{"x": x} for x in (0, 1)], cache=store, progress=False)
    for cell in store.current():
        store.put(_limited, cell["provenance"]["config"],
                  {"result": cell["result"], "provenance": {**cell["provenance"], "machine": "Linux x86_64, 2 cores"}})
    shutil.copytree(tmp_path / "paper", tmp_path / "copy")
    grid = {"cells": book.Grid(_limited, [{"x": x} for x in (0, 1)])}
    monkeypatch.setattr(book, "RESULTS", tmp_path)
    monkeypatch.setattr(chapters, "module", lambda name: SimpleNamespace(SCALES={}, grids=lambda settings: grid))
    monkeypatch.setattr(chapters, "settings", lambda scales, scale: {})
    assert book.retime("99")["retimed"] == 2
    assert book.merge(tmp_path / "paper", into=tmp_path / "copy") == {"99": {"added": 0, "retimed": 2, "not_taken": {},
                                                                            "problems": []}}
    assert {c["provenance"]["machine"] for c in ResultStore(tmp_path / "copy" / "99").current()} == {book.machine()}


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


def test_the_status_page_has_a_table_per_scale(monkeypatch, tmp_path):
    from explainopt import reporting

    monkeypatch.setattr(book, "RESULTS", tmp_path / "results")
    for scale, holds in (("book", False), ("paper", True)):
        reporting.save_chapter_results("05", [reporting.claim("a", paper=1, ours=1, holds=holds)], {"scale": scale},
                                       folder=tmp_path / "results" / scale)
    built = tmp_path / "out"
    reporting.save_chapter_results("05", [reporting.claim("a", paper=1, ours=1, holds=True)], {"scale": "smoke"},
                                   folder=built / "results")
    page = book.write_status_page(built).read_text()
    assert [h for h in page.splitlines() if h.startswith("## ")] == [
        "## This build (smoke scale)", "## Book scale", "## Paper scale", "## Every claim, by scale"]
    assert "| 05 | 0 of 1 decided reproduced, 0 partly, 1 differs; all 1 run |" in page
    reporting.save_chapter_results("05", [reporting.claim("a", paper=1, ours=1, holds=False)], {"scale": "book"},
                                   folder=built / "results")
    assert "This build" not in book.write_status_page(built).read_text()  # a book build is the committed book table


def _table_rows(markdown: str) -> list[list[str]]:
    """The body rows of every table in `markdown` as a Markdown reader (markdown-it, as MyST) parses them."""
    from markdown_it import MarkdownIt

    rows, row, body = [], None, False
    for token in MarkdownIt("commonmark").enable("table").parse(markdown):
        body = {"tbody_open": True, "tbody_close": False}.get(token.type, body)
        if token.type == "tr_open" and body:
            row = []
        elif token.type == "inline" and row is not None:
            row.append(token.content)
        elif token.type == "tr_close" and row is not None:
            rows.append(row)
            row = None
    return rows


def test_a_claim_with_a_pipe_is_one_row_of_the_status_page(monkeypatch, tmp_path):
    from explainopt import reporting, verdicts

    monkeypatch.setattr(book, "RESULTS", tmp_path / "results")
    text = "Every optimized explanation has L_faithful ≈ η (|ratio − 1| ≤ 1e-4)"
    for scale in book.COMMITTED:
        made = verdicts.declared(reporting.claim(text, paper="|θ| < 1", ours=1, holds=True), id="01-on-constraint",
                                 rule="", evidence=None, minimum=1)
        reporting.save_chapter_results("01", [made],
                                       {"scale": scale}, folder=tmp_path / "results" / scale)
    page = book.write_status_page(tmp_path).read_text(encoding="utf-8")
    rows = [r for r in _table_rows(page) if r[0] == "01" and r[1].replace("\\", "") == "01-on-constraint"]
    assert rows and all(len(r) == 5 for r in rows)  # the claim's id leads to its row and code, in five cells
    assert rows[0][2].replace("\\", "") == text and rows[0][3:] == ["reproduced", "reproduced"]


def test_the_landing_page_includes_the_totals_computed_from_the_committed_results(monkeypatch, tmp_path):
    from explainopt import reporting

    monkeypatch.setattr(book, "RESULTS", tmp_path / "results")
    for chapter, cells in (("01", {"computed": 4, "total": 4}), ("06", {"computed": 10, "total": 240})):
        claims = [reporting.claim("a", paper=1, ours=1, holds=True), reporting.claim("b", paper=1, ours=1, holds=False)]
        reporting.save_chapter_results(chapter, claims, {"scale": "book"}, folder=tmp_path / "results" / "book")
        claims[1] = reporting.claim("b", paper=1, ours="", holds=None)
        reporting.save_chapter_results(chapter, claims, {"scale": "paper", "cells": cells},
                                       folder=tmp_path / "results" / "paper")
    book.write_pages(tmp_path)
    rows = _table_rows((tmp_path / "verdict_totals.md").read_text(encoding="utf-8"))
    assert rows[0] == ["**every chapter**", "2 of 4 decided reproduced, 0 partly, 2 differ; all 4 run",
                       "2 of 2 decided reproduced, 0 partly, 0 differ; 2 of 4 not run; on a partial grid: chapters 06"]
    assert rows[1][0] == "{doc}`/book/chapters/01_optimizing_explanations`" and "on 4 of 4 cells" in rows[1][2]
    assert rows[2][2].endswith("on 10 of 240 cells (partial grid)") and len(rows) == 3
    for chapter, to_compute, borrowed in (("06", 7200.0, 0.0), ("02", 1800.0, 900.0)):  # once each grid has one
        reporting.save_chapter_results(chapter, claims, {"scale": "paper", "cells": {"computed": 1, "total": 2},
                                                         "to_compute_s": to_compute, "to_compute_borrowed_s": borrowed},
                                       folder=tmp_path / "results" / "paper")
    book.write_pages(tmp_path)
    rows = _table_rows((tmp_path / "verdict_totals.md").read_text(encoding="utf-8"))
    assert rows[0][2].endswith("on a partial grid: chapters 02, 06 (still to compute: about 2.5 h, 15 min of it borrowed)")
    assert "{include} chapters/verdict_totals.md" in (ROOT / "book" / "intro.md").read_text()


def test_the_status_page_is_in_the_main_navigation():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    caption = next(part["caption"] for part in toc["parts"]
                   if {"file": "book/chapters/status"} in part["chapters"])
    assert caption != "Appendix"


@pytest.mark.parametrize("notebook", [nb for nb in NOTEBOOKS if nb.stem[0].isdigit()], ids=lambda p: p.stem)
def test_a_chapter_opens_with_its_verdicts_and_shows_them_in_full(notebook):
    cells = nbformat.read(notebook, as_version=4).cells
    setup = next(i for i, c in enumerate(cells) if "start_chapter(" in c.source)
    summary = next(i for i, c in enumerate(cells) if "verdict_summary(" in c.source)
    assert summary <= setup + 2 and f'verdict_summary("{notebook.stem[:2]}")' in cells[summary].source
    assert "remove-input" in cells[summary].metadata.get("tags", [])
    shown = [c.source.splitlines()[-1] for c in cells if c.cell_type == "code" and "claims = " in c.source
             and "verdict_table(" in c.source]
    assert shown and "verdict_table(claims)" in shown[0]


def test_the_run_records_the_grid_cells_compute_time_from_their_provenance(monkeypatch, tmp_path):
    from explainopt.experiments import ResultStore

    store = ResultStore(tmp_path / "99")
    monkeypatch.setattr(book, "chapter_cache", lambda chapter, scale: store)
    run = book.ChapterRun("99", {"scale": "smoke"})
    run.grid(book.Grid(_stored, [{"x": 1}, {"x": 2}]))
    stored = sum(c["provenance"]["wall_time_s"] for c in store.cells(_stored))
    assert run.provenance()["compute_time_s"] == pytest.approx(stored) and stored > 0
    assert book.ChapterRun("99", {"scale": "smoke"}).provenance()["compute_time_s"] is None  # no grid: not known


def test_a_paper_run_estimates_the_compute_time_of_the_cells_it_misses(monkeypatch, tmp_path):
    """The status page's *still to compute*: each missing cell at its configuration's median stored time."""
    from explainopt.experiments import ResultStore

    store = ResultStore(tmp_path / "99")
    _stored_with_times(store, _replicate, {("a", 0): 10.0, ("a", 1): 30.0, ("b", 0): 900.0})
    monkeypatch.setattr(book, "chapter_cache", lambda chapter, scale: store)
    COMPUTED.clear()
    run = book.ChapterRun("99", {"scale": "paper"})
    run.grid(_replicates(_replicate, "ab"))  # a2 missing at 20 s, b1 and b2 at 900 s each
    assert run.provenance()["cells"] == {"total": 6, "computed": 3}
    assert run.provenance()["to_compute_s"] == pytest.approx(20 + 2 * 900)
    assert run.provenance()["to_compute_borrowed_s"] == 0  # every missing cell priced by its own configuration
    rf = dict(model="RF", norm="linf", rho=0.05, index=1)
    cell = book.experiments.compute_cell(_sized, rf)
    cell["provenance"]["wall_time_s"] = 5.0
    store.put(_sized, rf, cell)
    run.grid(book.Grid(_sized, [dict(rf, model=m, index=0) for m in ("RF", "LR")], cost_by=("model",)))
    # RF at its own configuration's 5 s; LR, of which nothing is stored, at the grid's median (5 s): borrowed
    assert run.provenance()["to_compute_s"] == pytest.approx(20 + 2 * 900 + 5 + 5)
    assert run.provenance()["to_compute_borrowed_s"] == pytest.approx(5)
    run.grid(_replicates(_other, "a"))  # a grid with no stored cell: its cost is unknown
    assert run.provenance()["to_compute_s"] is None and run.provenance()["to_compute_borrowed_s"] is None
    assert COMPUTED == []  # the paper scale renders from the store, computing nothing


def test_the_summary_box_reads_the_committed_results(monkeypatch, tmp_path):
    from explainopt import reporting

    monkeypatch.setattr(book, "RESULTS", tmp_path / "results")
    reporting.save_chapter_results("04", [reporting.claim("a", paper=1, ours=1, holds=True)],
                                   {"scale": "paper", "cells": {"computed": 1, "total": 2}},
                                   folder=tmp_path / "results" / "paper")
    page = book.verdict_summary("04")._repr_html_()
    assert "1 of 2 cells (partial grid)" in page and "book/04.json is missing" in page


def test_the_summary_box_shows_the_verdicts_its_own_run_committed(monkeypatch, tmp_path):
    from explainopt import reporting

    monkeypatch.setattr(book, "RESULTS", tmp_path / "results")
    save = lambda ours: reporting.save_chapter_results(  # noqa: E731
        "03", [reporting.claim("a", paper=1, ours=ours, holds=True)], {"scale": "paper"},
        folder=tmp_path / "results" / "paper")
    save("before the run")
    cell = nbformat.v4.new_code_cell('from explainopt.book import verdict_summary\n\nverdict_summary("03")')
    box = book.verdict_summary("03")
    cell.outputs = [nbformat.v4.new_output("execute_result", {"text/html": box.html, "text/markdown": box.markdown},
                                           execution_count=1)]
    other = nbformat.v4.new_code_cell("1 + 1")
    other.outputs = [nbformat.v4.new_output("execute_result", {"text/plain": "2"}, execution_count=2)]
    path = tmp_path / "03_x.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[cell, other]), path)
    save("committed at the run's end")  # the chapter's last cell commits after its box was shown
    book.tidy_executed(path)
    cells = nbformat.read(path, as_version=4).cells
    shown = cells[0].outputs[0].data
    assert "at the run" in shown["text/html"] and "before the run" not in shown["text/html"]
    assert "committed at the run's end" in shown["text/markdown"]
    assert cells[1].outputs[0].data == {"text/plain": "2"}


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


def test_the_run_box_warns_when_numpy_runs_unpinned_blas_kernels(monkeypatch):
    monkeypatch.setattr(book, "code_paths", lambda: {"pinned": True, "blas": ["openblas Haswell", "openblas Prescott"]})
    assert "openblas Haswell kernels, not the pinned ones" in book.unpinned_warning()
    monkeypatch.setattr(book, "code_paths", lambda: {"pinned": True, "blas": ["openblas Katmai", "openblas Prescott"]})
    assert book.unpinned_warning() == ""
    from explainopt.numerics import code_paths  # this test process: conftest imported explainopt first

    assert not [b for b in code_paths()["blas"] if b.startswith("openblas") and b not in book.PINNED_BLAS]


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"), reason="NumPy's x86-64 loops only")
def test_numpy_runs_its_baseline_loops_on_every_x86_cpu():
    """NumPy's AVX2 and AVX-512 loops (SVML's exp/log on AVX-512) round otherwise than its baseline ones."""
    from explainopt.numerics import code_paths  # this test process: conftest imported explainopt first

    assert code_paths()["numpy_simd"] == "X86_V2"


def test_a_cells_printed_text_split_across_messages_is_one_output():
    """A print whose final newline arrived apart showed as an empty code box on chapter 3's page."""
    stream = lambda name, text: nbformat.v4.new_output("stream", name=name, text=text)
    outputs = [stream("stdout", "LR with fixed values: 0.347"), stream("stdout", "\n"), stream("stderr", "warn\n"),
               nbformat.v4.new_output("execute_result", data={"text/plain": "1"}), stream("stdout", "after\n")]
    joined = book.joined_streams(outputs)
    assert [(o["output_type"], o.get("name"), o.get("text")) for o in joined] == [
        ("stream", "stdout", "LR with fixed values: 0.347\n"), ("stream", "stderr", "warn\n"),
        ("execute_result", None, None), ("stream", "stdout", "after\n")]
