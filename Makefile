# openctl — every target works on a fresh machine with Go 1.26 installed.
GO ?= go
FUZZTIME ?= 30s

.PHONY: all api run run-vms test clienttest vet fmt-check test-race fuzz-seeds bench fuzz examples cross test-deps standin standin-test tools-test

all: test

## run: the main job — a K3s cluster (3 servers, 2 workers, a VIP) on simulated Proxmox VMs, end to end, in process: no root, no Proxmox, no download; ARGS=--hold keeps it serving for kubectl until Ctrl-C
run:
	$(GO) run ./cmd/openctl apply --sandbox -f examples/k3s-proxmox.yaml $(ARGS)

## run-vms: three VMs created end to end against the built-in Proxmox VE simulator, with live progress
run-vms:
	$(GO) run ./cmd/openctl apply --sandbox -f examples/vms.yaml

## test: everything CI runs — formatting, vet, the race-enabled suite (fuzz seed corpora included), the nested bench module's build, the k3s stand-in and its tests, kubelite's client tests — then a table of wall time per step, per test package and the ten slowest tests
# Every step runs even after one fails (one run shows every broken step);
# test exits 1 if any failed. Steps joined by + run at once: vet beside
# the stand-in's link; the stand-in's own tests, which mostly wait on
# their clusters (≈ 100 CPU-seconds in 195 s), beside the race suite; the
# short steps after it together. (vet, kubelite's client tests, the
# examples and the cross builds beside the race suite made it slower:
# 787 s instead of 735.) Steps that run tests write their go test
# -json stream to $(REPORT)/STEP.json (gotestsum, pinned in tools/go.mod,
# prints go test's usual output meanwhile); tools/suitereport reads them.
TEST_STEPS := test-deps fmt-check tools-test vet+standin test-race+standin-test clienttest+examples+cross
REPORT := $(CURDIR)/.suite
GOTESTSUM = $(GO) tool -modfile=$(CURDIR)/tools/go.mod gotestsum --format standard-quiet --jsonfile $(REPORT)/$@.json --
test:
	@rm -rf $(REPORT) && mkdir -p $(REPORT); status=0; t0=$$(date +%s.%N); \
	run() { \
	  start=$$(date +%s.%N); \
	  if $(MAKE) --no-print-directory $$1; then result=ok; else result=FAIL; fi; \
	  awk -v s=$$1 -v z=$$t0 -v a=$$start -v b=$$(date +%s.%N) -v r=$$result 'BEGIN { printf "%s\t%.1f\t%.1f\t%s\n", s, a - z, b - a, r }' >> $(REPORT)/steps.tsv; \
	  test $$result = ok; \
	}; \
	for group in $(TEST_STEPS); do \
	  pids=; for step in $$(echo $$group | tr + ' '); do run $$step & pids="$$pids $$!"; done; \
	  for pid in $$pids; do wait $$pid || status=1; done; \
	done; \
	cd tools && $(GO) run ./suitereport $(REPORT) || status=1; \
	exit $$status

# The steps that run tests write into $(REPORT) (order-only: its date
# does not matter).
tools-test clienttest standin-test test-race: | $(REPORT)
$(REPORT):
	@mkdir -p $@

# tools-test: the suite's own tooling (tools/, a nested module).
tools-test:
	cd tools && $(GO) vet ./... && $(GOTESTSUM) -count=1 ./...

# kubelite's tests with client-go's informers and leader election and the
# real kubectl run in process: a nested module, so that the library's
# go.mod does not gain kubectl's command tree.
clienttest:
	cd sandbox/kubelite/clienttest && $(GO) vet ./... && $(GOTESTSUM) -race -count=1 ./...

