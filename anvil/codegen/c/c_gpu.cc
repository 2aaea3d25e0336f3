// GPU targets in the C code generator: device kernels in CUDA C++ or OpenCL C (the statements
// and expressions are the C ones), and the C host entry that checks a GPU function's arguments
// and launches its kernels.
#include <unordered_set>

#include "anvil/arith/modular.h"
#include "anvil/codegen/c/c_emitter.h"
#include "anvil/ir/op.h"

namespace anvil::codegen::c {

using namespace ir;

namespace {

// Per-thread arrays inside a kernel live in registers or the device's local memory; larger ones
// belong in shared memory or a stage of their own.
constexpr int64_t kMaxThreadArrayBytes = 16 * 1024;

int64_t allocation_bytes(const Buffer& b) {
  int64_t bytes = int64_t{b->dtype.bytes()} * b->dtype.lanes();
  for (const Expr& e : b->shape) {
    std::optional<int64_t> n = as_const_int(e);
    if (!n || *n < 0) return -1;
    bytes *= *n;
  }
  return bytes;
}

// The shared allocations of a kernel body, outermost first.
class SharedAllocations : public IRVisitor {
 public:
  using IRVisitor::visit;
  std::vector<const Allocate*> found;
  void visit(const Allocate* op) override {
    if (op->buffer->scope == MemoryScope::kShared) found.push_back(op);
    IRVisitor::visit(op);
  }
};

// How a thread index reads in each language.
std::string thread_index(Dialect dialect, const std::string& tag) {
  int dim = tag.back() - 'x';
  bool block = tag.rfind("blockIdx", 0) == 0;
  if (dialect == Dialect::kCUDA) return tag;
  return std::string(block ? "get_group_id(" : "get_local_id(") + std::to_string(dim) + ")";
}

}  // namespace

std::string helper_prefix(Dialect dialect) {
  switch (dialect) {
    case Dialect::kCUDA:
      return "static __device__ __forceinline__ ";
    case Dialect::kOpenCL:
      return "static inline ";
    case Dialect::kC:
      break;
  }
  return "static inline __attribute__((const)) ";
}

void FunctionEmitter::emit_device_kernel(const DeviceKernel& kernel) {
  bool cuda = module_.dialect == Dialect::kCUDA;
  std::string text;
  out_ = &text;
  line(std::string("/* grid (") + std::to_string(kernel.grid[0]) + ", " +
       std::to_string(kernel.grid[1]) + ", " + std::to_string(kernel.grid[2]) + "), block (" +
       std::to_string(kernel.block[0]) + ", " + std::to_string(kernel.block[1]) + ", " +
       std::to_string(kernel.block[2]) + ") */");

  // Parameters: a pointer per buffer (OpenCL: the buffer and a byte offset, applied below).
  // Buffers it only reads are const (CUDA may read them through the read-only data cache).
  std::unordered_set<const Variable*> stored = stored_buffers(kernel.body);
  std::string params;
  std::vector<std::string> offsets;
  for (const Buffer& b : kernel.params) {
    std::string ty = c_storage_type(b->dtype, kernel_context(func_.name) + "'" + b->name + "'");
    if (!stored.count(b->data.get())) ty = "const " + ty;
    std::string name = names_.fresh(b->name);
    // Device memory and arguments' byte offsets are aligned (AnvilCheckDeviceTensor).
    buffers_[b->data.get()] =
        BufferInfo{name, b->dtype, ty + "*", "argument '" + b->name + "'", true};
    if (!params.empty()) params += ", ";
    if (cuda) {
      params += ty + "* __restrict__ " + name;
      // Said to the compiler too, so that it may merge neighbouring loads into vector loads.
      offsets.push_back(name + " = (" + ty + "*)__builtin_assume_aligned(" + name + ", 16);");
    } else {
      std::string base = names_.fresh(b->name + "_base"),
                  offset = names_.fresh(b->name + "_offset");
      params += "__global " + ty + "* " + base + ", ulong " + offset;
      std::string chars = ty.rfind("const ", 0) == 0 ? "const char" : "char";
      offsets.push_back("__global " + ty + "* restrict " + name + " = (__global " + ty +
                        "*)((__global " + chars + "*)" + base + " + " + offset + ");");
    }
  }
  if (cuda) {
    int64_t threads = kernel.block[0] * kernel.block[1] * kernel.block[2];
    open("extern \"C\" __global__ void __launch_bounds__(" + std::to_string(threads) + ") " +
         func_.name + "(" + params + ")");
  } else {
    open("__kernel __attribute__((reqd_work_group_size(" + std::to_string(kernel.block[0]) + ", " +
         std::to_string(kernel.block[1]) + ", " + std::to_string(kernel.block[2]) + "))) void " +
         func_.name + "(" + params + ")");
  }
  for (const std::string& o : offsets) line(o);
  for (const auto& [var, tag] : kernel.thread_vars) {
    std::string name = names_.fresh(tag);
    std::string ty = c_type(var.type(), "thread index '" + tag + "'");
    line("const " + ty + " " + name + " = (" + ty + ")" + thread_index(module_.dialect, tag) + ";");
    bind(var.get(), name);
  }
  // Shared (OpenCL: local) memory is declared at the kernel's top: OpenCL allows it nowhere else.
  SharedAllocations shared;
  shared.visit(kernel.body);
  for (const Allocate* a : shared.found) {
    const Buffer& b = a->buffer;
    int64_t bytes = allocation_bytes(b);
    if (bytes < 0) fail("shared allocation '", b->name, "' needs a constant size");
    std::string ty = c_storage_type(b->dtype, kernel_context(func_.name) + "'" + b->name + "'");
    std::string name = names_.fresh(b->name);
    int64_t elements = std::max<int64_t>(bytes / b->dtype.bytes(), 1);
    line(std::string(cuda ? "__shared__ " : "__local ") + ty + " " + name + "[" +
         std::to_string(elements) + "] __attribute__((aligned(16)));");
    shared_names_[b->data.get()] = name;
  }
  line("");
  visit(kernel.body);
  close();
  line("");
  module_.functions += text;
}

void FunctionEmitter::visit_device_allocate(const Allocate* op) {
  const Buffer& b = op->buffer;
  std::string ty = c_storage_type(b->dtype, kernel_context(func_.name) + "'" + b->name + "'");
  std::string name;
  if (auto it = shared_names_.find(b->data.get()); it != shared_names_.end()) {
    name = it->second;
  } else {
    int64_t bytes = allocation_bytes(b);
    if (bytes < 0 || bytes > kMaxThreadArrayBytes) {
      fail("allocation '", b->name, "' inside a GPU kernel takes ",
           bytes < 0 ? std::string("a size known only at run time")
                     : std::to_string(bytes) + " bytes",
           " per thread (at most ", kMaxThreadArrayBytes,
           "); compute it in shared memory or as a stage of its own");
    }
    name = names_.fresh(b->name);
    int64_t elements = std::max<int64_t>(bytes / b->dtype.bytes(), 1);
    flush_prelude();
    line(ty + " " + name + "[" + std::to_string(elements) + "];");
  }
  const Variable* data = b->data.get();
  std::optional<BufferInfo> shadowed;
  if (auto it = buffers_.find(data); it != buffers_.end()) shadowed = it->second;
  std::string space =
      b->scope == MemoryScope::kShared && module_.dialect == Dialect::kOpenCL ? "__local " : "";
  buffers_[data] = BufferInfo{name, b->dtype, space + ty + "*", "allocation '" + b->name + "'",
                              b->scope == MemoryScope::kShared};
  visit(op->body);
  if (shadowed) {
    buffers_[data] = *shadowed;
  } else {
    buffers_.erase(data);
  }
}

namespace {

// The vector type of `lanes` elements of scalar type `t` (32-bit), in CUDA and OpenCL alike.
std::string vector_type(DataType t, int lanes) {
  const char* scalar = t.is_float() ? "float" : t.is_int() ? "int" : "uint";
  return scalar + std::to_string(lanes);
}

}  // namespace

std::optional<std::string> FunctionEmitter::vector_address(const BufferInfo& info,
                                                           const Expr& index, int lanes) {
  if (module_.dialect == Dialect::kC || !info.aligned16 || (lanes != 2 && lanes != 4))
    return std::nullopt;
  DataType t = info.dtype;
  if (t.lanes() != 1 || t.bits() != 32 || !(t.is_float() || t.is_int() || t.is_uint()))
    return std::nullopt;
  const Ramp* ramp = index.as<Ramp>();
  if (!ramp || !is_one(ramp->stride)) return std::nullopt;
  // Every variable is unconstrained here: the base is a multiple of the lanes for all of them.
  arith::ModularSet m = arith::modular_set_of(ramp->base);
  if (m.coeff % lanes != 0 || m.base % lanes != 0) return std::nullopt;
  if (is_zero(ramp->base)) return info.name;
  return info.name + " + " + paren(expr(ramp->base), kAdditive + 1);
}

void FunctionEmitter::hoist_vector_load(const std::string& name, DataType t,
                                        const std::string& address) {
  int lanes = t.lanes();
  std::string vt = vector_type(t, lanes), scalar = c_type(t.element_of(), name);
  std::string load = module_.dialect == Dialect::kCUDA
                         ? "*(const " + vt + "*)(" + address + ")"
                         : "vload" + std::to_string(lanes) + "(0, " + address + ")";
  std::string vector = names_.fresh(name + "_" + vt);
  prelude_.push_back("const " + vt + " " + vector + " = " + load + ";");
  std::string fields;
  for (int l = 0; l < lanes; ++l) fields += std::string(l ? ", " : "") + vector + "." + "xyzw"[l];
  prelude_.push_back("const " + scalar + " " + name + "[" + std::to_string(lanes) + "] = {" +
                     fields + "};");
}

std::string FunctionEmitter::vector_store(DataType t, const std::string& address,
                                          const std::string& values) {
  int lanes = t.lanes();
  std::string vt = vector_type(t, lanes), fields;
  for (int l = 0; l < lanes; ++l)
    fields += std::string(l ? ", " : "") + values + "[" + std::to_string(l) + "]";
  if (module_.dialect == Dialect::kCUDA)
    return "*(" + vt + "*)(" + address + ") = make_" + vt + "(" + fields + ");";
  return "vstore" + std::to_string(lanes) + "((" + vt + ")(" + fields + "), 0, " + address + ");";
}

void FunctionEmitter::emit_host_launcher(const DeviceFunc& f, int device_type) {
  device_type_ = device_type;
  std::string text;
  out_ = &text;
  line("/* the host entry of " + c_comment(f.name) + ": " + std::to_string(f.kernels.size()) +
       " kernel launch(es) */");
  open("ANVIL_EXPORT int32_t " + f.name +
       "(const DLTensor* const* args, int32_t nargs, void* ctx)");
  emit_entry_checks();
  line("int32_t status = 0;");

  // Temporaries: device memory for the whole call, passed to kernels as one-dimensional arrays.
  std::unordered_map<const Variable*, std::string> params;
  for (size_t i = 0; i < f.args.size(); ++i)
    params[f.args[i]->data.get()] = "args[" + std::to_string(i) + "]";
  std::vector<std::string> temps;
  for (const Buffer& b : f.temps) {
    int64_t bytes = allocation_bytes(b);
    ANVIL_CHECK(bytes >= 0, kernel_context(f.name), "temporary '", b->name,
                "' needs a constant size");
    std::string name = names_.fresh(b->name);
    module_.runtime.insert("AnvilDeviceWorkspaceAlloc");
    module_.runtime.insert("AnvilDeviceWorkspaceFree");
    line("DLTensor " + name + " = {0};");
    line(name + ".device.device_type = (DLDeviceType)" + std::to_string(device_type) + ";");
    line(name + ".device.device_id = args[0]->device.device_id;");
    line(name + ".data = AnvilDeviceWorkspaceAlloc(ctx, " +
         std::to_string(std::max<int64_t>(bytes, 1)) + "u);");
    line("if (" + name + ".data == NULL) status = -1;");
    params[b->data.get()] = "&" + name;
    temps.push_back(name);
  }
  module_.runtime.insert("AnvilDeviceLaunch");
  for (const DeviceKernel& k : f.kernels) {
    open("if (status == 0)");
    line("static const AnvilLaunchDims dims = {{" + std::to_string(k.grid[0]) + ", " +
         std::to_string(k.grid[1]) + ", " + std::to_string(k.grid[2]) + "}, {" +
         std::to_string(k.block[0]) + ", " + std::to_string(k.block[1]) + ", " +
         std::to_string(k.block[2]) + "}, 0};");
    std::string list;
    for (const Buffer& b : k.params) list += (list.empty() ? "" : ", ") + params.at(b->data.get());
    if (k.params.empty()) list = "NULL";
    line("const DLTensor* const params[] = {" + list + "};");
    line("status = AnvilDeviceLaunch(ctx, " + c_string(k.name) + ", &dims, " +
         std::to_string(k.params.size()) + ", params);");
    close();
  }
  for (auto it = temps.rbegin(); it != temps.rend(); ++it)
    line("if (" + *it + ".data != NULL) AnvilDeviceWorkspaceFree(ctx, " + *it + ".data);");
  line("return status;");
  close();
  line("");
  module_.functions += text;
}

}  // namespace anvil::codegen::c
