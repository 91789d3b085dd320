# recommend-job

GO ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
IMG ?= recommend-job:$(VERSION)
GO_TEST_FLAGS ?= -count=1 -timeout=30m
LDFLAGS := -s -w -X main.version=$(VERSION)
GOLANGCI_LINT_VERSION ?= v2.15.0

.DEFAULT_GOAL := help

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_-]+:.*##/ {printf "  %-14s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## Build bin/recommend-job.
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/recommend-job ./cmd/recommend-job

.PHONY: tools
tools: ## Install and build what the tests run: etcd, kube-apiserver, Prometheus, git, helm, Gitea.
	hack/testbed tools

.PHONY: test
test: tools ## Run all tests, the integration tests on the real test bed included.
	$(GO) vet ./...
	$(GO) test $(GO_TEST_FLAGS) ./...

.PHONY: chart-test
chart-test: tools ## Lint the Helm chart and install it into the test bed's apiserver.
	$(GO) test -count=1 -run 'TestChart' ./cmd/recommend-job

.PHONY: lint
lint: ## Run golangci-lint (pinned) on the code.
	GOBIN=$(CURDIR)/.cache/bin $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	.cache/bin/golangci-lint run ./...

.PHONY: demo
demo: ## Run the job end to end on the bundled demo, on a local test bed.
	$(GO) run ./hack/cmd/demo

.PHONY: bench
bench: ## Run the benchmarks.
	$(GO) test -run='^$$' -bench=. -benchmem ./...

.PHONY: fmt
fmt: ## Format the code.
	gofmt -w $$(git ls-files '*.go')

.PHONY: vet
vet: ## Run go vet.
	$(GO) vet ./...

.PHONY: verify
verify: ## Check formatting, vet and go.mod tidiness, and that the tree is clean.
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); echo "gofmt needed"; exit 1)
	$(GO) vet ./...
	$(GO) mod tidy
	@git diff --exit-code -- go.mod go.sum
	@test -z "$$(git status --porcelain)" || (git status --porcelain; echo "tree is dirty"; exit 1)

.PHONY: docker-build
docker-build: ## Build the container image (needs a Docker engine).
	docker build --build-arg VERSION=$(VERSION) -t $(IMG) .
