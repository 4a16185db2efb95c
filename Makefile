# The kit's entry points. Run as root (namespaces, qdiscs, apt-get).
#   make reproduce   install what is missing, then reproduce all three labs (quick; FULL=1 for paper scale)
#   make test        install what is missing, then run the test suite (unit + real-kernel tests)
VENV ?= .venv
MPTCPLAB = $(VENV)/bin/mptcplab
QUICK = $(if $(FULL),,--quick)

.PHONY: setup reproduce test test-unit clean

setup:
	scripts/install-deps.sh

reproduce: setup
	$(MPTCPLAB) doctor || true
	$(MPTCPLAB) reproduce $(QUICK)

test: setup
	$(VENV)/bin/pytest -q -ra

test-unit: setup
	$(VENV)/bin/pytest -q -ra -m "not integration"

clean:
	$(MPTCPLAB) clean
