// LLVMModule: target resolution (host CPU and features, or the ones asked for), the O3 pipeline,
// in-process compilation with ORC LLJIT, and object / shared-library emission.
#include <llvm/ADT/StringMap.h>
#include <llvm/Analysis/TargetTransformInfo.h>
#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/Host.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm/Transforms/Utils/Cloning.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>

#include "anvil/codegen/c/codegen_c.h"
#include "anvil/codegen/llvm/codegen_llvm.h"
#include "anvil/codegen/llvm/ir_gen.h"
#include "anvil/runtime/host_cpu.h"
#include "anvil/runtime/module.h"
#include "anvil/support/error.h"

namespace anvil::codegen {

namespace {

void initialize_llvm() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeAllTargetInfos();
    llvm::InitializeAllTargets();
    llvm::InitializeAllTargetMCs();
    llvm::InitializeAllAsmPrinters();
    llvm::InitializeAllAsmParsers();
  });
}

// What LLVM is asked for: triple, CPU and features, from the target or from the host.
struct ResolvedTarget {
  std::string triple;
  std::string cpu;
  std::vector<std::string> features;
  bool runs_here = false;  // the JIT can run this code in this process
  std::string feature_string() const {
    std::string s;
    for (const std::string& f : features) s += (s.empty() ? "" : ",") + f;
    return s;
  }
};

ResolvedTarget resolve(const Target& target) {
  ANVIL_CHECK(target.kind == Target::Kind::kLLVM, "LLVM code generation: target '", target.str(),
              "' is not an llvm target");
  ResolvedTarget r;
  std::string process = llvm::sys::getProcessTriple();
  r.triple = target.triple.empty() ? process : llvm::Triple::normalize(target.triple);
  llvm::Triple tt(r.triple);
  llvm::Triple host(process);
  bool same_arch = tt.getArch() == host.getArch();
  r.runs_here = same_arch && tt.getOS() == host.getOS();
  if (target.mcpu.empty() || target.mcpu == "native") {
    ANVIL_CHECK(same_arch || target.mcpu.empty(), "target '", target.str(),
                "': -mcpu=native names this machine's CPU, which cannot run ", r.triple);
    if (same_arch) {
      r.cpu = llvm::sys::getHostCPUName().str();
      llvm::StringMap<bool> host_features;
      if (llvm::sys::getHostCPUFeatures(host_features)) {
        for (const auto& f : host_features) {
          r.features.push_back((f.second ? "+" : "-") + f.first().str());
        }
        std::sort(r.features.begin(), r.features.end());
      }
    } else {
      r.cpu = "generic";
    }
  } else {
    r.cpu = target.mcpu;
  }
  // Explicit features come last, so they override the host's.
  r.features.insert(r.features.end(), target.mattr.begin(), target.mattr.end());
  return r;
}

// LLVM's target for `r`, whose CPU it knows; throws anvil::Error naming `target` otherwise.
const llvm::Target* checked_llvm_target(const Target& target, const ResolvedTarget& r) {
  std::string error;
  const llvm::Target* t = llvm::TargetRegistry::lookupTarget(r.triple, error);
  ANVIL_CHECK(t, "target '", target.str(), "': LLVM cannot generate code for '", r.triple, "' (",
              error, ")");
  // Check the CPU first: LLVM only warns about an unknown one and carries on. (LLVM 15 offers no
  // query for features; an unknown one draws LLVM's warning on stderr.)
  std::unique_ptr<llvm::MCSubtargetInfo> sti(t->createMCSubtargetInfo(r.triple, "", ""));
  ANVIL_CHECK(sti && sti->isCPUStringValid(r.cpu), "target '", target.str(), "': '", r.cpu,
              "' is not a CPU LLVM knows for ", r.triple);
  return t;
}

std::unique_ptr<llvm::TargetMachine> make_target_machine(const Target& target,
                                                         const ResolvedTarget& r) {
  const llvm::Target* t = checked_llvm_target(target, r);
  llvm::TargetOptions options;
  std::unique_ptr<llvm::TargetMachine> tm(
      t->createTargetMachine(r.triple, r.cpu, r.feature_string(), options, llvm::Reloc::PIC_,
                             llvm::None, llvm::CodeGenOpt::Aggressive));
  ANVIL_CHECK(tm, "target '", target.str(), "': LLVM could not create a target machine for ",
              r.triple);
  return tm;
}

