# Ferry: build, test and run on Debian 12 with the Swift toolchain on PATH.
#
#   make run     install missing Debian packages, build, start ferryd in the foreground
#   make test    the same packages plus the test ones, build, then the whole test suite
#   make bench   the store benchmark (release build), one machine-readable line per figure
#
# Missing Debian packages are installed with apt-get when make runs as root; otherwise make
# names them and the command to run, and stops.

SHELL := /bin/bash

SWIFT ?= swift
# Extra SwiftPM options for every swift command, for example `--scratch-path /tmp/ferry-build`.
SWIFTPM_FLAGS ?=
# Arguments for the program `make run` starts.
RUN_ARGS ?=
# Records for `make bench`.
RECORDS ?= 1000000
# The package installer (a seam: `make deps APT_GET="echo apt-get"` shows what would run).
APT_GET ?= apt-get

# Debian packages the build needs: one per systemLibrary target in Package.swift, and
# pkg-config, which SwiftPM uses to find them.
DEB_PACKAGES := libsqlite3-dev libsodium-dev libsystemd-dev libmicrohttpd-dev libpq-dev pkg-config
# Debian packages only the tests need (reference clients, sync tools, databases): varlink-go's
# certification client checks the Varlink layer; the Python reference client comes from PyPI,
# into a venv the tests make.
DEB_TEST_PACKAGES := varlink-go python3-venv
# The systemd test boots systemd as PID 1 in namespaces (unshare and nsenter come with
# util-linux, which every Debian has); libsystemd-dev is a build package above.
DEB_TEST_PACKAGES += systemd
# Two real Syncthing instances on loopback (Tests/FerryIntegrationTests/SyncthingPair.swift) are
# the file-sync tool that folder-sync tests run two ferryd daemons over.
DEB_TEST_PACKAGES += syncthing
# The relay's PostgreSQL backend: the tests start throwaway clusters of their own with initdb and
# postgres from /usr/lib/postgresql/N/bin (Tests/Support/FerryTestSupport/PostgresCluster.swift),
# as nobody when run as root; Debian's packaged cluster is not used.
DEB_TEST_PACKAGES += postgresql
# openssl makes the self-signed certificate of the relay that serves HTTPS itself
# (Tests/FerryIntegrationTests/RelayTLSTests.swift).
DEB_TEST_PACKAGES += openssl

.PHONY: all deps test-deps build run test bench clean

all: build

# ensure_debs PACKAGES: installs the missing ones as root, or names them and fails.
# `apt-get update` runs only when something is missing.
define ensure_debs
	@set -euo pipefail; \
	packages="$(strip $(1))"; \
	[ -n "$$packages" ] || exit 0; \
	if ! command -v dpkg-query >/dev/null 2>&1; then \
	  echo "make: dpkg-query not found (not Debian?); make sure these are installed: $$packages" >&2; \
	  exit 0; \
	fi; \
	missing=""; \
	for p in $$packages; do \
	  dpkg-query -W -f='$${Status}\n' "$$p" 2>/dev/null | grep -q ' installed$$' || missing="$$missing $$p"; \
	done; \
	[ -n "$$missing" ] || exit 0; \
	if [ "$$(id -u)" != 0 ]; then \
	  echo "make: missing Debian packages:$$missing" >&2; \
	  echo "make: install them, then run make again:" >&2; \
	  echo "    sudo apt-get update && sudo apt-get install -y$$missing" >&2; \
	  exit 1; \
	fi; \
	echo "make: installing missing Debian packages:$$missing"; \
	$(APT_GET) update -qq; \
	DEBIAN_FRONTEND=noninteractive $(APT_GET) install -y -qq --no-install-recommends $$missing
endef

deps:
	$(call ensure_debs,$(DEB_PACKAGES))

# Test tools from PyPI, in a venv of our own (tests find it through FERRY_PYTHON): the reference
# Varlink client, and schemathesis, which checks ferry-relay against docs/relay.openapi.yaml
# (Tests/FerryIntegrationTests/RelayContractTests.swift). Each is installed only when missing or
# at another version; the schemathesis pin runs on Debian 12's Python 3.11.
VENV := $(CURDIR)/.build/venv
SCHEMATHESIS_VERSION := 4.32.5
# module=requirement: the module checked for, the requirement pip installs when it is missing.
PYPI_TEST_PACKAGES := varlink=varlink schemathesis=schemathesis==$(SCHEMATHESIS_VERSION)

test-deps: deps
	$(call ensure_debs,$(DEB_TEST_PACKAGES))
	@set -euo pipefail; \
	missing=""; \
	for entry in $(PYPI_TEST_PACKAGES); do \
	  module="$${entry%%=*}"; requirement="$${entry#*=}"; \
	  wanted="$${requirement#*==}"; [ "$$wanted" != "$$requirement" ] || wanted=""; \
	  have="$$("$(VENV)/bin/python3" -c "import importlib.metadata as m; print(m.version('$$module'))" 2>/dev/null || true)"; \
	  if [ -z "$$have" ] || { [ -n "$$wanted" ] && [ "$$have" != "$$wanted" ]; }; then missing="$$missing $$requirement"; fi; \
	done; \
	[ -n "$$missing" ] || exit 0; \
	echo "make: installing$$missing from PyPI into $(VENV)"; \
	[ -x "$(VENV)/bin/python3" ] || python3 -m venv "$(VENV)"; \
	"$(VENV)/bin/pip" install -q $$missing

