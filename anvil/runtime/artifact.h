// The artifact: one file, model.so, that holds everything a compiled model needs.
//
//   [ shared library: the kernels (an ELF file; dlopen ignores what follows it) ]
//   [ program: the graph executor's program as JSON (graph_executor.h)         ]
//   [ parameters: the constants in safetensors layout (absent when separate)    ]
//   [ trailer: 64 bytes                                                         ]
//
// The header the design asks for is a trailer because ELF owns the first bytes of the file. Its
// fields, little-endian:
//   0  magic "ANVILART"          8 bytes
//   8  format version            u32 (kArtifactVersion)
//   12 flags                     u32 (bit 0: parameters in a separate file)
//   16 library bytes             u64
//   24 program bytes             u64
//   32 parameter bytes           u64 (0 when separate)
//   40 checksum                  u64: artifact_checksum of every byte before the trailer
//   48 trailer checksum          u64: artifact_checksum of trailer bytes 0..47
//   56 reserved                  8 zero bytes
// The loader checks the magic, the version, that the sizes add up to the file size, and both
// checksums before it parses or loads anything. A separate parameter file (model.safetensors
// beside model.so) is named in the program JSON with its size and checksum, checked the same way.
//
// safetensors: u64 header length N, N bytes of JSON {"name": {"dtype": "F32", "shape": [..],
// "data_offsets": [begin, end]}, ...} (padded with spaces so the data starts 8-byte aligned), then
// the data, little-endian, row-major.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "anvil/runtime/ndarray.h"

namespace anvil::runtime {

constexpr char kArtifactMagic[8] = {'A', 'N', 'V', 'I', 'L', 'A', 'R', 'T'};
// 2: kernels take arguments aligned to ANVIL_ARG_ALIGNMENT (16 bytes), where 1's assumed 64.
constexpr uint32_t kArtifactVersion = 2;
constexpr size_t kTrailerBytes = 64;
constexpr uint32_t kSeparateParams = 1;
// The safetensors metadata Anvil writes: {"format": "anvil-params", "version": "1"}.
constexpr char kParamsFormat[] = "anvil-params";
constexpr uint32_t kParamsVersion = 1;

struct ArtifactTrailer {
  uint32_t version = kArtifactVersion;
  uint32_t flags = 0;
  uint64_t library_bytes = 0, program_bytes = 0, params_bytes = 0;
  uint64_t checksum = 0;
};

// A 64-bit checksum: over the bytes as little-endian 64-bit words (the last one zero-padded),
// h = (h ^ word) * 0x100000001b3 from h = 0xcbf29ce484222325 ^ size, then a final mix. Each step
// is a bijection of h, so any change confined to one word always changes the result.
uint64_t artifact_checksum(const void* data, size_t size);

// The 64 trailer bytes for `t` (its checksum field as given).
std::string encode_trailer(const ArtifactTrailer& t);
// The trailer of `file` (a whole artifact), checked against the file's size and checksums;
// throws ArtifactError naming `origin` and what is wrong.
ArtifactTrailer decode_trailer(std::string_view file, const std::string& origin);

// safetensors, with Anvil's metadata (kParamsFormat, kParamsVersion). Names keep the given order;
// dtypes: F64 F32 F16 BF16 I64 I32 I16 I8 U64 U32 U16 U8 BOOL.
std::string serialize_safetensors(const std::vector<std::pair<std::string, NDArray>>& tensors);
// Throws ArtifactError naming `origin` and the tensor for a malformed file (bad header length,
// JSON that does not parse, unknown dtype, offsets out of range or inconsistent with the shape).
std::vector<std::pair<std::string, NDArray>> parse_safetensors(std::string_view bytes,
                                                               const std::string& origin);
// Why `bytes`, a separate parameter file, is not the one an artifact names (`want_bytes` and
// `want_checksum`): "truncated (...)", "not a parameter file Anvil wrote (...)", "of parameter
// format version ...", or another model's parameters. Empty when it is the one.
std::string params_file_mismatch(std::string_view bytes, uint64_t want_bytes,
                                 uint64_t want_checksum);

// "float32" <-> DLDataType, as runtime::to_string prints it; nullopt-like failure: throws
// ArtifactError naming `what`.
DLDataType parse_dtype(const std::string& text, const std::string& what);

}  // namespace anvil::runtime
