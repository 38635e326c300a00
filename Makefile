# vectorflow: `make demo` tries it, `make test` proves it.
GO ?= go
BIN := bin/vectorflow
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)

.PHONY: build test fuzz bench demo generate fmt tools e2e-forge

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/vectorflow

# Every test, against the real parts (git server, gpg, ssh-keygen, kustomize).
test: tools
	$(GO) vet ./...
	KUBEBUILDER_ASSETS=$$(hack/envtest.sh) $(GO) test -count=1 -timeout 30m ./...

# The kustomize CLI (render equality), controller-gen, Gitea (the forge
# tests) and kube-apiserver and etcd (the Kubernetes tests), built from the Go
# module proxy at pinned versions and cached in ~/.cache/vectorflow.
tools:
	@hack/tools.sh >/dev/null
	@hack/gitea.sh >/dev/null
	@hack/envtest.sh >/dev/null

e2e-forge: tools
	$(GO) test -count=1 ./forge/...

fuzz:
	hack/fuzz.sh

# The side-by-side table (vectorflow, a running run, the shell way, a bare
# push; medians, ratios, scaling exponents, peak RSS per step, each goal of
# issue 17 met or missed, and the top of each step's CPU profile) of
# internal/bench, then the Go benchmarks. BENCH_SIZES etc. scale it
# (BENCH_PROFILE=0 skips the profiles, BENCH_PROFILE_DIR keeps them whole);
# `make test` runs a small version.
BENCH_SIZES ?= 10,100,1000,10000
BENCH_SHAPES ?= chain,apps,apps-auto,auto,blobs
BENCH_REPS ?= 3
BENCH_BLOB_MB ?= 1024
BENCH_PROFILE ?= 1
BENCH_PROFILE_DIR ?=
bench: tools
	@mkdir -p bin
	VECTORFLOW_BENCH_SIZES=$(BENCH_SIZES) VECTORFLOW_BENCH_SHAPES=$(BENCH_SHAPES) VECTORFLOW_BENCH_REPS=$(BENCH_REPS) VECTORFLOW_BENCH_BLOB_MB=$(BENCH_BLOB_MB) \
		VECTORFLOW_BENCH_PROFILE=$(BENCH_PROFILE) VECTORFLOW_BENCH_PROFILE_DIR=$(BENCH_PROFILE_DIR) \
		VECTORFLOW_BENCH_OUT=$(CURDIR)/bin/bench.txt $(GO) test -count=1 -timeout 4h -run '^TestBench$$' ./internal/bench
	@cat bin/bench.txt
	$(GO) test -run '^$$' -bench . -benchmem ./...

demo: build
	$(BIN) demo

# Deepcopy functions and the CRDs of api/v1alpha1 (config/crd/bases), with
# the controller-gen that hack/tools.sh pins.
generate:
	$$(hack/tools.sh)/controller-gen object:headerFile=hack/boilerplate.go.txt crd paths=./api/... output:crd:artifacts:config=config/crd/bases

fmt:
	gofmt -l -w $$(git ls-files '*.go')
