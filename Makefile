# Entry points for people and CI. Every target installs what it needs first
# (scripts/setup-deps.sh: Debian packages, idempotent) and builds with CMake + Ninja.
#
#   make demo      build, then run the demo (scripts/demo.sh)
#   make test      build, then run every test (unit, end-to-end, fidelity, include rules)
#   make fuzz      build the libFuzzer targets (clang, in FUZZ_BUILD) and run each for
#                  FUZZ_SECONDS (fuzz/run.sh); everything they write stays in FUZZ_BUILD
#   make bench     build, then run the benchmarks in bench/ and print the results
#   make format    clang-format every source file in place

BUILD ?= build
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZERS ?= spec api credentials
JOBS ?= $(shell nproc)
# Warnings are errors in CI (CI=true), as in STYLE.md rule 15.
WERROR := $(if $(CI),ON,OFF)

.PHONY: deps build test demo fuzz bench format clean

deps:
	@./scripts/setup-deps.sh

build: deps
	@cmake -S . -B $(BUILD) -G Ninja -DTPUFLEET_WERROR=$(WERROR) >/dev/null
	@ninja -C $(BUILD)

test: build
	@ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

demo: build
	@./scripts/demo.sh $(BUILD)/src/app/tpufleet

fuzz: deps
	@CXX=clang++ cmake -S . -B $(FUZZ_BUILD) -G Ninja -DTPUFLEET_FUZZ=ON >/dev/null
	@ninja -C $(FUZZ_BUILD) fuzzers
	@./fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS) $(FUZZERS)

bench: build
	@./bench/run.sh $(BUILD)/src/app/tpufleet

format:
	@find src fuzz -name '*.h' -o -name '*.cc' | xargs clang-format -i

clean:
	@rm -rf $(BUILD) $(FUZZ_BUILD)
