#include "anvil/runtime/artifact.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>

#include "anvil/runtime/model.h"

namespace anvil::runtime {

namespace {

uint64_t read_u64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

uint32_t read_u32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

void put(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// safetensors' dtype names.
struct DtypeName {
  const char* name;
  DLDataType dtype;
};
constexpr DtypeName kDtypeNames[] = {
    {"F64", {kDLFloat, 64, 1}},   {"F32", {kDLFloat, 32, 1}}, {"F16", {kDLFloat, 16, 1}},
    {"BF16", {kDLBfloat, 16, 1}}, {"I64", {kDLInt, 64, 1}},   {"I32", {kDLInt, 32, 1}},
    {"I16", {kDLInt, 16, 1}},     {"I8", {kDLInt, 8, 1}},     {"U64", {kDLUInt, 64, 1}},
    {"U32", {kDLUInt, 32, 1}},    {"U16", {kDLUInt, 16, 1}},  {"U8", {kDLUInt, 8, 1}},
    {"BOOL", {6, 8, 1}},  // DLPack 0.6 has no kDLBool; Anvil stores bool as code 6, one byte
};

bool same(DLDataType a, DLDataType b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}

}  // namespace

uint64_t artifact_checksum(const void* data, size_t size) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint64_t h = 0xcbf29ce484222325ull ^ size;
  size_t i = 0;
  for (; i + 8 <= size; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);  // little-endian hosts only (x86-64, aarch64)
    h = (h ^ w) * 0x100000001b3ull;
  }
  if (i < size) {
    uint64_t w = 0;
    std::memcpy(&w, p + i, size - i);
    h = (h ^ w) * 0x100000001b3ull;
  }
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return h;
}

std::string encode_trailer(const ArtifactTrailer& t) {
  std::string out(kArtifactMagic, sizeof kArtifactMagic);
  put(out, t.version, 4);
  put(out, t.flags, 4);
  put(out, t.library_bytes, 8);
  put(out, t.program_bytes, 8);
  put(out, t.params_bytes, 8);
  put(out, t.checksum, 8);
  put(out, artifact_checksum(out.data(), out.size()), 8);
  put(out, 0, 8);
  return out;
}

ArtifactTrailer decode_trailer(std::string_view file, const std::string& origin) {
  auto fail = [&](const std::string& what) {
    throw ArtifactError("'" + origin + "' is not a valid Anvil artifact: " + what);
  };
  if (file.size() < kTrailerBytes)
    fail("it is " + std::to_string(file.size()) + " bytes, shorter than the " +
         std::to_string(kTrailerBytes) + "-byte trailer (a truncated file?)");
  const char* tr = file.data() + file.size() - kTrailerBytes;
  if (std::memcmp(tr, kArtifactMagic, sizeof kArtifactMagic) != 0)
    fail("its last " + std::to_string(kTrailerBytes) +
         " bytes do not start with the magic \"ANVILART\" (not an artifact written by "
         "`anvil compile`, or a truncated one)");
  if (read_u64(tr + 48) != artifact_checksum(tr, 48))
    fail("the trailer's checksum does not match (the file is corrupt)");
  ArtifactTrailer t;
  t.version = read_u32(tr + 8);
  t.flags = read_u32(tr + 12);
  t.library_bytes = read_u64(tr + 16);
  t.program_bytes = read_u64(tr + 24);
  t.params_bytes = read_u64(tr + 32);
  t.checksum = read_u64(tr + 40);
  if (t.version != kArtifactVersion)
    fail("it has format version " + std::to_string(t.version) + ", this runtime reads version " +
         std::to_string(kArtifactVersion) + " (compile the model again with this Anvil)");
  uint64_t body = file.size() - kTrailerBytes;
  if (t.library_bytes > body || t.program_bytes > body || t.params_bytes > body ||
      t.library_bytes + t.program_bytes + t.params_bytes != body)
    fail("its parts (library " + std::to_string(t.library_bytes) + ", program " +
         std::to_string(t.program_bytes) + ", parameters " + std::to_string(t.params_bytes) +
         " bytes) do not add up to the file's " + std::to_string(body) +
         " bytes before the trailer (a truncated or altered file)");
  if (artifact_checksum(file.data(), body) != t.checksum)
    fail("the checksum of its contents does not match the trailer (the file is corrupt)");
  return t;
}