// The new pass manager's O3 pipeline, with the target's cost model (TTI) so that loops
// vectorize and unroll for the real vector width.
void optimize(llvm::Module& module, llvm::TargetMachine& tm) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = true;
  tuning.SLPVectorization = true;
  tuning.LoopUnrolling = true;
  tuning.LoopInterleaving = true;
  llvm::PassBuilder pb(&tm, tuning);
  fam.registerPass([&] { return tm.getTargetIRAnalysis(); });
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  mpm.run(module, mam);
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

class LLVMModuleImpl final : public LLVMModule {
 public:
  static std::unique_ptr<LLVMModule> build(const std::vector<ir::LoweredFunc>& funcs,
                                           const Target& target);

  AnvilKernel get_function(const std::string& name) override;
  std::string llvm_ir(const std::string& function) const override;
  std::string assembly() const override;
  void save_object(const std::string& path) const override;
  void save_shared_library(const std::string& path) const override;

 private:
  std::string emit_file(llvm::CodeGenFileType type) const;
  void start_jit();

  Target target_;
  ResolvedTarget resolved_;
  std::unique_ptr<llvm::LLVMContext> context_;
  std::unique_ptr<llvm::Module> module_;  // optimized; never given away
  std::unique_ptr<llvm::TargetMachine> tm_;
  std::unique_ptr<llvm::orc::LLJIT> jit_;
  std::vector<std::string> names_;
  std::map<std::string, AnvilKernel> kernels_;
  std::mutex jit_mu_;  // guards starting the JIT
  mutable std::mutex mu_;
  mutable std::map<int, std::string> emitted_;  // by llvm::CodeGenFileType
};

std::unique_ptr<LLVMModule> LLVMModuleImpl::build(const std::vector<ir::LoweredFunc>& funcs,
                                                  const Target& target) {
  initialize_llvm();
  auto m = std::make_unique<LLVMModuleImpl>();
  m->target_ = target;
  m->resolved_ = resolve(target);
  m->tm_ = make_target_machine(target, m->resolved_);
  m->context_ = std::make_unique<llvm::LLVMContext>();
  m->module_ = std::make_unique<llvm::Module>("anvil", *m->context_);
  m->module_->setTargetTriple(m->resolved_.triple);
  m->module_->setDataLayout(m->tm_->createDataLayout());

  llvm_backend::CodegenOptions options{m->resolved_.cpu, m->resolved_.feature_string()};
  if (llvm::Triple(m->resolved_.triple).isX86()) {
    const llvm::MCSubtargetInfo& sti = *m->tm_->getMCSubtargetInfo();
    options.vnni_512 = sti.checkFeatures("+avx512vnni");
    options.vnni_256 = sti.checkFeatures("+avxvnni") || sti.checkFeatures("+avx512vnni,+avx512vl");
    options.pmadd_128 = sti.checkFeatures("+ssse3");
    options.pmadd_256 = sti.checkFeatures("+avx2");
    options.pmadd_512 = sti.checkFeatures("+avx512bw");
    options.minmax_128 = sti.checkFeatures("+sse");
    options.minmax_256 = sti.checkFeatures("+avx");
    options.minmax_512 = sti.checkFeatures("+avx512f");
  }
  llvm_backend::IRGen gen(*m->module_, options);
  for (const ir::LoweredFunc& f : funcs) {
    gen.add_kernel(f);
    m->names_.push_back(f.name);
  }
  gen.add_module_version(runtime::kModuleVersion);

  std::string problems;
  llvm::raw_string_ostream os(problems);
  bool broken = llvm::verifyModule(*m->module_, &os);
  ANVIL_ICHECK(!broken, "the generated LLVM IR does not verify: ", os.str());

  optimize(*m->module_, *m->tm_);
  return m;
}

