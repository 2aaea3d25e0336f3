# The two commands a newcomer needs: `make run` and `make test`.
# Each one installs what is missing (scripts/setup.sh), configures and builds first.
#
#   make build            set up and build build/ (Release); binaries in build/bin/
#   make test             ... then run the whole suite through ctest
#   make test SANITIZE=1  the same in build-san/ with ASan + UBSan (clang)
#   make run              the main job (the most complete end-to-end demo so far)
#   make bench            set up, build and run every benchmark
#   make format           clang-format every source file

JOBS ?= $(shell nproc)
ifeq ($(SANITIZE),1)
  BUILD_DIR := build-san
  CMAKE_ARGS := -DCMAKE_BUILD_TYPE=RelWithDebInfo -DANVIL_SANITIZE=ON \
                -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14
else
  BUILD_DIR := build
  CMAKE_ARGS := -DCMAKE_BUILD_TYPE=Release
endif

.PHONY: setup configure build test run bench format clean

setup:
	@./scripts/setup.sh

$(BUILD_DIR)/build.ninja: | setup
	cmake -S . -B $(BUILD_DIR) -G Ninja $(CMAKE_ARGS)

configure: setup $(BUILD_DIR)/build.ninja

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)

# The end-to-end path: the kernel demo, then the built-in ResNet-18 compiled into one artifact,
# run by `anvil run` (median latency) and by the C example that links only the runtime.
run: build
	./$(BUILD_DIR)/bin/anvil_demo
	@mkdir -p $(BUILD_DIR)/demo
	./$(BUILD_DIR)/bin/anvil compile zoo:resnet18 --target llvm -o $(BUILD_DIR)/demo/resnet18.so
	./$(BUILD_DIR)/bin/anvil run $(BUILD_DIR)/demo/resnet18.so --fill-mode random \
	  --output-dir $(BUILD_DIR)/demo --repeat 20
	./$(BUILD_DIR)/bin/run_model $(BUILD_DIR)/demo/resnet18.so

# bench_ops (Anvil against oneDNN, layer by layer) runs with the perturbed shapes too.
bench: build
	@for b in $(BUILD_DIR)/bin/bench_*; do echo "== $$b"; \
	  case $$b in */bench_ops) $$b --perturbed || exit 1;; *) $$b || exit 1;; esac; done

format:
	clang-format-14 -i $$(git ls-files '*.h' '*.cc')

clean:
	rm -rf build build-san
