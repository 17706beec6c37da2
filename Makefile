# qp — build, test and demo targets. `make test` is what CI runs (.ci/run).
GO      ?= go
export CGO_ENABLED = 0

.PHONY: all build test vet fmt-check demo fuzz bench clean

all: build

build:
	$(GO) build -o bin/qp ./cmd/qp

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

# The whole test suite: formatting, vet, unit + differential + fuzz-seed tests.
test: fmt-check vet
	$(GO) test -count=1 ./...

# The main job on the built-in default (see README).
demo: build
	./bin/qp demo

# Run every fuzz target for FUZZTIME each (default 10s).
FUZZTIME ?= 10s
fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list 'Fuzz.*' $$pkg 2>/dev/null | grep '^Fuzz'); do \
	    echo "== $$pkg $$f"; $(GO) test $$pkg -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) || exit 1; \
	  done; \
	done

bench:
	$(GO) test -run '^$$' -bench . -benchtime 1x ./... 

clean:
	rm -rf bin
