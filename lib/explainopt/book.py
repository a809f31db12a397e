"""Execute the chapter notebooks with papermill and build the Jupyter Book.

Command line::

    python -m explainopt.book run --scale smoke|book|paper [--only 01 03] [-p name value ...]
    python -m explainopt.book build [--warnings-as-errors]

``run`` executes ``notebooks/NN_*.ipynb`` into ``book/chapters/`` (a failing cell fails the command,
naming the notebook and the cell), hides the papermill-injected parameters cell in the rendered book,
and regenerates the reproduction-status page from the chapters' saved results. ``build`` runs
``jupyter-book build`` with execution off (papermill has already run the chapters).

Inside a notebook, :func:`start_chapter` shows the "this run" box and :meth:`ChapterRun.finish`
saves the claims table and shows the provenance footer.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

import nbformat

from . import reporting

ROOT = Path(__file__).resolve().parents[2]
SCALES = ("smoke", "book", "paper")
VERSIONED = ("explainopt", "numpy", "scikit-learn", "cvxpy", "highspy", "clarabel", "pyscipopt", "torch",
             "ortools", "gurobipy", "mosek")


class ChapterFailed(RuntimeError):
    """A chapter notebook raised in one of its cells."""


# --------------------------------------------------------------------------- inside a chapter

def versions() -> dict[str, str]:
    """Versions of Python and of the packages that shape the results."""
    out = {"python": platform.python_version()}
    for name in VERSIONED:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


@dataclass
class ChapterRun:
    """Provenance of one chapter execution: parameters, start time, solvers used."""

    chapter: str
    parameters: dict
    started: float = field(default_factory=time.perf_counter)
    solvers: set = field(default_factory=set)

    def used(self, *solver_names: str) -> None:
        """Record solver names that produced results in this run."""
        self.solvers.update(s for s in solver_names if s)

    def provenance(self) -> dict:
        return {
            "scale": self.parameters.get("scale"),
            "parameters": self.parameters,
            "solvers": ", ".join(sorted(self.solvers)) or "none",
            "wall_time_s": time.perf_counter() - self.started,
            "versions": versions(),
            "platform": f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores",
        }

    def finish(self, claims: list, tables: dict | None = None):
        """Save the claims (for the status page) and display the provenance footer."""
        from IPython.display import Markdown, display

        prov = self.provenance()
        reporting.save_chapter_results(self.chapter, claims, prov, tables)
        pkgs = ", ".join(f"{k} {v}" for k, v in prov["versions"].items())
        display(Markdown(
            f"*Provenance: scale `{prov['scale']}`, solvers {prov['solvers']}, wall time "
            f"{prov['wall_time_s']:.0f} s on {prov['platform']}; {pkgs}.*"
        ))
        return prov


def as_list(value, *, name: str = "parameter") -> list:
    """A list parameter as given by papermill: a list/tuple, or a string (``-p dimensions "[2, 3]"``).

    Strings are read as JSON, else as comma-separated items (``"x^3, sin x"``).
    """
    if isinstance(value, (list, tuple)):
        return list(value)
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            parsed = [item.strip() for item in value.split(",") if item.strip()]
        return parsed if isinstance(parsed, list) else [parsed]
    if isinstance(value, (int, float)) or hasattr(value, "dtype"):
        return [value]
    raise TypeError(f"{name} must be a list or a string such as '[2, 3]'; got {type(value).__name__}")


def start_chapter(chapter: str, **parameters) -> ChapterRun:
    """Validate the common parameters, show the "this run" box and start the clock."""
    from IPython.display import Markdown, display

    scale = parameters.get("scale")
    if scale not in SCALES:
        raise ValueError(f"scale={scale!r}: expected one of {SCALES}")
    rows = "\n".join(f"| `{k}` | `{v!r}` |" for k, v in parameters.items())
    display(Markdown(f"**This run.** Parameters (change them with papermill `-p`):\n\n| parameter | value |\n|---|---|\n{rows}\n"))
    return ChapterRun(chapter, dict(parameters))


# --------------------------------------------------------------------------- running notebooks

def chapter_notebooks(only: list[str] | None = None, folder: Path | None = None) -> list[Path]:
    """Chapter notebooks in order, optionally only those whose name starts with one of `only`."""
    notebooks = sorted((folder or ROOT / "notebooks").glob("[0-9A-Z][0-9]_*.ipynb"))
    if only:
        notebooks = [nb for nb in notebooks if any(nb.name.startswith(o) for o in only)]
        if not notebooks:
            raise ValueError(f"no notebook matches {only}; notebooks start with 01, 02, ...")
    return notebooks


def hide_injected_parameters(path: Path) -> None:
    """Tag papermill's injected-parameters cell (and the defaults cell) so the book does not show them."""
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        tags = cell.metadata.setdefault("tags", [])
        if "injected-parameters" in tags or "parameters" in tags:
            if "remove-cell" not in tags:
                tags.append("remove-cell")
    nbformat.write(nb, path)


