// FNV-1a (64-bit) of a byte string and its hex form: the content hashes of report and audit
// provenance (model files, input tensors). Not cryptographic: it identifies, it does not protect.
//
// Example: HexHash(Fnv1a("")) == "fnv1a64:cbf29ce484222325".
#ifndef FPCONFORM_BASE_HASH_H_
#define FPCONFORM_BASE_HASH_H_

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace fpconform {

constexpr uint64_t Fnv1a(std::string_view s, uint64_t h = 0xcbf29ce484222325ULL) {
  for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
  return h;
}
static_assert(Fnv1a("") == 0xcbf29ce484222325ULL);
static_assert(Fnv1a("a") == 0xaf63dc4c8601ec8cULL);  // The published FNV-1a test vector.

inline std::string HexHash(uint64_t h) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "fnv1a64:%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace fpconform

#endif  // FPCONFORM_BASE_HASH_H_