# The k3s stand-in (k3s/k3stest/standin, a nested module on the real
# kube-apiserver and etcd): built once into bin/ (the Go build cache makes
# a rebuild seconds; a cold build is ≈ 8 min and 2.5 GB on 2 cores), then
# (standin-test) its own tests run against that binary. Tests find it
# through K3S_STANDIN_BINARY.
STANDIN_BIN := $(CURDIR)/bin/k3s-standin
export K3S_STANDIN_BINARY := $(STANDIN_BIN)
# CGO_ENABLED=0 for all three, so that vet and the test reuse the build's
# compiled packages instead of compiling Kubernetes again (so no -trimpath:
# it would change them). Linked without symbol table and DWARF (-s -w):
# 134 MB instead of 190, which every test install uploads and hashes.
standin:
	cd k3s/k3stest/standin && CGO_ENABLED=0 $(GO) build -ldflags='-s -w' -o $(STANDIN_BIN) ./cmd/k3s
standin-test:
	@test -x $(STANDIN_BIN) || $(MAKE) --no-print-directory standin
	cd k3s/k3stest/standin && CGO_ENABLED=0 $(GO) vet ./... && CGO_ENABLED=0 $(GOTESTSUM) -count=1 ./...

# test-deps: the K3s test hosts (k3s/k3stest) run Debian's real sshd and sudo.
# As root, installs openssh-server and sudo when missing (apt-get update first);
# silent when both are there. Without root it says what the host tests will skip.
test-deps:
	@if [ -x /usr/sbin/sshd ] && [ -x /usr/bin/sudo ]; then exit 0; fi; \
	if [ "$$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then \
	  echo "test-deps: openssh-server or sudo missing and cannot install them (need root and apt-get): the k3s/k3stest host tests will skip"; exit 0; fi; \
	echo "test-deps: installing openssh-server and sudo for the K3s test hosts"; \
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends openssh-server sudo >/dev/null

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...
	cd bench && $(GO) vet ./...

# go test runs every Fuzz target's seed corpus (f.Add and testdata/fuzz) as ordinary tests.
# -parallel 8: the end-to-end tests (test hosts, clusters) spend much of
# their time waiting on services; at the default (GOMAXPROCS, 2) the k3s
# package alone took > 600 s, at 8 it takes ≈ 460 s with the CPUs busy.
# The longest packages are named first, so that they start first (go test
# runs packages in the order given), and -p 3 runs three test binaries at
# once: k3s/k3stest mostly waits on its hosts (≈ 85 CPU-seconds in
# 175 s), so two at a time left the CPUs idle while the k3s package, in
# alphabetical order, started only after 176 s; four at a time slowed the
# k3s package, the longest, by two minutes. The state packages follow
# them: each derives PBKDF2 keys (600,000 iterations, ≈ 2 CPU-seconds
# under -race), ≈ 200 CPU-seconds in all, which at the end of the run
# kept it going after the k3s package ended.
SLOW_PKGS := ./k3s ./k3s/k3stest ./cmd/openctl . ./state/postgres ./state ./state/seal ./examples/ci
test-race:
	$(GOTESTSUM) -race -count=1 -p 3 -parallel 8 -timeout 25m $(SLOW_PKGS) ./...

examples:
	$(GO) build -o /dev/null ./examples/...
	cd bench && $(GO) test -count=1 -run '^$$' -bench . -benchtime 1x ./...

## cross: the node agent as a static binary for every node architecture, into bin/openctl-agent-linux-<arch> (what providers.k3s.agent.binaryDir holds)
cross:
	@for arch in amd64 arm64 arm; do \
	  echo "== linux/$$arch ./cmd/openctl-agent (CGO_ENABLED=0) -> bin/openctl-agent-linux-$$arch"; \
	  CGO_ENABLED=0 GOOS=linux GOARCH=$$arch $(GO) build -trimpath -o bin/openctl-agent-linux-$$arch ./cmd/openctl-agent || exit 1; \
	done

## api: rewrite the exported-API golden files under api/ after an
## exported change (TestAPI fails until they match; say what changed in
## CHANGELOG.md)
api:
	$(GO) test -run '^TestAPI$$' -update-api .

## bench: the performance figures quoted in the README and the issues
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...
	cd bench && $(GO) test -run '^$$' -bench . -benchmem ./...

## fuzz: run every fuzz target for FUZZTIME each (not part of `make test`)
fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done
