# The two commands a newcomer needs: `make run` and `make test`.
# Each one installs what is missing (scripts/setup.sh), configures and builds first.
#
#   make build            set up and build build/ (Release); binaries in build/bin/
#   make test             ... then run the whole suite through ctest
#   make test SANITIZE=1  the suite but the operator and command-line tests, in build-san/ with
#                         ASan + UBSan (clang)
#   make run              the main job: ResNet-18 compiled, run, and timed against ONNX Runtime
#   make bench            set up, build and run every benchmark (anvil bench against ONNX Runtime
#                         and PyTorch; its baselines are installed by scripts/setup_bench.sh)
#   make models           the model suite: 25 torchvision/PyTorch models compiled, checked against
#                         PyTorch and timed against ONNX Runtime (bench/models/)
#   make format           clang-format every source file

JOBS ?= $(shell nproc)
ifeq ($(SANITIZE),1)
  BUILD_DIR := build-san
  CMAKE_ARGS := -DCMAKE_BUILD_TYPE=RelWithDebInfo -DANVIL_SANITIZE=ON \
                -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14
  # The sanitizer suite: tests/CMakeLists.txt leaves out the operator and command-line tests (they
  # check generated code, which is not instrumented, over many shapes and schedules). Of the rest,
  # these run in the Release suite only: the tests that compile whole large models (ResNet-18, the
  # MobileNets, the LSTM, DCGAN, on the CPU, OpenCL and CUDA; every zoo model's kernel plans; the
  # large zoo models' export round trips and every built-in model's save and load) and the ONNX
  # conformance through compiled code (a JIT build for each of 1,072 tests; the interpreted run
  # stays). Small models and unit tests take the same library code. (CMake's regular expressions
  # allow 10 parenthesized groups: add names without new groups.)
  CTEST_ARGS := -E '^(Build\.Model(Resnet18|MobilenetV1|MobilenetV2|LstmLm|LstmLmOnScaledEmbeddings|Dcgan|DcganOnScaledInputs)|GpuBuild\.(Resnet18OnOpenCL|FiveWorkloadsCompileForCuda|DcganOnOpenCL)|PlanKernels\.TasksAreTheTunablePlansOfEveryZooModel|Zoo/ModelExport\.RoundTripsAndCompiles/(resnet18|mobilenet_v1|mobilenet_v2|lstm_lm|dcgan)( .*)?|OnnxConformance\.CompiledPath|Model\.BuiltInModelsRoundTrip)$$'
else
  BUILD_DIR := build
  CMAKE_ARGS := -DCMAKE_BUILD_TYPE=Release
endif

BENCH_DEPS := $(BUILD_DIR)/bench-deps
BENCH_OUT := $(BUILD_DIR)/bench

.PHONY: setup bench-setup configure build test run bench models format clean

setup:
	@./scripts/setup.sh

# The baselines of `anvil bench` (ONNX Runtime from npm into $(BENCH_DEPS), PyTorch, gnuplot):
# make run and make bench need them, make test does not.
bench-setup:
	@./scripts/setup_bench.sh $(BENCH_DEPS)

$(BUILD_DIR)/build.ninja: | setup
	cmake -S . -B $(BUILD_DIR) -G Ninja $(CMAKE_ARGS)

configure: setup $(BUILD_DIR)/build.ninja

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) $(CTEST_ARGS)

# The end-to-end path: the kernel demo, then the built-in ResNet-18 compiled into one artifact,
# run by `anvil run` (top classes, median latency) and by the C example that links only the
# runtime, and timed against ONNX Runtime in one run (anvil bench: blocks of runs alternate).
run: build bench-setup
	./$(BUILD_DIR)/bin/anvil_demo
	@mkdir -p $(BUILD_DIR)/demo
	./$(BUILD_DIR)/bin/anvil compile zoo:resnet18 --target llvm --strict -o $(BUILD_DIR)/demo/resnet18.so
	./$(BUILD_DIR)/bin/anvil run $(BUILD_DIR)/demo/resnet18.so --fill-mode random \
	  --output-dir $(BUILD_DIR)/demo --repeat 20 --top 5
	./$(BUILD_DIR)/bin/run_model $(BUILD_DIR)/demo/resnet18.so
	./$(BUILD_DIR)/bin/anvil bench resnet18 --threads 1 --baselines onnxruntime --strict

# bench_ops (Anvil against oneDNN, layer by layer) runs with the perturbed shapes too, with the
# committed tuning records (bench/records/zoo.json: anvil tune on the five workloads); bench_tuners
# draws the tuner comparison of the paper's figure 12 from its committed records (a copy in
# $(BENCH_OUT)/tuners: configurations missing from them are measured); then the paper's comparison:
# the five workloads, tuned, against ONNX Runtime and PyTorch and their untuned build at 1 and 2
# threads, with the fusion and layout ablation, as a table, $(BENCH_OUT)/summary.json and
# $(BENCH_OUT)/speedup.png.
RECORDS := bench/records/zoo.json
bench: build bench-setup
	@mkdir -p $(BENCH_OUT)/tuners
	@for b in $(BUILD_DIR)/bin/bench_*; do echo "== $$b"; case $$b in \
	  */bench_ops) $$b --perturbed --tuning-records $(RECORDS) || exit 1;; \
	  */bench_tuners) [ -e $(BENCH_OUT)/tuners/resnet18_c6_tuners.json ] || \
	    cp bench/records/resnet18_c6_tuners.json $(BENCH_OUT)/tuners/; \
	    $$b --records $(BENCH_OUT)/tuners/resnet18_c6_tuners.json \
	      --summary-json $(BENCH_OUT)/tuners/summary.json || exit 1;; \
	  *) $$b || exit 1;; esac; done
	./$(BUILD_DIR)/bin/anvil bench --threads 1,2 --ablation --strict --tuning-records $(RECORDS) \
	  --summary-json $(BENCH_OUT)/summary.json --chart $(BENCH_OUT)/speedup.png

# The model suite (issue 26): 25 torchvision and PyTorch models with seeded random weights,
# exported once to ONNX with PyTorch's output on a reference input (bench/models/export.py skips
# those already there), then each compiled with --strict, checked against PyTorch and timed against
# ONNX Runtime at 1 and 2 threads (bench/models/run.py): one table and $(MODELS_OUT)/summary.json.
# A model that fails to export gets its row, with the error, from run.py: hence the '-'.
MODELS_OUT := $(BUILD_DIR)/models
models: build bench-setup
	-/usr/bin/python3 bench/models/export.py $(MODELS_OUT)
	/usr/bin/python3 bench/models/run.py --models-dir $(MODELS_OUT) --anvil $(BUILD_DIR)/bin/anvil \
	  --summary-json $(MODELS_OUT)/summary.json

format:
	clang-format-14 -i $$(git ls-files '*.h' '*.cc')

clean:
	rm -rf build build-san
