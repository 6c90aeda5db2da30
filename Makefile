# Entry points for people and CI. Every target installs what it needs first
# (scripts/setup-deps.sh: Debian packages, idempotent) and builds with CMake + Ninja.
#
#   make demo    build, then run the demo (scripts/demo.sh)
#   make test    build, then run every test (unit, end-to-end, include rules)
#   make fuzz    build the fleet-spec fuzzer with clang and run it for FUZZ_SECONDS
#   make bench   build, then run the benchmarks in bench/ and print the results
#   make format  clang-format every source file in place

BUILD ?= build
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
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
	@ninja -C $(FUZZ_BUILD) spec_fuzzer
	@mkdir -p fuzz/corpus-run
	@$(FUZZ_BUILD)/fuzz/spec_fuzzer -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 -dict=fuzz/spec.dict \
	  fuzz/corpus-run fuzz/corpus

bench: build
	@./bench/run.sh $(BUILD)/src/app/tpufleet

format:
	@find src fuzz -name '*.h' -o -name '*.cc' | xargs clang-format -i

clean:
	@rm -rf $(BUILD) $(FUZZ_BUILD)
