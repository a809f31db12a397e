# Thin wrappers around the library's runner; every target sets up its own environment first.
#   make book                     execute every chapter at SCALE (default book) and build the HTML book
#   make test                     unit tests, every notebook at the smoke scale, book build with -W
#   make chapter NAME=02 SCALE=paper   execute one chapter into book/chapters/
#   make benchmarks               the on-demand benchmarks (not part of the tests);
#                                 BENCH_ARGS="--quick" for a few minutes, see benchmarks/*.py --help
#   make clean                    remove the build and the executed chapters (keeps .venv and .cache)

PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
SCALE  ?= book
NAME   ?=
BENCH_ARGS ?=

# Offline machines (CI, the project's own) keep a pre-seeded data mirror beside the checkout; elsewhere
# pooch downloads each file from its original address into the user cache.
SHARED_DATA := $(abspath ../shared/data)
ifneq ($(wildcard $(SHARED_DATA)/MANIFEST.json),)
export EXPLAINOPT_DATA ?= $(SHARED_DATA)
endif

.PHONY: venv book chapter test benchmarks clean distclean

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[test]"
	touch $@

book: venv
	$(BIN)/python -m explainopt.book run --scale $(SCALE)
	$(BIN)/python -m explainopt.book build
	@echo "The book is in _build/html/index.html"

chapter: venv
	@test -n "$(NAME)" || (echo "usage: make chapter NAME=01 [SCALE=book]"; exit 2)
	$(BIN)/python -m explainopt.book run --scale $(SCALE) --only $(NAME)

test: venv
	$(BIN)/python -m pytest -n 2 -m "not slow and not book"
	$(BIN)/python -m pytest -m book

benchmarks: venv
	for script in benchmarks/*.py; do $(BIN)/python $$script $(BENCH_ARGS) || exit 1; done

clean:
	rm -rf _build book/chapters

distclean: clean
	rm -rf $(VENV) .cache
