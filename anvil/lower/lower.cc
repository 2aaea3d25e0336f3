#include "anvil/lower/lower.h"

#include <algorithm>
#include <iostream>

#include "anvil/arith/simplify.h"
#include "anvil/ir/printer.h"
#include "anvil/ir/visitor.h"
#include "anvil/support/error.h"
#include "anvil/transform/flatten_storage.h"
#include "anvil/transform/hoist_guards.h"
#include "anvil/transform/inject_double_buffer.h"
#include "anvil/transform/partition_loops.h"
#include "anvil/transform/remove_no_op.h"
#include "anvil/transform/split_host_device.h"
#include "anvil/transform/storage_rewrite.h"
#include "anvil/transform/unroll_loops.h"
#include "anvil/transform/vectorize_loops.h"

namespace anvil {

namespace {

// Every tensor the loop nest needs from outside must be an argument.
void check_arguments(const te::Schedule& schedule, const std::vector<te::Tensor>& args,
                     const std::string& name) {
  auto is_arg = [&](const te::Tensor& t) {
    return std::any_of(args.begin(), args.end(), [&](const te::Tensor& a) { return a.same_as(t); });
  };
  for (const te::Stage& stage : schedule.stages()) {
    const te::Tensor& t = stage.tensor();
    if (!t.is_compute()) {
      ANVIL_CHECK(is_arg(t), "lower '", name, "': input '", t.name(),
                  "' is read but is not among the arguments");
    }
  }
  for (const te::Tensor& out : schedule.outputs()) {
    ANVIL_CHECK(is_arg(out), "lower '", name, "': output '", out.name(),
                "' is not among the arguments");
  }
  for (size_t i = 0; i < args.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      ANVIL_CHECK(!args[i].same_as(args[j]), "lower '", name, "': argument '", args[i].name(),
                  "' is listed twice");
    }
  }
}

// Device code cannot report an error, so GPU kernels drop run-time checks (the ops that declare
// them, such as gather, still clamp what they read).
class DropAsserts : public ir::IRMutator {
 protected:
  using ir::IRMutator::visit;
  ir::Stmt visit(const ir::AssertStmt* op) override { return mutate(op->body); }
};

}  // namespace

ir::LoweredFunc lower(const te::Schedule& schedule, const std::vector<te::Tensor>& args,
                      const std::string& name, const LowerOptions& options) {
  check_arguments(schedule, args, name);
  std::ostream& out = options.dump_to ? *options.dump_to : std::cerr;
  auto dump = [&](const char* pass, const ir::Stmt& s) {
    for (const std::string& p : options.print_after) {
      if (p == pass || p == "all") {
        out << "// after " << pass << "\n" << s << "\n";
        return;
      }
    }
  };

  if (!options.stop_after.empty()) {
    const char* const passes[] = {"loops",     "flatten",   "simplify", "double_buffer",
                                  "partition", "vectorize", "unroll",   "hoist_guards",
                                  "storage",   "no_op"};
    std::string names;
    for (const char* p : passes) names += (names.empty() ? "" : ", ") + std::string(p);
    ANVIL_CHECK(std::any_of(std::begin(passes), std::end(passes),
                            [&](const char* p) { return options.stop_after == p; }),
                "lower '", name, "': stop_after '", options.stop_after, "' is not a pass (", names,
                ")");
  }

  ir::LoweredFunc f{name, {}, {}};
  for (const te::Tensor& t : args) f.args.push_back(t->buffer);

  // Each step runs its pass and prints the IR after it, unless lowering stopped after an earlier
  // one (options.stop_after).
  ir::Stmt s;
  bool stopped = false;
  auto step = [&](const char* pass, const auto& run) {
    if (stopped) return;
    run();
    dump(pass, s);
    stopped = options.stop_after == pass;
  };
  // clang-format off
  step("loops",     [&] { s = te::schedule_to_loops(schedule); });
  step("flatten",   [&] { f.body = s; f = transform::flatten_storage(f); s = f.body; });
  step("simplify",  [&] { s = arith::simplify(s); });
  step("double_buffer", [&] { s = transform::inject_double_buffer(s); });
  step("partition", [&] { s = transform::partition_loops(s); });
  step("vectorize", [&] { s = transform::vectorize_loops(s); });
  step("unroll",    [&] { s = transform::unroll_loops(s); });
  step("simplify",  [&] { s = arith::simplify(s); });
  step("hoist_guards", [&] { s = transform::hoist_guards(s); });
  step("storage",   [&] { s = transform::storage_rewrite(s); });
  step("no_op",     [&] { s = transform::remove_no_op(s); });
  // clang-format on
  f.body = s;
  return f;
}

ir::DeviceFunc lower_gpu(const te::Schedule& schedule, const std::vector<te::Tensor>& args,
                         const std::string& name, const Target& target,
                         const LowerOptions& options) {
  ANVIL_CHECK(target.is_gpu(), "lower_gpu '", name, "': target '", target.str(),
              "' is not a GPU target");
  ANVIL_CHECK(options.stop_after.empty(), "lower_gpu '", name, "': stop_after applies to lower()");
  ir::LoweredFunc host = lower(schedule, args, name, options);
  host.body = transform::remove_no_op(DropAsserts().mutate(host.body));
  ir::DeviceFunc f = transform::split_host_device(host, target);
  for (const std::string& p : options.print_after) {
    if (p != "split" && p != "all") continue;
    std::ostream& out = options.dump_to ? *options.dump_to : std::cerr;
    for (const ir::DeviceKernel& k : f.kernels) {
      out << "// after split: " << k.name << " grid (" << k.grid[0] << ", " << k.grid[1] << ", "
          << k.grid[2] << ") block (" << k.block[0] << ", " << k.block[1] << ", " << k.block[2]
          << ")\n"
          << k.body << "\n";
    }
  }
  return f;
}

}  // namespace anvil
