# The kit's entry points. Run as root (namespaces, qdiscs, apt-get).
#   make reproduce   install what is missing, then reproduce all three labs (quick; FULL=1 for paper scale)
#   make test        install what is missing, then run the test suite (unit + real-kernel tests)
VENV ?= .venv
MPTCPLAB = $(VENV)/bin/mptcplab
QUICK = $(if $(FULL),,--quick)

.PHONY: setup setup-dev uml-if-needed reproduce test test-unit test-quick clean

setup:
	scripts/install-deps.sh

setup-dev:
	scripts/install-deps.sh --dev

reproduce: setup
	$(MPTCPLAB) doctor || true
	$(MPTCPLAB) reproduce $(QUICK)

# Without netem the real-kernel tests run in the UML kernel: build it (or find it cached) first,
# outside any per-test timeout.
uml-if-needed: setup-dev
	$(VENV)/bin/python -c "import sys; from mptcplab.kernel import netem_usable; sys.exit(not netem_usable())" \
	  || $(MPTCPLAB) uml build

test: setup-dev uml-if-needed
	$(VENV)/bin/pytest -q -ra

test-unit: setup-dev
	$(VENV)/bin/pytest -q -ra -m "not integration"

test-quick:
	$(VENV)/bin/pytest -q -ra -m "not integration and not slow"

clean:
	$(MPTCPLAB) clean
