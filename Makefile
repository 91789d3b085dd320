# recommend-job

GO ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
IMG ?= recommend-job:$(VERSION)
GO_TEST_FLAGS ?= -count=1 -timeout=30m
LDFLAGS := -s -w -X main.version=$(VERSION)
GOLANGCI_LINT_VERSION ?= v2.15.0
CONTROLLER_GEN_VERSION ?= v0.23.0
CONTROLLER_GEN := $(CURDIR)/.cache/bin/controller-gen
# The chart's CRD, generated from internal/api; controller-gen names its output
# <group>_<plural>.yaml, so it is written to .cache/crd and renamed.
CRD := charts/recommend-job/crds/resourcerecommends.yaml
GENERATED := ':(glob)internal/api/**/zz_generated.*' charts/recommend-job/crds

.DEFAULT_GOAL := help

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_-]+:.*##/ {printf "  %-16s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## Build bin/recommend-job.
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/recommend-job ./cmd/recommend-job

.PHONY: tools
tools: ## Install and build what the tests run: etcd, kube-apiserver, Prometheus, VictoriaMetrics, git, helm, Gitea, Thanos, Mermaid, Chromium, and a node (containerd, kubelet, kube-controller-manager, kube-scheduler, kube-proxy).
	hack/testbed tools

# Some unit tests wait out a timeout (a TLS handshake that never completes
# takes 10 s); four packages at a time keep the others building meanwhile.
.PHONY: test-unit
test-unit: ## Run the unit tests: no server is started and no tool but Go is needed; about 3 minutes on two cores, warm.
	$(GO) test $(GO_TEST_FLAGS) -p 4 ./...

# Test files that start a server or run a program (etcd, kube-apiserver,
# Prometheus, git, helm, Gitea, ssh-keygen) carry the build tag integration;
# go test without it compiles none of them.
# image first: the node's test builds the job statically again, and then
# finds every package compiled (a static build shares none with the default
# one).
.PHONY: test
test: tools image ## Run all tests: the unit tests and the integration tests on the real test bed, as CI does.
	$(GO) vet ./...
	$(GO) vet -tags integration ./...
	$(GO) test $(GO_TEST_FLAGS) -tags integration ./...

.PHONY: chart-test
chart-test: tools ## Lint the Helm chart and install it into the test bed's apiserver.
	$(GO) test -count=1 -tags integration -run 'TestChart' ./cmd/recommend-job

.PHONY: generate
generate: ## Generate the deepcopy functions and the chart's CRD from internal/api (controller-gen, pinned).
	GOBIN=$(CURDIR)/.cache/bin $(GO) install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)
	$(CONTROLLER_GEN) object paths=./internal/api/...
	rm -rf .cache/crd
	$(CONTROLLER_GEN) crd paths=./internal/api/... output:crd:artifacts:config=.cache/crd
	cat hack/crd-header.yaml .cache/crd/recommendation.katalyst.kubewharf.io_resourcerecommends.yaml > $(CRD)

.PHONY: verify-generate
verify-generate: generate ## Check that the generated files are up to date with internal/api.
	@test -z "$$(git status --porcelain -- $(GENERATED))" || (git status --porcelain -- $(GENERATED); git diff -- $(GENERATED); echo "generated files are stale: run make generate and commit the result"; exit 1)

.PHONY: lint
lint: ## Run golangci-lint (pinned) on the code.
	GOBIN=$(CURDIR)/.cache/bin $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	.cache/bin/golangci-lint run ./...

# DEMO_SCREENSHOT saves the first pull request's page, as headless Chromium
# shows it, as a PNG, e.g. make demo DEMO_SCREENSHOT=docs/images/pull-request.png;
# DEMO_SCREENSHOT_HEIGHT is its window's height in CSS pixels (1280 wide).
DEMO_SCREENSHOT ?=
DEMO_SCREENSHOT_HEIGHT ?= 1800
# DEMO_ON_NODE=1 runs the job as the chart's CronJob does, in a pod on a node
# of the test bed, from make image's image (root only).
DEMO_ON_NODE ?=

.PHONY: demo
demo: ## Run the job end to end on the bundled demo, on a local test bed and Gitea: a pull request per team, with its evidence.
	hack/run ./hack/cmd/demo $(if $(DEMO_ON_NODE),-node) $(if $(DEMO_SCREENSHOT),-screenshot '$(DEMO_SCREENSHOT)' -screenshot-height $(DEMO_SCREENSHOT_HEIGHT))

.PHONY: step-study
step-study: ## Measure what coarser CPU steps, rate windows and subqueries cost in precision, on a real Prometheus (about a minute).
	hack/run ./hack/cmd/stepstudy --markdown

# The scales of make bench; e.g. make bench BENCH_N=1000. BENCH_WARM is how
# long after its cold run each scale runs warm (0: cold only). BENCH_FLAGS adds
# flags of hack/cmd/bench, e.g. BENCH_FLAGS='-out bench.md -no-baseline'.
BENCH_N ?= 100 1000 5000 20000
BENCH_WARM ?= 1h
BENCH_FLAGS ?=

.PHONY: bench
bench: tools ## Benchmark a whole run of the job at N = 100, 1,000, 5,000 and 20,000 (BENCH_N), cold and an hour later warm, on the test bed, with its floor and the katalyst-style baseline (BENCHMARKS.md); about 3 hours.
	hack/run ./hack/cmd/bench -n "$(BENCH_N)" -warm $(BENCH_WARM) $(BENCH_FLAGS)

.PHONY: bench-go
bench-go: tools ## Run the Go micro-benchmarks, those on the test bed's Prometheus included.
	$(GO) test -tags integration -run='^$$' -bench=. -benchmem ./...

.PHONY: fmt
fmt: ## Format the code.
	gofmt -w $$(git ls-files '*.go')

.PHONY: vet
vet: ## Run go vet on both test tiers.
	$(GO) vet ./...
	$(GO) vet -tags integration ./...

.PHONY: verify
verify: verify-generate ## Check generated files, formatting, vet and go.mod tidiness, and that the tree is clean.
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); echo "gofmt needed"; exit 1)
	$(GO) vet ./...
	$(GO) vet -tags integration ./...
	$(GO) mod tidy
	@git diff --exit-code -- go.mod go.sum
	@test -z "$$(git status --porcelain)" || (git status --porcelain; echo "tree is dirty"; exit 1)

.PHONY: image
image: ## Build the container image as an OCI archive in .cache/image, without Docker: the Dockerfile's final stage, from the static binary.
	@mkdir -p .cache/image
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w -X main.version=$(VERSION)" -o .cache/image/recommend-job ./cmd/recommend-job
	$(GO) run ./hack/cmd/image -binary .cache/image/recommend-job -name $(IMG) -version $(VERSION) -o .cache/image/recommend-job.tar

.PHONY: docker-build
docker-build: ## Build the container image (needs a Docker engine).
	docker build --build-arg VERSION=$(VERSION) -t $(IMG) .
