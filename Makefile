# Two commands do all the set-up on a fresh machine: `make lab` and `make test`.
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
WARM   := xla_explorer/codegen/__pycache__/.warm
# pytest-xdist workers: the machines here have 2 cores.
JOBS   ?= 2
# Python writes bytecode even where the shell says not to (PYTHONDONTWRITEBYTECODE): without
# it every test worker, notebook kernel and subprocess compiles the package and rewrites the
# tests' asserts from source again, a minute of the suite's CPU time. (__pycache__ is ignored.)
unexport PYTHONDONTWRITEBYTECODE

.PHONY: setup test test-fast test-deep lint lab lab-copy clean graphviz chromium fuzz screenshot extension

setup: $(STAMP) $(WARM) extension graphviz chromium

# Reinstall only when the package metadata changes; `make setup` is cheap when nothing did.
$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test,lint,docs]'
	touch $(STAMP)

# Numba compiles the package's own routines (codegen/gemm.py, gemm_threads.py, fastmath.py,
# parallel.py, linalg.py) for each element type and layout and caches them beside their source: once here,
# for every later process (a learner's first cells, each test worker), not in each
# (xla_explorer/warm.py).
$(WARM): $(STAMP) xla_explorer/warm.py $(addprefix xla_explorer/codegen/,gemm.py gemm_ir.py gemm_threads.py fastmath.py parallel.py linalg.py)
	$(PY) -m xla_explorer.warm
	mkdir -p $(dir $(WARM)) && touch $(WARM)