void LLVMModuleImpl::start_jit() {
  auto fail_on = [](llvm::Error error, const char* what) {
    if (error) ANVIL_FAIL("LLVM JIT: ", what, ": ", llvm::toString(std::move(error)));
  };
  llvm::orc::JITTargetMachineBuilder jtmb{llvm::Triple(resolved_.triple)};
  jtmb.setCPU(resolved_.cpu);
  jtmb.addFeatures(resolved_.features);
  jtmb.setCodeGenOptLevel(llvm::CodeGenOpt::Aggressive);
  auto jit = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(jtmb)).create();
  if (!jit) fail_on(jit.takeError(), "cannot create the JIT");
  jit_ = std::move(*jit);
  // The runtime's entry points by address: they resolve even where the process loaded
  // libanvil_runtime privately (RTLD_LOCAL) or never looked it up by name. Everything else
  // (libm, libc) comes from the process.
  llvm::orc::SymbolMap runtime;
  auto define = [&](const char* name, auto* fn) {
    runtime[jit_->mangleAndIntern(name)] =
        llvm::JITEvaluatedSymbol(llvm::pointerToJITTargetAddress(fn),
                                 llvm::JITSymbolFlags::Exported | llvm::JITSymbolFlags::Callable);
  };
  define("AnvilCheckArgCount", &AnvilCheckArgCount);
  define("AnvilCheckTensor", &AnvilCheckTensor);
  define("AnvilCheckDim", &AnvilCheckDim);
  define("AnvilSetLastError", &AnvilSetLastError);
  define("AnvilParallelFor", &AnvilParallelFor);
  define("AnvilWorkspaceAlloc", &AnvilWorkspaceAlloc);
  define("AnvilWorkspaceFree", &AnvilWorkspaceFree);
  fail_on(jit_->getMainJITDylib().define(llvm::orc::absoluteSymbols(std::move(runtime))),
          "cannot define the runtime's symbols");
  auto process = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
      jit_->getDataLayout().getGlobalPrefix());
  if (!process) fail_on(process.takeError(), "cannot search the process for symbols");
  jit_->getMainJITDylib().addGenerator(std::move(*process));

  // The JIT gets its own copy, in its own context, of the optimized module.
  llvm::SmallVector<char, 0> bitcode;
  llvm::raw_svector_ostream bitcode_os(bitcode);
  llvm::WriteBitcodeToFile(*module_, bitcode_os);
  auto jit_context = std::make_unique<llvm::LLVMContext>();
  auto copy = llvm::parseBitcodeFile(
      llvm::MemoryBufferRef(llvm::StringRef(bitcode.data(), bitcode.size()), "anvil"),
      *jit_context);
  if (!copy) fail_on(copy.takeError(), "cannot read back the module");
  (*copy)->setDataLayout(jit_->getDataLayout());
  fail_on(jit_->addIRModule(llvm::orc::ThreadSafeModule(std::move(*copy), std::move(jit_context))),
          "cannot add the module");
  // Compile everything now: errors surface here, and get_function is a plain lookup.
  for (const std::string& name : names_) {
    auto address = jit_->lookup(name);
    if (!address) fail_on(address.takeError(), "cannot compile the kernels");
    kernels_[name] = address->toPtr<AnvilKernel>();
  }
}

AnvilKernel LLVMModuleImpl::get_function(const std::string& name) {
  ANVIL_CHECK(resolved_.runs_here, "LLVM module for '", resolved_.triple,
              "' cannot run in this process (", llvm::sys::getProcessTriple(),
              "); compile it into an artifact (anvil compile --target) and run that on a "
              "machine of its triple");
  // The JIT compiles the whole module on the first request: a module that is only saved (anvil
  // compile, the tuner's candidates built in child processes) never pays for it.
  std::lock_guard lock(jit_mu_);
  if (!jit_) start_jit();
  auto it = kernels_.find(name);
  if (it == kernels_.end()) {
    std::string known;
    for (const std::string& n : names_) known += (known.empty() ? "" : ", ") + n;
    ANVIL_FAIL("LLVM module: no kernel named '", name, "' (it has: ", known, ")");
  }
  return it->second;
}

