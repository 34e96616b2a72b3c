# The front door: make run | make test | make bench. Each target installs the Debian packages it
# needs first (third_party/install-deps, idempotent), then configures and builds with CMake.
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=
CLI := $(BUILD)/attnscope-cli

.PHONY: all build run test bench clean

all: build

build:
	third_party/install-deps build
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j$(JOBS)

# Until the desktop app lands, `run` shows the engine on the book's multi-head example.
run: build
	$(CLI) trace assets/presets/multihead.json

test:
	third_party/install-deps build test
	$(MAKE) build
	ctest --test-dir $(BUILD) --output-on-failure -j$(JOBS)

bench:
	third_party/install-deps build test bench
	$(MAKE) build
	/usr/bin/python3 tests/bench/run_bench.py $(CLI) $(BUILD)/bench.json
	@echo "benchmark results: $(BUILD)/bench.json"

clean:
	rm -rf $(BUILD)
