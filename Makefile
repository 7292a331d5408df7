# `make demo` and `make test` do all the set-up on a fresh Debian machine.
PYTHON ?= python3
VENV := .venv
APT_PACKAGES := hol-light libnum-ocaml-dev ocaml-nox gcc camlp5 libcamlp-streams-ocaml-dev bubblewrap python3-venv chromium coq libcoq-hammer eprover z3 cvc4 libcoq-stdpp libcoq-coquelicot libcoq-mathcomp-ssreflect libcoq-mathcomp-fingroup libcoq-mathcomp-algebra libcoq-mathcomp-solvable libcoq-mathcomp-field libcoq-mathcomp-character libcoq-mathcomp-finmap libcoq-mathcomp-bigenough libcoq-mathcomp-real-closed libcoq-mathcomp-analysis libcoq-hierarchy-builder libcoq-elpi why3 why3-examples frama-c-base cvc5 spass libwhy3-ocaml-dev ocaml-findlib libcoq-flocq dpkg-dev libcoq-core-ocaml-dev debootstrap

.PHONY: install demo test test-fast lint bench clean toolchain

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml scripts/install-debian-packages scripts/install-why3-coq-library $(wildcard src/proofeval/provers/coq/plugin/*)
	scripts/install-debian-packages $(APT_PACKAGES)
	scripts/install-why3-coq-library
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -e '.[dev,ray,inspect]'
	$(VENV)/bin/python -c "from proofeval.provers.coq.audit import main; main()"
	touch $@

demo: install
	$(VENV)/bin/proofeval demo

# The Debian 13 Coq toolchain (Coq 8.20.1) the tests also run on: built once with
# debootstrap (root and the network; a few minutes), then reused from the data directory.
toolchain: install
	$(VENV)/bin/proofeval toolchain add debian13

test: install toolchain
	$(VENV)/bin/ruff check src tests benchmarks docs
	$(VENV)/bin/pytest -q

# The tests that need no prover and start no service (markers in pyproject.toml; the
# toolchain is not needed): about 20 s of CPU. Such a run refuses to start a prover.
FAST_TESTS := not hol and not coq and not why3 and not service

test-fast: install
	$(VENV)/bin/ruff check src tests benchmarks docs
	$(VENV)/bin/pytest -q -m "$(FAST_TESTS)"

lint: install
	$(VENV)/bin/ruff check src tests benchmarks docs
	$(VENV)/bin/ruff format --check src tests benchmarks docs

bench: install
	$(VENV)/bin/python benchmarks/hol_light_warm_vs_fresh.py
	$(VENV)/bin/python benchmarks/shared_loading.py

clean:
	rm -rf $(VENV) build *.egg-info