DLDataType parse_dtype(const std::string& text, const std::string& what) {
  for (DLDataType t :
       {DLDataType{kDLFloat, 32, 1}, DLDataType{kDLFloat, 64, 1}, DLDataType{kDLFloat, 16, 1},
        DLDataType{kDLBfloat, 16, 1}, DLDataType{kDLInt, 64, 1}, DLDataType{kDLInt, 32, 1},
        DLDataType{kDLInt, 16, 1}, DLDataType{kDLInt, 8, 1}, DLDataType{kDLUInt, 64, 1},
        DLDataType{kDLUInt, 32, 1}, DLDataType{kDLUInt, 16, 1}, DLDataType{kDLUInt, 8, 1},
        DLDataType{6, 8, 1}})
    if (to_string(t) == text) return t;
  throw ArtifactError(what + ": unknown dtype '" + text + "'");
}

std::string serialize_safetensors(const std::vector<std::pair<std::string, NDArray>>& tensors) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  // safetensors' metadata holds strings only.
  header["__metadata__"] = {{"format", kParamsFormat}, {"version", std::to_string(kParamsVersion)}};
  uint64_t offset = 0;
  for (const auto& [name, array] : tensors) {
    const char* dtype = nullptr;
    for (const DtypeName& d : kDtypeNames)
      if (same(d.dtype, array.dtype())) dtype = d.name;
    if (!dtype)
      throw std::invalid_argument("safetensors: tensor '" + name + "' has dtype " +
                                  to_string(array.dtype()) + ", which safetensors cannot hold");
    header[name] = {{"dtype", dtype},
                    {"shape", array.shape()},
                    {"data_offsets", {offset, offset + array.nbytes()}}};
    offset += array.nbytes();
  }
  std::string json = header.dump();
  json.append((8 - (json.size() % 8)) % 8, ' ');
  std::string out;
  out.reserve(8 + json.size() + offset);
  put(out, json.size(), 8);
  out += json;
  for (const auto& [name, array] : tensors)
    out.append(static_cast<const char*>(array.data()), array.nbytes());
  return out;
}

std::vector<std::pair<std::string, NDArray>> parse_safetensors(std::string_view bytes,
                                                               const std::string& origin) {
  auto fail = [&](const std::string& what) {
    throw ArtifactError("parameters in '" + origin + "': " + what);
  };
  if (bytes.size() < 8) fail("shorter than the 8-byte header length");
  uint64_t n = read_u64(bytes.data());
  if (n > bytes.size() - 8)
    fail("the header length " + std::to_string(n) + " runs past the end (" +
         std::to_string(bytes.size()) + " bytes)");
  std::string_view data = bytes.substr(8 + n);
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(bytes.substr(8, n));
  } catch (const nlohmann::json::exception& e) {
    fail(std::string("the header is not JSON: ") + e.what());
  }
  if (!header.is_object()) fail("the header is not a JSON object");
  // Ordered by offset, so that the result is in the order the tensors were written.
  std::vector<std::pair<uint64_t, std::pair<std::string, NDArray>>> found;
  for (auto& [name, entry] : header.items()) {
    if (name == "__metadata__") continue;
    try {
      std::string dtype_name = entry.at("dtype").get<std::string>();
      std::vector<int64_t> shape = entry.at("shape").get<std::vector<int64_t>>();
      std::vector<uint64_t> offsets = entry.at("data_offsets").get<std::vector<uint64_t>>();
      const DtypeName* d = nullptr;
      for (const DtypeName& x : kDtypeNames)
        if (dtype_name == x.name) d = &x;
      if (!d) fail("tensor '" + name + "' has unknown dtype '" + dtype_name + "'");
      // The size in bytes, saturating, checked against the data before anything is allocated.
      uint64_t nbytes = (d->dtype.bits + 7u) / 8u;
      for (int64_t s : shape) {
        if (s < 0) fail("tensor '" + name + "' has a negative dimension in " + shape_str(shape));
        uint64_t u = static_cast<uint64_t>(s);
        nbytes = u != 0 && nbytes > UINT64_MAX / u ? UINT64_MAX : nbytes * u;
      }
      if (offsets.size() != 2 || offsets[0] > offsets[1] || offsets[1] > data.size() ||
          offsets[1] - offsets[0] != nbytes)
        fail("tensor '" + name + "' (" + dtype_name + shape_str(shape) + ", " +
             (nbytes == UINT64_MAX ? std::string("over 2^64") : std::to_string(nbytes)) +
             " bytes) has data_offsets outside the " + std::to_string(data.size()) +
             " data bytes or of the wrong size");
      NDArray a;
      try {
        a = NDArray::empty(shape, d->dtype);
      } catch (const std::exception& e) {  // an empty tensor with absurd other dimensions
        fail("tensor '" + name + "' (" + dtype_name + shape_str(shape) + "): " + e.what());
      }
      if (a.nbytes() > 0) std::memcpy(a.data(), data.data() + offsets[0], a.nbytes());
      found.push_back({offsets[0], {name, a}});
    } catch (const nlohmann::json::exception& e) {
      fail("tensor '" + name + "': " + e.what());
    }
  }
  std::stable_sort(found.begin(), found.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::pair<std::string, NDArray>> out;
  for (auto& f : found) out.push_back(std::move(f.second));
  return out;
}

