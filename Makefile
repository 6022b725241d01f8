# Ferry: build, test and run on Debian 12 with the Swift toolchain on PATH.
#
#   make run     install missing Debian packages, build, run (the store demo until ferryd lands)
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
# pkg-config, which SwiftPM uses to find them. Later issues add theirs here (libmicrohttpd-dev,
# libpq-dev).
DEB_PACKAGES := libsqlite3-dev libsodium-dev libsystemd-dev pkg-config
# Debian packages only the tests need (reference clients, sync tools, databases): varlink-go's
# certification client checks the Varlink layer; the Python reference client comes from PyPI,
# into a venv the tests make.
DEB_TEST_PACKAGES := varlink-go python3-venv

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

test-deps: deps
	$(call ensure_debs,$(DEB_TEST_PACKAGES))

build: deps
	$(SWIFT) build $(SWIFTPM_FLAGS)

run: build
	$(SWIFT) run $(SWIFTPM_FLAGS) ferry-demo $(RUN_ARGS)

# The tests start helper executables (Tests/Support) that `swift build` makes, so build first.
test: deps test-deps
	$(SWIFT) build $(SWIFTPM_FLAGS)
	$(SWIFT) test $(SWIFTPM_FLAGS)

bench: deps
	$(SWIFT) run $(SWIFTPM_FLAGS) -c release ferry-bench store --records $(RECORDS)

clean:
	$(SWIFT) package $(SWIFTPM_FLAGS) clean