std::string LLVMModuleImpl::llvm_ir(const std::string& function) const {
  std::lock_guard lock(mu_);
  std::string text;
  llvm::raw_string_ostream os(text);
  if (function.empty()) {
    module_->print(os, nullptr);
    return os.str();
  }
  const llvm::Function* f = module_->getFunction(function);
  ANVIL_CHECK(f && !f->isDeclaration(), "LLVM module: no kernel named '", function, "'");
  f->print(os);
  // The kernel's outlined parallel loop bodies belong to it.
  std::string prefix = function + ".parallel";
  for (const llvm::Function& g : *module_) {
    if (!g.isDeclaration() && g.getName().startswith(prefix)) g.print(os);
  }
  return os.str();
}

std::string LLVMModuleImpl::emit_file(llvm::CodeGenFileType type) const {
  std::lock_guard lock(mu_);
  auto cached = emitted_.find(static_cast<int>(type));
  if (cached != emitted_.end()) return cached->second;
  // Code generation rewrites the IR it runs on: give it a copy.
  std::unique_ptr<llvm::Module> copy = llvm::CloneModule(*module_);
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::legacy::PassManager pm;
  ANVIL_CHECK(!tm_->addPassesToEmitFile(pm, os, nullptr, type), "LLVM: target '", resolved_.triple,
              "' cannot emit ", type == llvm::CGFT_ObjectFile ? "object files" : "assembly");
  pm.run(*copy);
  return emitted_[static_cast<int>(type)] = std::string(buffer.begin(), buffer.end());
}

std::string LLVMModuleImpl::assembly() const {
  return emit_file(llvm::CGFT_AssemblyFile);
}

void LLVMModuleImpl::save_object(const std::string& path) const {
  std::string object = emit_file(llvm::CGFT_ObjectFile);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  ANVIL_CHECK(out.good(), "save_object: cannot open '", path, "' for writing");
  out.write(object.data(), static_cast<std::streamsize>(object.size()));
  out.close();
  ANVIL_CHECK(out.good(), "save_object: cannot write '", path, "'");
}

void LLVMModuleImpl::save_shared_library(const std::string& path) const {
  std::string tmpl = (std::filesystem::temp_directory_path() / "anvil-kernels-XXXXXX.o").string();
  int fd = mkstemps(tmpl.data(), 2);
  ANVIL_CHECK(fd >= 0, "save_shared_library: cannot create a temporary file ", tmpl);
  close(fd);
  std::string object_path = tmpl;
  struct Remove {
    std::string path;
    ~Remove() { std::remove(path.c_str()); }
  } remove_object{object_path};
  save_object(object_path);

  std::string command = c_compiler() + " -shared -o " + shell_quote(path) + " " +
                        shell_quote(object_path) + " -lm 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  ANVIL_CHECK(pipe, "save_shared_library: cannot run '", command, "'");
  std::string output;
  char chunk[4096];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, pipe)) > 0) output.append(chunk, n);
  int status = pclose(pipe);
  ANVIL_CHECK(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "save_shared_library: '", command, "' failed:\n", output);
}

}  // namespace

std::unique_ptr<LLVMModule> LLVMModule::compile(const std::vector<ir::LoweredFunc>& funcs,
                                                const Target& target) {
  return LLVMModuleImpl::build(funcs, target);
}

TargetCpu target_cpu(const Target& target) {
  initialize_llvm();
  Target llvm_target = target;
  llvm_target.kind = Target::Kind::kLLVM;
  ResolvedTarget r = resolve(llvm_target);
  TargetCpu cpu{r.cpu, {}};
  if (!r.runs_here) return cpu;
  const llvm::Target* t = checked_llvm_target(target, r);
  std::unique_ptr<llvm::MCSubtargetInfo> sti(
      t->createMCSubtargetInfo(r.triple, r.cpu, r.feature_string()));
  // The CPU's implied features and -mattr's, as the code generator sees them.
  for (const std::string& f : runtime::checkable_cpu_features())
    if (sti->checkFeatures("+" + f)) cpu.features.push_back(f);
  // A host CPU newer than this LLVM (Zen 5 for LLVM 15) compiles as "generic" with the host's
  // features; its name then comes from CPUID.
  if (cpu.name == "generic" && (target.mcpu.empty() || target.mcpu == "native"))
    cpu.name = runtime::host_cpu().brand + " (" + runtime::host_cpu().id() + ")";
  return cpu;
}

}  // namespace anvil::codegen
