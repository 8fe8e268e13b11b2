# healthcards: `make demo` and `make test` work on a fresh Debian 12 machine with Swift 6 installed.
SHELL := /bin/bash
APT_PACKAGES := pkg-config libssl-dev zlib1g-dev libqrencode-dev libpng-dev libzbar-dev
# Reading QR images as people send them: JPEG photos (libjpeg) and a second QR decoder (zxing-cpp).
APT_PACKAGES += libjpeg-dev libzxing-dev
# Printed cards (PDF): Cairo, Pango, librsvg (SVG logos) and the Noto fonts for every script.
APT_PACKAGES += libcairo2-dev libpango1.0-dev librsvg2-dev fonts-noto-core fonts-noto-cjk
# The SMART Health Link server (`healthcards serve`, docs/server.md): libmicrohttpd (HTTP/1.1), SQLite (the
# embedded default database) and libpq (PostgreSQL, for several instances sharing one database).
APT_PACKAGES += libmicrohttpd-dev libsqlite3-dev libpq-dev
# What only the tests need: the checker's virtual environment; pdftoppm and pdftotext to read printed cards, qpdf
# to check their structure (`qpdf --check`).
TEST_APT_PACKAGES := python3-venv poppler-utils qpdf
# The link server's tests start their own PostgreSQL 15 (initdb, pg_ctl) as the postgres user in a scratch folder.
TEST_APT_PACKAGES += postgresql-15
# The static-host and link-server front tests run a private nginx on 127.0.0.1 (never the system one).
TEST_APT_PACKAGES += nginx
# The openssl program mints the access tokens of the $health-cards-issue tests under a throw-away key.
TEST_APT_PACKAGES += openssl
# The viewer's tests (Tests/viewer/) drive Debian's headless Chromium through its own chromedriver (Selenium).
TEST_APT_PACKAGES += chromium chromium-driver
# The link server's backup and restore test uses the sqlite3 program (.backup); its systemd unit test runs
# systemd-analyze verify.
TEST_APT_PACKAGES += sqlite3 systemd
# `make bench`: wrk measures the link server (manifest requests per second, latency percentiles).
BENCH_APT_PACKAGES := wrk
# `make install`: help2man makes the man pages from each command's --help.
INSTALL_APT_PACKAGES := help2man
# `make bench`: valgrind counts instructions (callgrind), gcc builds the C floor (bench/cfloor.c).
BENCH_APT_PACKAGES += valgrind gcc libc6-dev
# `make deb`: dpkg-shlibdeps (dpkg-dev) computes Depends from the libraries the binary links.
DEB_APT_PACKAGES := dpkg-dev
# `make deb-test`: a minimal Debian 12 root to install the package into.
DEB_TEST_APT_PACKAGES := debootstrap
SHARED := ../shared
SWIFT_FLAGS ?=
# The build folder `make examples` runs the examples from (empty: `swift build $(SWIFT_FLAGS) --show-bin-path`).
BIN_DIR ?=
# The tests' Python: a virtual environment under the build folder, never the system Python (PEP 668).
VENV := .build/test-venv

.PHONY: deps test-deps demo test build release bench lint clean man install uninstall install-test deb deb-test examples cfloor

# Where `make install` puts things (DESTDIR for packagers: files go to $(DESTDIR)$(PREFIX)/...).
PREFIX ?= /usr/local
DESTDIR ?=
# The release binary: the Swift standard library linked in and no $$ORIGIN run path, so it runs without a
# Swift toolchain and from any folder.
RELEASE_BIN := .build/release/healthcards
# The .deb's Maintainer field.
DEB_MAINTAINER ?= healthcards packagers <root@localhost>

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
	$(call apt,$(TEST_APT_PACKAGES) $(INSTALL_APT_PACKAGES))
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

# The program only (`--product`): a plain `swift build -c release` would also build the test helpers' target
# (Tests/HealthCardsTestSupport imports Testing, which the static standard library does not ship) and the examples.
release: deps
	swift build -c release --static-swift-stdlib --disable-local-rpath --product healthcards $(SWIFT_FLAGS)

