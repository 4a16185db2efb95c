# The kit's entry points. Run as root (namespaces, qdiscs, apt-get).
#   make reproduce   install what is missing (the UML kernel when a lab runs there), then reproduce all three
#                    labs (quick; FULL=1 for paper scale)
#   make test        install what is missing, then run the test suite (unit + real-kernel tests)
VENV ?= .venv
MPTCPLAB = $(VENV)/bin/mptcplab
QUICK = $(if $(FULL),,--quick)

.PHONY: setup setup-dev uml-if-needed reproduce test test-unit test-quick clean

setup:
	scripts/install-deps.sh

setup-dev:
	scripts/install-deps.sh --dev

# Without netem the labs run in the UML kernel: build it (or find it cached) first, with its own
# progress line, outside any per-test timeout and outside the first lab's time (reproduce's time ratio).
UML_IF_NEEDED = $(VENV)/bin/python -c "import sys; from mptcplab.core.kernel import netem_usable; sys.exit(not netem_usable())" \
	  || $(MPTCPLAB) uml build

# reproduce builds the UML kernel itself when a lab goes there (Place.ready), beside deciding and
# preparing the other labs' places, and before any lab measures (commands/reproduce.py, ready_places).
reproduce: setup
	$(MPTCPLAB) doctor || true
	$(MPTCPLAB) reproduce $(QUICK)

uml-if-needed: setup-dev
	$(UML_IF_NEEDED)

test: setup-dev uml-if-needed
	$(VENV)/bin/pytest -q -ra

test-unit: setup-dev
	$(VENV)/bin/pytest -q -ra -m "not integration"

test-quick:
	$(VENV)/bin/pytest -q -ra -m "not integration and not slow"

clean:
	$(MPTCPLAB) clean
