# Entry points for people and CI. Every target installs what it needs first
# (scripts/setup-deps.sh: Debian packages, idempotent) and builds with CMake + Ninja.
#
#   make demo      build, then run the demo (scripts/demo.sh)
#   make test      build, then run every test (unit, end-to-end, fidelity, include rules)
#   make sanitize  build the unit tests with AddressSanitizer and UBSan (in
#                  SANITIZE_BUILD) and run them (ctest -L unit); any report fails them
#   make fuzz      build the libFuzzer targets (clang, in FUZZ_BUILD) and run each for
#                  FUZZ_SECONDS (fuzz/run.sh); everything they write stays in FUZZ_BUILD
#   make bench     build, then run the benchmarks in bench/ and print the results
#   make format    clang-format every source file in place
# CI (.ci/run) runs `make test`, and `make sanitize` and `make fuzz` beside it.

BUILD ?= build
SANITIZE_BUILD ?= build-sanitize
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZERS ?= spec api credentials holder
JOBS ?= $(shell nproc)
# What the sanitizer runtimes do on a report: stop with a stack, never carry on.
SANITIZER_ENV := ASAN_OPTIONS=halt_on_error=1:detect_leaks=1 \
  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
# Warnings are errors in CI (CI=true), as in STYLE.md rule 15.
WERROR := $(if $(CI),ON,OFF)

.PHONY: deps build test sanitize demo fuzz bench format clean

deps:
	@./scripts/setup-deps.sh

build: deps
	@cmake -S . -B $(BUILD) -G Ninja -DTPUFLEET_WERROR=$(WERROR) >/dev/null
	@ninja -C $(BUILD)

test: build
	@ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

demo: build
	@./scripts/demo.sh $(BUILD)/src/app/tpufleet

# With the default compiler (GCC): the fuzzers' clang 14 lacks some C++20 the tree uses.
sanitize: deps
	@cmake -S . -B $(SANITIZE_BUILD) -G Ninja -DTPUFLEET_SANITIZE=ON >/dev/null
	@ninja -C $(SANITIZE_BUILD) unit_tests
	@$(SANITIZER_ENV) ctest --test-dir $(SANITIZE_BUILD) -L unit --output-on-failure -j $(JOBS)

fuzz: deps
	@CXX=clang++ cmake -S . -B $(FUZZ_BUILD) -G Ninja -DTPUFLEET_FUZZ=ON >/dev/null
	@ninja -C $(FUZZ_BUILD) fuzzers
	@./fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS) $(FUZZERS)

bench: build
	@./bench/run.sh $(BUILD)/src/app/tpufleet

format:
	@find src fuzz -name '*.h' -o -name '*.cc' | xargs clang-format -i

clean:
	@rm -rf $(BUILD) $(SANITIZE_BUILD) $(FUZZ_BUILD)