std::string params_file_mismatch(std::string_view bytes, uint64_t want_bytes,
                                 uint64_t want_checksum) {
  if (bytes.size() == want_bytes && artifact_checksum(bytes.data(), bytes.size()) == want_checksum)
    return "";
  const std::string sizes =
      std::to_string(bytes.size()) + " bytes, the artifact expects " + std::to_string(want_bytes);
  // A file cut short keeps the start of Anvil's header: its length, then the JSON's '{'.
  const bool shorter = bytes.size() < want_bytes;
  const std::string truncated = "truncated (" + sizes + ")";
  const std::string foreign = "not a parameter file Anvil wrote (";
  if (bytes.size() < 9) return shorter ? truncated : foreign + "shorter than a header)";
  uint64_t n = read_u64(bytes.data());
  if (n > bytes.size() - 8)
    return shorter && bytes[8] == '{' ? truncated
                                      : foreign + "its header length runs past the end)";
  nlohmann::json header = nlohmann::json::parse(bytes.substr(8, n), nullptr, false);
  if (header.is_discarded() || !header.is_object()) return foreign + "its header is not JSON)";
  auto field = [&](const char* key) {
    auto meta = header.find("__metadata__");
    if (meta == header.end() || !meta->is_object()) return std::string();
    auto f = meta->find(key);
    return f != meta->end() && f->is_string() ? f->get<std::string>() : std::string();
  };
  if (field("format") != kParamsFormat)
    return foreign +
           "a safetensors file without Anvil's metadata: another tool's, or an older "
           "Anvil's)";
  std::string version = field("version");
  if (version != std::to_string(kParamsVersion))
    return "of parameter format version '" + version + "'; this runtime reads version " +
           std::to_string(kParamsVersion);
  // Cut short: its tensors' data runs past its end (another model's complete file does not).
  uint64_t data_end = 0;
  for (const auto& [name, entry] : header.items()) {
    if (!entry.is_object() || !entry.contains("data_offsets")) continue;
    const nlohmann::json& o = entry["data_offsets"];
    if (o.is_array() && o.size() == 2 && o[1].is_number_unsigned())
      data_end = std::max(data_end, o[1].get<uint64_t>());
  }
  if (shorter && data_end > bytes.size() - 8 - n) return truncated;
  return "another model's parameters, or modified (" + sizes +
         ", and the checksums differ): the file is from another compilation or corrupt";
}

}  // namespace anvil::runtime