# Issues cards for the shipped samples with the public demo key and writes the demo issuer's JWKS.
demo: release
	@bin=$$(swift build -c release --show-bin-path); \
	rm -rf demo-out .build/demo-rid.secret; mkdir -p demo-out; \
	install -m 600 keys/demo-issuer.DO-NOT-USE-IN-PRODUCTION.pkcs8.pem .build/demo-key.pem; \
	$$bin/healthcards keygen --rid-secret .build/demo-rid.secret >/dev/null && \
	$$bin/healthcards site --out demo-out/site --issuer https://issuer.example.org --crl .build/demo-key.pem \
	  >/dev/null && \
	$$bin/healthcards issue --issuer https://issuer.example.org --key .build/demo-key.pem --site demo-out/site \
	  --rid-secret .build/demo-rid.secret --template templates/covid19-vaccination.json \
	  --out demo-out/covid19-vaccination --pdf --issuer-name "Example Issuer (demo)" \
	  templates/covid19-vaccination.sample.csv && \
	$$bin/healthcards issue --issuer https://issuer.example.org --key .build/demo-key.pem --site demo-out/site \
	  --rid-secret .build/demo-rid.secret --template templates/lab-result.json \
	  --out demo-out/lab-result --pdf --issuer-name "Example Issuer (demo)" \
	  templates/lab-result.sample.csv && \
	echo && echo "Cards:     demo-out/*/cards/*.smart-health-card" && \
	echo "QR images: demo-out/*/qr/*.png" && \
	echo "PDFs:      demo-out/*/pdf/*.pdf (printed cards: name, doses or results, QR, wallet cut-out)" && \
	echo "Reports:   demo-out/*/report.ndjson" && \
	echo "Site:      demo-out/site (.well-known/jwks.json and its CRL; publish it at https://issuer.example.org)" && \
	echo "Check:     $(RELEASE_BIN) verify --jwks demo-out/site demo-out" && \
	echo && echo "Program:   $(RELEASE_BIN) (put it on PATH with: sudo make install; see docs/install.md)"

# The test command (README, .ci/run; docs/testing.md). The suite of record: every test, built once and run
# once under AddressSanitizer, with LeakSanitizer on every run of `healthcards` the tests make (the tests run the
# conformance checker on what the CLI writes, when ../shared is there); then ThreadSanitizer on the suites that
# run threads (TSAN_SUITES); then the example programs, one per product, built with the suite (their `ldd` is
# checked against the C libraries their product may link); then `make install` into a temporary folder and,
# when this machine can build a Debian 12 root (root, debootstrap, network), the .deb in one (skipped with a
# note otherwise). `make test-plain` runs the suite without a sanitizer (faster, for a developer's loop).
ASAN_BUILD := .build/sanitize-address
TSAN_BUILD := .build/sanitize-thread
# The suites whose code runs threads of its own: the batch's reading thread, workers and pipe, the shard merge,
# the site lock, the link server (its HTTP threads, passcode pool and stores), PKCS#11 sessions, the viewer's
# server. Swift Testing's `--filter` is a regular expression over suite and test names.
TSAN_SUITES ?= Batch|Shard|SiteLock|Server|LinkService|HealthCardsIssue|PKCS11|HSM|IssueCLI|Revoke|Rotation|Viewer|AESGCMContextReuse
test: test-deps
	@start=$$(date +%s); \
	echo "test: building the suite under AddressSanitizer ($(ASAN_BUILD))"; \
	$(SANITIZE_ENV) swift build --build-tests --sanitize=address --build-path $(ASAN_BUILD) $(SWIFT_FLAGS) && \
	echo "test: built in $$(( $$(date +%s) - start )) s; running every test under AddressSanitizer" && \
	set -o pipefail && \
	$(SANITIZE_ENV) swift test --skip-build --sanitize=address --build-path $(ASAN_BUILD) $(SWIFT_FLAGS) \
	  2>&1 | tee $(ASAN_BUILD)/test-output.log && \
	echo "test: AddressSanitizer suite clean at $$(( $$(date +%s) - start )) s" && \
	if grep -aE '^.{1,4} Test .* skipped(: ".*")?\.?$$' $(ASAN_BUILD)/test-output.log; then \
	  echo "test: the tests above were skipped: make test-deps installs what they need, so none may be"; exit 1; fi
	BIN_DIR=$$(swift build --sanitize=address --build-path $(ASAN_BUILD) --show-bin-path) \
	  $(SANITIZE_ENV) scripts/examples-test.sh
	@start=$$(date +%s); \
	echo "test: ThreadSanitizer on the suites that run threads ($(TSAN_SUITES))"; \
	$(SANITIZE_ENV) swift test --sanitize=thread --build-path $(TSAN_BUILD) --filter '$(TSAN_SUITES)' $(SWIFT_FLAGS) && \
	echo "test: ThreadSanitizer clean in $$(( $$(date +%s) - start )) s"
	$(MAKE) --no-print-directory install-test
	$(MAKE) --no-print-directory deb-test DEB_TEST_FLAGS=--if-possible

