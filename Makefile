# healthcards: `make demo` and `make test` work on a fresh Debian 12 machine with Swift 6 installed.
SHELL := /bin/bash
APT_PACKAGES := pkg-config libssl-dev zlib1g-dev libqrencode-dev libpng-dev libzbar-dev
# Printed cards (PDF): Cairo, Pango, librsvg (SVG logos) and the Noto fonts for every script.
APT_PACKAGES += libcairo2-dev libpango1.0-dev librsvg2-dev fonts-noto-core fonts-noto-cjk
# What only the tests need: the checker's virtual environment; pdftoppm and pdftotext to read printed cards.
TEST_APT_PACKAGES := python3-venv poppler-utils
SHARED := ../shared
SWIFT_FLAGS ?=
# The tests' Python: a virtual environment under the build folder, never the system Python (PEP 668).
VENV := .build/test-venv

.PHONY: deps test-deps demo test build release bench lint clean

# Installs Debian packages (as root, or through sudo) when they are missing: `$(call apt,PACKAGES)`.
define apt
	@missing=""; for p in $(1); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=""; else SUDO=sudo; fi; \
	  $$SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq $$missing >/dev/null; \
	fi
endef

# The Debian C libraries the program links.
deps:
	$(call apt,$(APT_PACKAGES))

# What the tests need beyond deps: the virtual environment with the checker's packages (when ../shared is
# there) and the tests' own (Tests/requirements.txt).
test-deps: deps
	$(call apt,$(TEST_APT_PACKAGES))
	@stamp=$(VENV)/.installed; reqs="Tests/requirements.txt"; \
	if [ -f $(SHARED)/conformance/requirements.txt ]; then reqs="$$reqs $(SHARED)/conformance/requirements.txt"; fi; \
	if [ ! -x $(VENV)/bin/python3 ] || [ ! -f $$stamp ] || [ "$$(cat $$reqs | sha256sum)" != "$$(cat $$stamp)" ]; then \
	  echo "making the test Python environment $(VENV)"; \
	  rm -rf $(VENV) && python3 -m venv $(VENV) && \
	  $(VENV)/bin/pip install -q --disable-pip-version-check $$(for r in $$reqs; do echo -r $$r; done) && \
	  cat $$reqs | sha256sum > $$stamp; \
	fi

build: deps
	swift build $(SWIFT_FLAGS)

release: deps
	swift build -c release $(SWIFT_FLAGS)

# Issues cards for the shipped samples with the public demo key and writes the demo issuer's JWKS.
demo: release
	@bin=$$(swift build -c release --show-bin-path); \
	rm -rf demo-out; mkdir -p demo-out; \
	install -m 600 keys/demo-issuer.DO-NOT-USE-IN-PRODUCTION.pkcs8.pem .build/demo-key.pem; \
	$$bin/healthcards jwks .build/demo-key.pem --issuer https://issuer.example.org \
	  --out demo-out/site/.well-known/jwks.json >/dev/null && \
	$$bin/healthcards issue --issuer https://issuer.example.org --key .build/demo-key.pem \
	  --template templates/covid19-vaccination.json --out demo-out/covid19-vaccination \
	  --pdf --issuer-name "Example Issuer (demo)" templates/covid19-vaccination.sample.csv && \
	$$bin/healthcards issue --issuer https://issuer.example.org --key .build/demo-key.pem \
	  --template templates/lab-result.json --out demo-out/lab-result --pdf --issuer-name "Example Issuer (demo)" \
	  templates/lab-result.sample.csv && \
	echo && echo "Cards:     demo-out/*/cards/*.smart-health-card" && \
	echo "QR images: demo-out/*/qr/*.png" && \
	echo "PDFs:      demo-out/*/pdf/*.pdf (printed cards: name, doses or results, QR, wallet cut-out)" && \
	echo "Reports:   demo-out/*/report.ndjson" && \
	echo "JWKS:      demo-out/site/.well-known/jwks.json (publish at https://issuer.example.org/.well-known/jwks.json)" && \
	echo "Check:     $$bin/healthcards verify --jwks demo-out/site demo-out"

# Builds and runs the whole test suite (the tests run the conformance checker on what the CLI writes).
test: test-deps
	swift build $(SWIFT_FLAGS)
	swift test $(SWIFT_FLAGS)

# The benchmark (release build): per-stage µs per card, end-to-end cards/s with and without QR for
# 1 job and all cores, peak RSS, and RSS/rate at growing input sizes; also bench-results.json.
# See docs/performance.md. Smaller: make bench BENCH_ARGS="--patients 1000".
BENCH_ARGS ?= --patients 5000 --scale 10000,100000,1000000

bench: release
	$$(swift build -c release --show-bin-path)/healthcards-bench run $(BENCH_ARGS)

lint:
	swift format lint --recursive Sources Tests

clean:
	rm -rf .build demo-out bench-results.json

# Fuzzing: one libFuzzer target per parser of outside input (Fuzz/targets/*.swift), built with
# swiftc -sanitize=fuzzer,address and run FUZZ_SECONDS each; FUZZ_TARGETS picks some (e.g. "csv json").
# Crashes land in .build/fuzz/crashes/; see docs/fuzzing.md.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?=
.PHONY: fuzz
fuzz: deps
	FUZZ_SECONDS=$(FUZZ_SECONDS) Fuzz/run.sh $(FUZZ_TARGETS)