build: deps
	$(SWIFT) build $(SWIFTPM_FLAGS)

# ferryd in the foreground on its built-in defaults (state in $$XDG_STATE_HOME/ferry, socket in
# $$XDG_RUNTIME_DIR/ferry/ferryd.sock); Ctrl-C stops it. Try `ferryctl` from a second terminal.
run: build
	$(SWIFT) run $(SWIFTPM_FLAGS) ferryd $(RUN_ARGS)

# The tests start helper executables (Tests/Support) that `swift build` makes, so build first.
test: deps test-deps
	$(SWIFT) build $(SWIFTPM_FLAGS)
	# One test at a time: several suites start real processes, servers and a systemd, and on a
	# 2-core machine running them side by side starves the concurrency pool that timed tests need.
	FERRY_PYTHON="$(VENV)/bin/python3" $(SWIFT) test --no-parallel $(SWIFTPM_FLAGS)

bench: deps
	$(SWIFT) run $(SWIFTPM_FLAGS) -c release ferry-bench store --records $(RECORDS)

clean:
	$(SWIFT) package $(SWIFTPM_FLAGS) clean

# Installation.
#   make install               ferryd and ferryctl (release builds) into $(PREFIX)/bin, the systemd
#                              user units, the bash completion, and etc/ferryd.conf as an example
#   make install PREFIX=/usr   elsewhere (as root for system directories); DESTDIR stages the tree
#   make uninstall             removes those files again (give it the same PREFIX)
# Then, as the user who runs Ferry:
#   systemctl --user daemon-reload && systemctl --user enable --now ferryd.socket
# For one user without root: make install PREFIX=$$HOME/.local USERUNITDIR=$$HOME/.local/share/systemd/user
# (~/.local/lib/systemd/user is not where the user manager looks).
# SYSTEM=1 adds the relay: ferry-relay into $(BINDIR), systemd/ferry-relay.service into
# $(SYSTEMUNITDIR) (passing --config when SYSCONFDIR is not /etc), etc/ferry-relay.conf into
# $(SYSCONFDIR)/ferry-relay/ (kept if there) and, with docs/relay.openapi.yaml, into $(DOCDIR).
# System-wide: `make release` as yourself, then `sudo make install` (it does not build as root).
PREFIX ?= /usr/local
DESTDIR ?=
SYSTEM ?=
BINDIR ?= $(PREFIX)/bin
USERUNITDIR ?= $(PREFIX)/lib/systemd/user
SYSTEMUNITDIR ?= $(PREFIX)/lib/systemd/system
COMPLETIONDIR ?= $(PREFIX)/share/bash-completion/completions
DOCDIR ?= $(PREFIX)/share/doc/ferry
SYSCONFDIR ?= /etc
# The relay reads /etc/ferry-relay/ferry-relay.conf unless told otherwise: with another
# SYSCONFDIR its unit passes --config.
RELAY_EXEC = $(BINDIR)/ferry-relay serve$(if $(filter-out /etc /etc/,$(SYSCONFDIR)), --config $(SYSCONFDIR)/ferry-relay/ferry-relay.conf,)

# The binaries `install` copies, built by `make release`: the Swift runtime and Foundation are
# linked in (--static-swift-stdlib), so installed programs do not depend on where the toolchain
# lives (a home directory, /opt/swift) or stay tied to its version. Static FoundationNetworking
# needs libcurl, which the toolchain itself needs (libcurl4); .build/link/libcurl.so points at
# it, so no -dev package is needed. Its own scratch path keeps it apart from `make bench`.
RELEASE_DIR ?= .build/install
RELEASE_BIN := $(RELEASE_DIR)/release
RELEASE_FLAGS = -c release --static-swift-stdlib --scratch-path $(RELEASE_DIR) -Xlinker -L$(CURDIR)/.build/link

.PHONY: release install uninstall

release: deps
	@set -euo pipefail; mkdir -p .build/link; \
	curl="$$(/sbin/ldconfig -p | awk '/libcurl\.so\.4 \(libc6,/ && !found++ { print $$NF }')"; \
	[ -n "$$curl" ] || { echo "make: libcurl.so.4 not found (Debian package libcurl4, which the Swift toolchain needs)" >&2; exit 1; }; \
	ln -sfn "$$curl" .build/link/libcurl.so
	for product in ferryd ferryctl ferry-relay; do $(SWIFT) build $(RELEASE_FLAGS) --product $$product || exit 1; done
	@# What `install` compares the sources with (SwiftPM leaves a product it need not relink alone).
	touch "$(RELEASE_BIN)/.release-stamp"

