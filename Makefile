# Thin wrappers around the library's runner; every target sets up its own environment first.
#   make book                     execute every chapter at SCALE (default book) and build the HTML book; at the
#                                 book scale from the committed store results/book/NN, computing only the cells
#                                 it lacks or holds stale; FRESH=1 computes every cell again
#   make test                     unit tests, every notebook at the smoke scale, book build with -W
#   make chapter NAME=02 SCALE=paper   execute one chapter into book/chapters/
#   make paper NAME=05 BUDGET=2h  compute missing paper-scale cells into results/paper/05, then render it;
#                                 MAX_CELL_S=300 only cells estimated to take at most 300 s; PLAN=1 print the plan only
#   make student NAME=02          a student's copy of a chapter at the smoke scale, opened in JupyterLab
#   make student-book             the book without solutions in _build/student (executes the chapters at
#                                 SCALE first if book/chapters holds none)
#   make benchmarks               the on-demand benchmarks (not part of the tests);
#                                 BENCH_ARGS="--quick" for a few minutes, see benchmarks/*.py --help
#   make clean                    remove the build and the executed chapters (keeps .venv and .cache)

PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
SCALE  ?= book
NAME   ?=
FRESH  ?=
BENCH_ARGS ?=

# Offline machines (CI, the project's own) keep a pre-seeded data mirror beside the checkout; elsewhere
# pooch downloads each file from its original address into the user cache.
SHARED_DATA := $(abspath ../shared/data)
ifneq ($(wildcard $(SHARED_DATA)/MANIFEST.json),)
export EXPLAINOPT_DATA ?= $(SHARED_DATA)
endif

.PHONY: venv book chapter paper student student-book browser test benchmarks clean distclean

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[test]"
	touch $@

book: venv
	$(BIN)/python -m explainopt.book run --scale $(SCALE) $(if $(FRESH),--recompute)
	$(BIN)/python -m explainopt.book build
	@echo "The book is in _build/html/index.html"

chapter: venv
	@test -n "$(NAME)" || (echo "usage: make chapter NAME=01 [SCALE=book]"; exit 2)
	$(BIN)/python -m explainopt.book run --scale $(SCALE) --only $(NAME)

paper: venv
	@test -n "$(NAME)" || (echo "usage: make paper NAME=05 BUDGET=2h [JOBS=-1]"; exit 2)
	$(BIN)/python -m explainopt.book run --scale paper --only $(NAME) --budget $(or $(BUDGET),1h) --jobs $(or $(JOBS),-1) \
	  $(if $(MAX_CELL_S),--max-cell-seconds $(MAX_CELL_S)) $(if $(PLAN),--plan)

student: venv
	@test -n "$(NAME)" || (echo "usage: make student NAME=02"; exit 2)
	$(BIN)/python -m pip install --quiet -e ".[student]"
	$(BIN)/python -m explainopt.book student $(NAME)

student-book: venv
	@ls book/chapters/*.ipynb >/dev/null 2>&1 || $(BIN)/python -m explainopt.book run --scale $(SCALE)
	$(BIN)/python -m explainopt.book student-book
	@echo "The student edition is in _build/student/_build/html/index.html"

# The browser test opens the built book in headless Chromium: Debian's, installed here when missing.
browser:
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || { \
	  SUDO=$$(command -v sudo >/dev/null && [ "$$(id -u)" != 0 ] && echo sudo); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium chromium-driver >/dev/null \
	  || echo "chromium could not be installed: the browser tests will be skipped"; }

test: venv browser
	$(BIN)/python -m pytest -n 2 --dist worksteal -m "not slow and not book"
	$(BIN)/python -m pytest -m book

benchmarks: venv
	for script in benchmarks/*.py; do $(BIN)/python $$script $(BENCH_ARGS) || exit 1; done

clean:
	rm -rf _build book/chapters

distclean: clean
	rm -rf $(VENV) .cache