def execute_chapter(notebook: Path, output_dir: Path, parameters: dict, *, progress: bool = True) -> Path:
    """Execute one notebook with papermill; raise :class:`ChapterFailed` naming the failing cell."""
    import papermill

    output_dir.mkdir(parents=True, exist_ok=True)
    output = output_dir / notebook.name
    os.environ.setdefault("EXPLAINOPT_RESULTS", str((output_dir / "results").resolve()))
    try:
        papermill.execute_notebook(str(notebook), str(output), parameters=parameters, cwd=str(ROOT),
                                   progress_bar=progress, kernel_name="python3")
    except papermill.PapermillExecutionError as exc:
        raise ChapterFailed(
            f"{notebook.name}: cell {exc.exec_count} raised {exc.ename}: {exc.evalue} "
            f"(executed copy with the traceback: {output})"
        ) from None
    hide_injected_parameters(output)
    return output


def write_status_page(output_dir: Path) -> Path:
    """The reproduction-status page, generated from the chapters' results files."""
    table = reporting.status_table(output_dir / "results")
    body = table.to_markdown(index=False) if len(table) else "_No chapter has been executed yet._"
    page = output_dir / "status.md"
    page.write_text(
        "# Reproduction status\n\n"
        "Generated by `python -m explainopt.book run` from the claims tables that the executed chapters "
        "saved; nothing on this page is written by hand. A claim is *reproduced* when our number supports "
        "the paper's statement, *partly* when it does in part, *differs* when it does not (the chapter "
        "explains why), and *not run* when the scale that ran is too small to check it.\n\n" + body + "\n"
    )
    return page


def run(scale: str, only: list[str] | None = None, output_dir: Path | None = None,
        parameters: dict | None = None) -> list[Path]:
    """Execute the chapters at `scale` into `output_dir` (default ``book/chapters``)."""
    if scale not in SCALES:
        raise ValueError(f"scale={scale!r}: expected one of {SCALES}")
    output_dir = Path(output_dir or ROOT / "book" / "chapters")
    os.environ["EXPLAINOPT_RESULTS"] = str((output_dir / "results").resolve())
    done = []
    for notebook in chapter_notebooks(only):
        start = time.perf_counter()
        print(f"[explainopt] {notebook.name} at scale {scale} ...", flush=True)
        done.append(execute_chapter(notebook, output_dir, {"scale": scale, **(parameters or {})}))
        print(f"[explainopt] {notebook.name} done in {time.perf_counter() - start:.0f} s", flush=True)
    write_status_page(output_dir)
    return done


def build(root: Path | None = None, *, warnings_as_errors: bool = False) -> None:
    """``jupyter-book build`` with execution off; raises CalledProcessError on failure."""
    script = Path(sys.executable).with_name("jupyter-book")  # the CLI installed beside this Python
    cmd = [str(script) if script.exists() else "jupyter-book", "build", str(root or ROOT)]
    if warnings_as_errors:
        cmd += ["-W", "-n", "--keep-going"]
    subprocess.run(cmd, check=True)


def _parse_value(text: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m explainopt.book", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p_run = sub.add_parser("run", help="execute chapter notebooks with papermill")
    p_run.add_argument("--scale", default="book", choices=SCALES)
    p_run.add_argument("--only", nargs="+", help="chapter prefixes, e.g. 01 03")
    p_run.add_argument("--output", type=Path, help="output folder (default book/chapters)")
    p_run.add_argument("-p", nargs=2, action="append", metavar=("NAME", "VALUE"), default=[],
                       help="extra notebook parameter (value parsed as JSON when possible)")
    p_build = sub.add_parser("build", help="build the HTML book with jupyter-book (execution off)")
    p_build.add_argument("--warnings-as-errors", action="store_true")
    args = parser.parse_args(argv)
    if args.command == "run":
        try:
            run(args.scale, args.only, args.output, {k: _parse_value(v) for k, v in args.p})
        except ChapterFailed as exc:
            print(f"[explainopt] FAILED: {exc}", file=sys.stderr)
            return 1
    else:
        build(warnings_as_errors=args.warnings_as_errors)
    return 0


if __name__ == "__main__":
    sys.exit(main())