# Builds first (as the user running make), except under sudo, which would build as root in
# the user's tree and whose PATH usually has no swift: then `make release` must have run.
install: deps
	@set -euo pipefail; \
	if [ -z "$${SUDO_USER:-}" ] && command -v $(SWIFT) >/dev/null 2>&1; then \
	  $(MAKE) --no-print-directory release; \
	elif [ ! -x "$(RELEASE_BIN)/ferryd" ] || [ ! -x "$(RELEASE_BIN)/ferryctl" ] || [ ! -x "$(RELEASE_BIN)/ferry-relay" ]; then \
	  echo "make: no release build in $(RELEASE_BIN): run 'make release' as yourself first, then 'sudo make install'" >&2; \
	  exit 1; \
	elif [ ! -e "$(RELEASE_BIN)/.release-stamp" ] || [ -n "$$(find Sources Package.swift -newer "$(RELEASE_BIN)/.release-stamp" -print -quit 2>/dev/null)" ]; then \
	  echo "make: the release build in $(RELEASE_BIN) is older than the sources: run 'make release' as yourself again, then 'sudo make install'" >&2; \
	  exit 1; \
	fi
	install -d -m 0755 "$(DESTDIR)$(BINDIR)" "$(DESTDIR)$(USERUNITDIR)" "$(DESTDIR)$(DOCDIR)"
	install -m 0755 "$(RELEASE_BIN)/ferryd" "$(RELEASE_BIN)/ferryctl" "$(DESTDIR)$(BINDIR)/"
	# The unit names /usr/local/bin/ferryd; point it at this BINDIR (without DESTDIR).
	sed 's|^ExecStart=/usr/local/bin/ferryd$$|ExecStart=$(BINDIR)/ferryd|' systemd/ferryd.service \
	  > "$(DESTDIR)$(USERUNITDIR)/ferryd.service"
	chmod 0644 "$(DESTDIR)$(USERUNITDIR)/ferryd.service"
	grep -qx 'ExecStart=$(BINDIR)/ferryd' "$(DESTDIR)$(USERUNITDIR)/ferryd.service"
	install -m 0644 systemd/ferryd.socket "$(DESTDIR)$(USERUNITDIR)/ferryd.socket"
	if [ -f contrib/ferryctl.bash-completion ]; then \
	  install -D -m 0644 contrib/ferryctl.bash-completion "$(DESTDIR)$(COMPLETIONDIR)/ferryctl"; \
	fi
	install -m 0644 etc/ferryd.conf "$(DESTDIR)$(DOCDIR)/ferryd.conf"
ifneq ($(SYSTEM),)
	# The relay: its binary, its system unit (ExecStart and Documentation pointed at this
	# prefix), its config in $(SYSCONFDIR)/ferry-relay/ unless one is there, and examples.
	install -d -m 0755 "$(DESTDIR)$(SYSTEMUNITDIR)" "$(DESTDIR)$(SYSCONFDIR)/ferry-relay"
	install -m 0755 "$(RELEASE_BIN)/ferry-relay" "$(DESTDIR)$(BINDIR)/"
	sed -e 's|^ExecStart=/usr/local/bin/ferry-relay serve$$|ExecStart=$(RELAY_EXEC)|' \
	    -e 's|file:/usr/local/share/doc/ferry/|file:$(DOCDIR)/|' systemd/ferry-relay.service \
	  > "$(DESTDIR)$(SYSTEMUNITDIR)/ferry-relay.service"
	chmod 0644 "$(DESTDIR)$(SYSTEMUNITDIR)/ferry-relay.service"
	grep -qx 'ExecStart=$(RELAY_EXEC)' "$(DESTDIR)$(SYSTEMUNITDIR)/ferry-relay.service"
	[ -e "$(DESTDIR)$(SYSCONFDIR)/ferry-relay/ferry-relay.conf" ] || \
	  install -m 0644 etc/ferry-relay.conf "$(DESTDIR)$(SYSCONFDIR)/ferry-relay/ferry-relay.conf"
	install -m 0644 etc/ferry-relay.conf docs/relay.openapi.yaml "$(DESTDIR)$(DOCDIR)/"
endif

uninstall:
	rm -f "$(DESTDIR)$(BINDIR)/ferryd" "$(DESTDIR)$(BINDIR)/ferryctl" \
	  "$(DESTDIR)$(USERUNITDIR)/ferryd.service" "$(DESTDIR)$(USERUNITDIR)/ferryd.socket" \
	  "$(DESTDIR)$(COMPLETIONDIR)/ferryctl" "$(DESTDIR)$(DOCDIR)/ferryd.conf" \
	  "$(DESTDIR)$(BINDIR)/ferry-relay" "$(DESTDIR)$(SYSTEMUNITDIR)/ferry-relay.service" \
	  "$(DESTDIR)$(DOCDIR)/ferry-relay.conf" "$(DESTDIR)$(DOCDIR)/relay.openapi.yaml"
	rmdir --ignore-fail-on-non-empty "$(DESTDIR)$(DOCDIR)" 2>/dev/null || true