# The JupyterLab extension (extension/, docs/extension.md), rebuilt when its sources change:
# npm installs from the committed lock file, `npm run build` compiles the TypeScript and bundles
# it with jupyter-builder into xla_explorer/labextension, which the venv's JupyterLab loads
# through a link (a wheel ships it in share/jupyter/labextensions instead).
EXT_NAME  := xla-explorer-extension
EXT_BUILD := xla_explorer/labextension/package.json
EXT_SRC   := $(wildcard extension/src/*.ts extension/style/*) extension/package.json \
             extension/package-lock.json extension/tsconfig.json extension/webpack.config.js \
             extension/standalone/build.mjs
EXT_LINK  := $(VENV)/share/jupyter/labextensions/$(EXT_NAME)

# The explorer as one ES module (the live widget's front end, ex.save_html's script), written by
# the same `npm run build`; made again alone if only it is missing.
EXT_BUNDLE := xla_explorer/viz/bundle/explorer.js

# A link, not the copy an editable install may leave there, so a rebuild is what JupyterLab loads.
extension: $(EXT_BUILD) $(EXT_BUNDLE)
	@test -L $(EXT_LINK) || { rm -rf $(EXT_LINK) && mkdir -p $(dir $(EXT_LINK)) && \
	  ln -s $(abspath xla_explorer/labextension) $(EXT_LINK); }

extension/node_modules/.package-lock.json: extension/package-lock.json extension/package.json
	cd extension && npm ci --no-audit --no-fund --loglevel=error

$(EXT_BUILD): $(EXT_SRC) extension/node_modules/.package-lock.json | $(STAMP)
	cd extension && PATH="$(abspath $(VENV))/bin:$$PATH" npm run --silent build
	touch $(EXT_BUILD)

$(EXT_BUNDLE): $(EXT_BUILD)
	test -f $@ || (cd extension && npm run --silent build:standalone)
	touch $@

# The graph views need the real Graphviz `dot`, not a Python stand-in.
graphviz:
	@if command -v dot >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing system Graphviz with apt-get"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq graphviz >/dev/null; \
	else \
	  echo "Graphviz's 'dot' is missing. Install it as root, e.g. 'sudo apt-get install graphviz'" \
	       "(Debian/Ubuntu), 'brew install graphviz' (macOS) or 'conda install graphviz', then re-run make." >&2; \
	  exit 1; \
	fi

# Headless Chromium for scripts/screenshot.py and tests/test_screenshot.py, driven by Python
# Playwright (`playwright install` cannot download browsers here, so the system one). Only
# those need it: without apt it warns, and the test skips (except under CI=true).
chromium:
	@if [ -n "$$CHROMIUM" ] || command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing Chromium with apt-get"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	else \
	  echo "warning: Chromium is missing, so 'make screenshot' and its test cannot run." \
	       "Install it as root ('sudo apt-get install chromium') or set CHROMIUM=/path/to/chrome." >&2; \
	fi

# --dist loadgroup: the notebook tests share one Binder rehearsal on one worker (tests/conftest.py).
# Every test but the exhaustive sweeps, which are test-deep's: about 6 minutes on 2 cores.
test: setup
	$(PY) -m pytest -n $(JOBS) --dist loadgroup -q -m "not deep"

# The exhaustive sweeps: every op record on every element type on every backend, hundreds of
# random programs, the Binder rehearsal in a fresh venv. CI runs it after `make test` (.ci/run).
test-deep: setup
	$(PY) -m pytest -n $(JOBS) --dist loadgroup -q -m deep

# The edit-test loop: everything except the tests marked slow (a real JupyterLab, a browser,
# executed notebooks, subprocesses that compile, the fuzz run), under 2 minutes on 2 cores.
test-fast: setup
	$(PY) -m pytest -n $(JOBS) --dist loadgroup -q -m "not slow and not deep"

# What CI checks before the tests: ruff (pyflakes, pycodestyle, bugbear) and a lenient mypy,
# both configured in pyproject.toml. Only the venv's setup: no Graphviz or Chromium needed.
lint: $(STAMP)
	$(VENV)/bin/ruff check xla_explorer tests benchmarks scripts
	$(VENV)/bin/mypy xla_explorer

# Random programs on every backend against eager NumPy; each mismatch is printed as a runnable
# NumPy script. `make fuzz N=10000 SEED=3`; FUZZ_ARGS passes more options (tests/fuzz.py --help).
N         ?= 200
SEED      ?= 0
FUZZ_ARGS ?=

fuzz: setup
	$(PY) -m tests.fuzz -n $(N) --seed $(SEED) --jobs $(JOBS) $(FUZZ_ARGS)

# Root (containers, Binder-like machines) needs --allow-root; nobody else gets it.
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root)
# Extra options for jupyter lab, e.g. LAB_ARGS="--port=9999" (the tests use it).
LAB_ARGS ?=

# The lab opens on LAB_DIR, your own copy of the notebooks: what you run, save or create there
# never changes notebooks/, which the tests check (saved without outputs, paired with .py
# files). A notebook is copied only when your copy lacks it, so your work survives the next
# `make lab`; delete a file there to get the original back. LAB_DIR ignores itself in git, and
# its jupytext.toml turns off the .py pairing that notebooks/ uses.
LAB_DIR ?= lab

lab: setup lab-copy
	@echo "JupyterLab on $(LAB_DIR)/, your copy of notebooks/ (see notebooks/README.md)"
	$(VENV)/bin/jupyter lab --ip=127.0.0.1 --no-browser --notebook-dir=$(LAB_DIR) $(ROOT_FLAG) $(LAB_ARGS)

lab-copy:
	@mkdir -p $(LAB_DIR)
	@for f in notebooks/*.ipynb notebooks/README.md; do \
	  c="$(LAB_DIR)/$${f##*/}"; \
	  if [ ! -e "$$c" ]; then cp "$$f" "$$c"; \
	  elif [ "$$f" -nt "$$c" ] && ! cmp -s "$$f" "$$c"; then \
	    echo "note: $$f is newer than your copy $$c; delete your copy to get it"; fi; \
	done
	@printf '*\n' > $(LAB_DIR)/.gitignore
	@printf '# Written by make lab: no .py pairs in your copy of the notebooks.\nformats = "ipynb"\n' \
	  > $(LAB_DIR)/jupytext.toml

# docs/explorer.png: notebooks/01_first_cell.ipynb run in a real JupyterLab in headless
# Chromium. SCREENSHOT_ARGS passes more options (scripts/screenshot.py --help).
SCREENSHOT_ARGS ?=

screenshot: setup
	$(PY) scripts/screenshot.py $(SCREENSHOT_ARGS)

# The documentation site, docs/_build/html (docs/contributing.md): docs/ and the notebooks, each
# executed from the top on this environment's kernel, every explorer drawn with no kernel and
# no network. Built afresh every time, so the pages show what the code does now; a warning
# fails the build. DOCS_ARGS passes more options to sphinx-build (e.g. DOCS_ARGS=-q).
DOCS_ARGS ?=

.PHONY: docs
docs: $(STAMP) $(WARM) extension graphviz
	rm -rf docs/_build
	$(PY) -m sphinx -b html -W --keep-going -d docs/_build/doctrees $(DOCS_ARGS) docs docs/_build/html
	@echo "The site: $(abspath docs/_build/html)/index.html (it opens from disk: no server needed)"

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis .ruff_cache .mypy_cache
	rm -rf extension/node_modules extension/lib extension/tsconfig.tsbuildinfo xla_explorer/labextension
	rm -rf xla_explorer/viz/bundle docs/_build docs/notebooks