# The whole suite without a sanitizer, in the default build folder: what a developer runs between changes.
.PHONY: test-plain
test-plain: test-deps
	swift build --build-tests $(SWIFT_FLAGS)
	swift test --skip-build $(SWIFT_FLAGS)

# The examples (Examples/NAME/main.swift, executable targets example-NAME of this package, public API only),
# built by the main build: each is run from the root with no arguments and must exit 0, and `ldd` on each must
# name none of the project's C libraries its product may not link (the table in docs/library.md). Builds
# nothing; BIN_DIR points it at another build folder (e.g. a sanitizer build's). See scripts/examples-test.sh.
examples:
	scripts/examples-test.sh "$${BIN_DIR:-$$(swift build $(SWIFT_FLAGS) --show-bin-path)}"

# Man pages, one per command, made from --help by help2man (scripts/make-man.sh).
man: release
	$(call apt,$(INSTALL_APT_PACKAGES))
	@rm -rf .build/man
	SOURCE_DATE_EPOCH=$$(git log -1 --format=%ct 2>/dev/null || date +%s) HEALTHCARDS_PREFIX=$(PREFIX) \
	  scripts/make-man.sh $(RELEASE_BIN) .build/man

# Installs the program, its man pages, bash completion, the templates (with their sample CSVs) and the docs.
install: release man
	install -D -m 755 $(RELEASE_BIN) $(DESTDIR)$(PREFIX)/bin/healthcards
	install -D -m 644 -t $(DESTDIR)$(PREFIX)/share/man/man1 .build/man/*.1
	install -D -m 644 completions/healthcards.bash $(DESTDIR)$(PREFIX)/share/bash-completion/completions/healthcards
	install -D -m 644 -t $(DESTDIR)$(PREFIX)/share/healthcards/templates templates/*
	install -D -m 644 -t $(DESTDIR)$(PREFIX)/share/doc/healthcards README.md
	install -D -m 644 -t $(DESTDIR)$(PREFIX)/share/doc/healthcards/docs docs/*.md

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/healthcards $(DESTDIR)$(PREFIX)/share/man/man1/healthcards.1 \
	  $(DESTDIR)$(PREFIX)/share/man/man1/healthcards-*.1 \
	  $(DESTDIR)$(PREFIX)/share/bash-completion/completions/healthcards
	rm -rf $(DESTDIR)$(PREFIX)/share/healthcards $(DESTDIR)$(PREFIX)/share/doc/healthcards

# `make install` into a temporary folder, then checks what it installed (scripts/install-test.sh).
install-test:
	@dest=$$(mktemp -d) && trap 'rm -rf "$$dest"' EXIT && \
	LC_ALL=C $(MAKE) --no-print-directory install DESTDIR=$$dest PREFIX=/usr/local >/dev/null && \
	scripts/install-test.sh $$dest /usr/local

# The Debian package for servers without Swift: .build/deb/healthcards_VERSION_ARCH.deb (scripts/make-deb.sh).
deb: release
	$(call apt,$(DEB_APT_PACKAGES))
	@rm -rf .build/deb/stage
	@$(MAKE) --no-print-directory install DESTDIR=$(CURDIR)/.build/deb/stage PREFIX=/usr >/dev/null
	@scripts/make-deb.sh .build/deb/stage .build/deb "$(DEB_MAINTAINER)"

# Installs the .deb into a fresh minimal Debian 12 root (debootstrap, chroot; cached in .build/deb-test) and
# runs keygen, site, issue, verify and jwks there (scripts/deb-test.sh).
DEB_TEST_FLAGS ?=
deb-test: deb
	$(call apt,$(DEB_TEST_APT_PACKAGES))
	@scripts/deb-test.sh $(DEB_TEST_FLAGS) $$(ls -t .build/deb/healthcards_*.deb | head -n 1)

# The benchmark (release build): instructions per card under callgrind (the figure to compare between
# runs: with and without QR, per stage, against the C floor; bench-instructions.json), then per-stage µs
# per card, end-to-end cards/s with and without QR for 1 job and all cores, peak RSS, and RSS/rate at
# growing input sizes (bench-results.json), then the worst cases. See docs/performance.md.
# Smaller: make bench BENCH_ARGS="--patients 1000" BENCH_INSTRUCTION_ARGS="--sets generate".
BENCH_ARGS ?= --patients 5000 --scale 10000,100000,1000000
BENCH_INSTRUCTION_ARGS ?=
# The worst cases: the largest accepted input of each kind (docs/verify.md, "Budgets").
BENCH_WORST_ARGS ?=

# The C floors, built with Debian's gcc beside the release binaries: the pipeline's C calls alone (bench/cfloor.c),
# and the link server's HTTP library alone (bench/mhdfloor.c).
cfloor: release
	$(call apt,$(BENCH_APT_PACKAGES))
	@bin=$$(swift build -c release --show-bin-path); \
	gcc -O2 -Wall -Wextra -o $$bin/cfloor bench/cfloor.c $$(pkg-config --cflags --libs libcrypto zlib libqrencode libpng); \
	gcc -O2 -Wall -Wextra -o $$bin/mhdfloor bench/mhdfloor.c $$(pkg-config --cflags --libs libmicrohttpd) -lpthread

# The link server (healthcards serve) with wrk, SQLite and PostgreSQL: `healthcards-bench server`.
BENCH_SERVER_ARGS ?=

bench: release cfloor
	$(call apt,$(BENCH_APT_PACKAGES) postgresql-15)
	swift build -c release --static-swift-stdlib --disable-local-rpath --product healthcards-bench $(SWIFT_FLAGS)
	$$(swift build -c release --show-bin-path)/healthcards-bench instructions $(BENCH_INSTRUCTION_ARGS)
	$$(swift build -c release --show-bin-path)/healthcards-bench run $(BENCH_ARGS)
	$$(swift build -c release --show-bin-path)/healthcards-bench worst $(BENCH_WORST_ARGS)
	$$(swift build -c release --show-bin-path)/healthcards-bench server $(BENCH_SERVER_ARGS)

# Both sanitizers on every test, each in its own build folder (`make test` runs ThreadSanitizer on the suites
# that run threads only); a report from either fails the target. The CLI the tests run is built with the same
# sanitizer, and LeakSanitizer checks every run of it. See docs/testing.md.
SANITIZERS ?= thread address
SANITIZE_ENV = TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$(CURDIR)/Tests/sanitizers/tsan.supp" \
	ASAN_OPTIONS="detect_leaks=0 halt_on_error=1 detect_stack_use_after_return=1" \
	HEALTHCARDS_CHILD_ASAN_OPTIONS="detect_leaks=1 halt_on_error=1 detect_stack_use_after_return=1" \
	LSAN_OPTIONS="suppressions=$(CURDIR)/Tests/sanitizers/lsan.supp print_suppressions=0" \
	SWIFT_BACKTRACE=enable=no
.PHONY: sanitize
sanitize: test-deps
	@for s in $(SANITIZERS); do \
	  echo "sanitize: building and running the tests with -sanitize=$$s"; start=$$(date +%s); \
	  $(SANITIZE_ENV) swift test --sanitize=$$s --build-path .build/sanitize-$$s $(SWIFT_FLAGS) || exit 1; \
	  echo "sanitize: $$s clean in $$(( $$(date +%s) - start )) s"; \
	done

lint:
	swift format lint --recursive Sources Tests

clean:
	rm -rf .build Examples/*/.build demo-out bench-results.json bench-instructions.json bench-worst.json

# Fuzzing: one libFuzzer target per parser of outside input (Fuzz/targets/*.swift), built with
# swiftc -sanitize=fuzzer,address and run FUZZ_SECONDS each; FUZZ_TARGETS picks some (e.g. "csv json").
# Crashes land in .build/fuzz/crashes/; see docs/fuzzing.md.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?=
.PHONY: fuzz
fuzz: deps
	FUZZ_SECONDS=$(FUZZ_SECONDS) Fuzz/run.sh $(FUZZ_TARGETS)
