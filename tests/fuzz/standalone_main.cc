// The fuzz target's driver where libFuzzer is not linked (the g++ build): runs the target once on
// each file named on the command line, so that the crashes found so far (tests/fuzz/crashes/) are
// replayed by every build. Exits non-zero if a file cannot be read; a crash is a crash.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

// The custom mutator calls libFuzzer's byte mutation; never reached here.
extern "C" size_t LLVMFuzzerMutate(uint8_t*, size_t size, size_t) {
  return size;
}

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::ifstream f(argv[i], std::ios::binary);
    if (!f) {
      std::fprintf(stderr, "%s: cannot open the file\n", argv[i]);
      return 1;
    }
    std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    std::printf("%s: ran\n", argv[i]);
  }
  return 0;
}
