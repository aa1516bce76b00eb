#include "cases/tensor_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "base/testing/temp_dir.h"
#include "formats/format_spec.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace fpconform {
namespace {

using Json = nlohmann::json;

// The golden folder: FPCONFORM_TENSOR_GOLDEN_DIR (the live test points it at freshly generated
// files) or the checked-in cases/testdata/tensors.
std::string GoldenDir() {
  const char* env = std::getenv("FPCONFORM_TENSOR_GOLDEN_DIR");
  return env != nullptr && *env != '\0' ? std::string(env) : std::string(FPCONFORM_TENSOR_TESTDATA);
}
std::string BrokenDir() { return std::string(FPCONFORM_TENSOR_TESTDATA) + "/broken"; }

// A test file and a piece of the message reading it must give.
struct FileCase {
  const char* file;
  const char* fragment;
};

// `t` is an InvalidArgument error whose message starts with `prefix` and holds `fragment`.
void ExpectInvalid(const absl::StatusOr<Tensor>& t, const std::string& prefix,
                   const char* fragment) {
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument) << t.status();
  EXPECT_TRUE(std::string(t.status().message()).starts_with(prefix)) << t.status();
  EXPECT_NE(t.status().message().find(fragment), std::string::npos) << t.status();
}

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Hex(const std::vector<uint8_t>& data) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (uint8_t b : data) {
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 15]);
  }
  return out;
}

bool HasNote(const Tensor& t, std::string_view fragment) {
  for (const std::string& n : t.notes) {
    if (n.find(fragment) != std::string::npos) return true;
  }
  return false;
}

Json LoadManifest() {
  const std::string text = ReadBytes(GoldenDir() + "/manifest.json");
  Json m = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  return m;
}

TensorReadOptions OptionsOf(const Json& e) {
  TensorReadOptions o;
  o.dtype = e.value("read_dtype", "");
  if (e.contains("read_shape")) o.shape = e["read_shape"].get<std::vector<int64_t>>();
  return o;
}

void ExpectSameTensor(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.dtype, b.dtype);
  EXPECT_EQ(a.format, b.format);
  EXPECT_EQ(a.element_bytes, b.element_bytes);
  EXPECT_EQ(a.shape, b.shape);
  EXPECT_TRUE(a.data == b.data) << Hex(a.data) << "\n" << Hex(b.data);
}

// ---- Golden files made by numpy, ml_dtypes and safetensors (make_golden.py). ----

TEST(GoldenFiles, EveryManifestEntryReadsAsExpected) {
  const Json m = LoadManifest();
  ASSERT_TRUE(m.is_object() && m.contains("entries")) << GoldenDir() << "/manifest.json";
  const Json& entries = m["entries"];
  ASSERT_GE(entries.size(), 80u);
  int npy = 0, st = 0, raw = 0, canonical = 0;
  for (const Json& e : entries) {
    const std::string file = e["file"];
    const std::string tensor = e["tensor"];
    SCOPED_TRACE(file + (tensor.empty() ? "" : ":" + tensor) + " (" +
                 e["made_by"].get<std::string>() + ")");
    const std::string path = GoldenDir() + "/" + file;
    const std::string spec = tensor.empty() ? path : path + ":" + tensor;
    const TensorReadOptions o = OptionsOf(e);
    absl::StatusOr<Tensor> t = ReadTensor(spec, o);
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_EQ(t->dtype, e["dtype"].get<std::string>());
    EXPECT_EQ(t->shape, e["shape"].get<std::vector<int64_t>>());
    EXPECT_EQ(Hex(t->data), e["hex"].get<std::string>());
    EXPECT_EQ(t->element_bytes, *TensorDtypeBytes(t->dtype));
    EXPECT_EQ(t->format, FindFormat(t->dtype));
    EXPECT_EQ(static_cast<size_t>(t->size()) * static_cast<size_t>(t->element_bytes),
              t->data.size());
    // Expected provenance entries, in order.
    size_t at = 0;
    for (const Json& kv : e["metadata"]) {
      const std::pair<std::string, std::string> want(kv[0], kv[1]);
      while (at < t->metadata.size() && t->metadata[at] != want) ++at;
      EXPECT_LT(at, t->metadata.size()) << "metadata " << want.first << "=" << want.second;
    }
    const std::string note = e["note"];
    if (!note.empty()) {
      EXPECT_TRUE(HasNote(*t, note)) << note;
    }
    const std::string bytes = ReadBytes(path);

    if (file.ends_with(".npy")) {
      ++npy;
      absl::StatusOr<Tensor> p = ParseNpy(bytes, path, o);
      ASSERT_TRUE(p.ok()) << p.status();
      ExpectSameTensor(*p, *t);
      EXPECT_EQ(p->metadata, t->metadata);
      // Round trip through the writer (its descrs need the dtype back for ml_dtypes formats).
      const std::string written = NpyBytes(*t);
      absl::StatusOr<Tensor> back = ParseNpy(written, "written.npy", {.dtype = t->dtype});
      ASSERT_TRUE(back.ok()) << back.status();
      ExpectSameTensor(*back, *t);
      if (e["canonical"].get<bool>()) {
        ++canonical;
        EXPECT_TRUE(written == bytes) << "NpyBytes differs from np.save's file";
      }
    } else if (file.ends_with(".safetensors")) {
      ++st;
      absl::StatusOr<Tensor> p = ParseSafetensors(bytes, path, tensor, o);
      ASSERT_TRUE(p.ok()) << p.status();
      ExpectSameTensor(*p, *t);
      absl::StatusOr<std::vector<std::string>> names = SafetensorsNames(bytes, path);
      ASSERT_TRUE(names.ok()) << names.status();
      std::vector<std::pair<std::string, std::string>> md;
      for (const auto& [k, v] : t->metadata) {
        if (k.starts_with("metadata.")) md.emplace_back(k.substr(9), v);
      }
      const std::string name = tensor.empty() ? (*names)[0] : tensor;
      absl::StatusOr<std::string> written = SafetensorsBytes({{name, &*t}}, md);
      ASSERT_TRUE(written.ok()) << written.status();
      absl::StatusOr<Tensor> back = ParseSafetensors(*written, "written.safetensors", "");
      ASSERT_TRUE(back.ok()) << back.status();
      ExpectSameTensor(*back, *t);
      if (e["canonical"].get<bool>()) {
        ++canonical;
        EXPECT_TRUE(*written == bytes) << "SafetensorsBytes differs from save_file's file";
      }
    } else {
      ++raw;
      absl::StatusOr<Tensor> p = ParseRaw(bytes, path, o);
      ASSERT_TRUE(p.ok()) << p.status();
      ExpectSameTensor(*p, *t);
    }
  }
  EXPECT_GE(npy, 50);
  EXPECT_GE(st, 15);
  EXPECT_GE(raw, 1);
  EXPECT_GE(canonical, 25);
}

// The multi-tensor file, rewritten in file order, is byte-identical to the reference writer's.
TEST(GoldenFiles, MultiTensorFileRewritesIdentically) {
  const std::string path = GoldenDir() + "/st_multi.safetensors";
  const std::string bytes = ReadBytes(path);
  absl::StatusOr<std::vector<std::string>> names = SafetensorsNames(bytes, path);
  ASSERT_TRUE(names.ok()) << names.status();
  EXPECT_EQ(names->size(), 4u);
  std::vector<Tensor> tensors;
  for (const std::string& n : *names) {
    absl::StatusOr<Tensor> t = ParseSafetensors(bytes, path, n);
    ASSERT_TRUE(t.ok()) << t.status();
    tensors.push_back(*t);
  }
  std::vector<std::pair<std::string, const Tensor*>> list;
  for (size_t i = 0; i < tensors.size(); ++i) list.emplace_back((*names)[i], &tensors[i]);
  absl::StatusOr<std::string> written = SafetensorsBytes(list, {{"producer", "make_golden.py"}});
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_TRUE(*written == bytes);
}

TEST(GoldenFiles, VoidAndOneByteFloatDescrsNeedTheDtype) {
  const FileCase cases[] = {
      {"npy_ml_bfloat16.npy", "descr '<V2' does not say which format the data holds: "},
      {"npy_ml_bfloat16.npy", "give the dtype (--a-dtype bfloat16, "},
      {"npy_ml_bfloat16_pipeV2.npy", "descr '|V2' does not say which format"},
      {"npy_ml_float8_e4m3fn.npy", "float8_e4m3fn (OCP, max 448) is not NKI's float8_e4m3"},
      {"npy_ml_float8_e4m3.npy", "descr '<V1' does not say which format"},
      {"npy_ml_float8_e4m3fn_pipeV1.npy", "descr '|V1' does not say which format"},
      {"npy_ml_float8_e5m2.npy", "'<f1' is what numpy writes for ml_dtypes float8_e5m2"},
  };
  for (const FileCase& c : cases) {
    SCOPED_TRACE(c.file);
    const std::string path = GoldenDir() + "/" + c.file;
    ExpectInvalid(ReadTensor(path, {.option_name = "--a-dtype"}), path + ": header: ", c.fragment);
  }
}

TEST(GoldenFiles, DtypeRulesForNamedDescrs) {
  const std::string dir = GoldenDir();
  // A named descr with another dtype: refused.
  absl::StatusOr<Tensor> t = ReadTensor(dir + "/npy_f4_le.npy", {.dtype = "bfloat16"});
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("descr '<f4' is float32, but --dtype says bfloat16"),
            std::string::npos)
      << t.status();
  // Same dtype: fine, no note.
  t = ReadTensor(dir + "/npy_f4_le.npy", {.dtype = "float32"});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_TRUE(t->notes.empty());
  // A void descr of another width: refused.
  t = ReadTensor(dir + "/npy_ml_bfloat16.npy", {.dtype = "float8_e4m3fn"});
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("holds 2-byte elements, but --dtype float8_e4m3fn is 1"),
            std::string::npos)
      << t.status();
  // A signed integer descr is not a bit view.
  t = ReadTensor(dir + "/npy_i2_le.npy", {.dtype = "bfloat16"});
  ASSERT_FALSE(t.ok());
  // An unknown requested dtype.
  t = ReadTensor(dir + "/npy_ml_bfloat16.npy", {.dtype = "bf16", .option_name = "--b-dtype"});
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("--b-dtype bf16: unknown dtype"), std::string::npos)
      << t.status();
  // safetensors F8_E4M3 is float8_e4m3fn; NKI's float8_e4m3 is a different format.
  t = ReadTensor(dir + "/st_F8_E4M3.safetensors", {.dtype = "float8_e4m3"});
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("F8_E4M3 is OCP float8_e4m3fn, max 448"), std::string::npos)
      << t.status();
  // U8 bits read as a 1-byte float, with a note.
  t = ReadTensor(dir + "/st_U8.safetensors", {.dtype = "float8_e4m3"});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->dtype, "float8_e4m3");
  EXPECT_TRUE(HasNote(*t, "dtype U8 holds unsigned integers")) << t->notes.size();
  // A requested shape that differs from the file's.
  t = ReadTensor(dir + "/npy_f4_le.npy", {.shape = {3, 2}, .option_name = "--a-dtype"});
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("the file says shape [2, 3], but --a-shape says [3, 2]"),
            std::string::npos)
      << t.status();
}

TEST(GoldenFiles, Names) {
  const std::string dir = GoldenDir();
  absl::StatusOr<Tensor> t = ReadTensor(dir + "/st_multi.safetensors");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("holds 4 tensors: name one as"), std::string::npos)
      << t.status();
  EXPECT_NE(t.status().message().find("'w'"), std::string::npos);
  t = ReadTensor(dir + "/st_multi.safetensors:nope");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(t.status().message().find("no tensor 'nope'"), std::string::npos);
  t = ReadTensor(dir + "/st_multi.safetensors:w");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->source, dir + "/st_multi.safetensors:w");
  t = ReadTensor(dir + "/npy_f4_le.npy:w");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("only for .safetensors files"), std::string::npos);
  t = ReadTensor(dir + "/no_such_file.npy");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kNotFound);
  t = ReadTensor(dir);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("not a regular file"), std::string::npos);
  // A raw file: no shape, or the wrong size.
  t = ReadTensor(dir + "/raw_bf16_4x6.bin");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("for a raw dump give the dtype and shape"), std::string::npos)
      << t.status();
  t = ReadTensor(dir + "/raw_bf16_4x6.bin", {.dtype = "bfloat16", .shape = {4, 5}});
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("the file has 48 bytes, but --shape [4, 5] x 2 bytes of "
                                      "bfloat16 is 40 bytes"),
            std::string::npos)
      << t.status();
  t = ReadTensor(dir + "/raw_bf16_4x6.bin", {.dtype = "bfloat16", .shape = {int64_t{1} << 60}});
  ASSERT_FALSE(t.ok());
  t = ReadTensor(dir + "/raw_bf16_4x6.bin", {.shape = {4, 6}});
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("needs its dtype"), std::string::npos) << t.status();
}

// A path that itself contains ':' is read as a whole path first.
TEST(GoldenFiles, PathWithColon) {
  TempDir dir("tensor_file_test");
  const std::string bytes = ReadBytes(GoldenDir() + "/npy_f4_le.npy");
  const std::string path = dir / "a:b.npy";
  std::ofstream(path, std::ios::binary) << bytes;
  absl::StatusOr<Tensor> t = ReadTensor(path);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->dtype, "float32");
}

// ---- Hand-made broken files (make_broken.py): each gives its message, never a crash. ----

TEST(BrokenFiles, EachNamesWhatIsWrong) {
  const FileCase cases[] = {
      {"npy_bad_magic.npy", "byte 0: expected the .npy magic"},
      {"npy_bad_version.npy", "byte 6: .npy format version 4.0, expected 1.0, 2.0 or 3.0"},
      {"npy_truncated_header.npy", "byte 8: header length 118 runs past the end of the file"},
      {"npy_header_past_end.npy", "header length 4000 runs past the end of the file"},
      {"npy_unknown_descr.npy", "header: descr '<q7' is not supported"},
      {"npy_bool.npy", "descr '|b1' (bool) is not supported"},
      {"npy_uint64.npy", "descr '<u8' (uint64) is not supported"},
      {"npy_2p60.npy",
       "shape [1152921504606846976] x 4 bytes of float32 is 4611686018427387904 "
       "bytes, but the file has only 16 bytes after the header"},
      {"npy_overflow.npy", "overflows 2^63 bytes"},
      {"npy_data_truncated.npy", "is 24 bytes, but the file has only 20 bytes after the header"},
      {"npy_extra_key.npy", "unexpected key 'extra'"},
      {"npy_missing_shape.npy", "missing key 'shape'"},
      {"npy_negative_shape.npy", "negative number"},
      {"npy_structured.npy", "structured dtype"},
      {"npy_garbage.npy", "expected ',' or '}'"},
      {"npy_rank65.npy", "more than 64 dimensions"},
      {"npy_shape_int.npy", "shape: expected a tuple"},
      {"npy_dup_key.npy", "key 'descr' appears twice"},
      {"npy_empty.npy", "found an empty file"},
      {"st_short.safetensors", "5 bytes, too short for the 8-byte safetensors header length"},
      {"st_header_past_end.safetensors", "byte 0: header length 200 runs past the end"},
      {"st_truncated_header.safetensors", "runs past the end of the file (30 bytes"},
      {"st_header_too_big.safetensors", "more than the 100000000-byte limit"},
      {"st_bad_json.safetensors", "header: invalid JSON: "},
      {"st_overlap.safetensors", "tensor 'b': data_offsets [4, 12] begin at 4, expected 8"},
      {"st_overlap.safetensors", "an overlap"},
      {"st_gap.safetensors", "tensor 'b': data_offsets [12, 20] begin at 12, expected 8"},
      {"st_gap.safetensors", "a gap"},
      {"st_size_mismatch.safetensors",
       "header: tensor 'w': data_offsets [0, 10] is 10 bytes, expected 12 (shape [2, 3] x 2 "
       "bytes of BF16)"},
      {"st_not_covered.safetensors", "the file is not fully covered"},
      {"st_data_truncated.safetensors", "the file is truncated"},
      {"st_2p60.safetensors", "overflows"},
      {"st_2p60_u8.safetensors", "the file is truncated"},
      {"st_bool.safetensors", "dtype BOOL is not supported"},
      {"st_unknown_dtype.safetensors", "unknown dtype 'F7'"},
      {"st_dup_key.safetensors", "key 'x' appears twice"},
      {"st_deep.safetensors", "nested deeper than 128 levels"},
      {"st_meta_number.safetensors", "__metadata__['k']: expected a string"},
      {"st_float_offset.safetensors", "data_offsets[1]: expected a non-negative integer"},
      {"st_huge_number.safetensors", "shape[0]: expected a non-negative integer"},
      {"st_reversed_offsets.safetensors", "end before they begin"},
      {"st_not_object.safetensors", "expected a JSON object"},
      {"st_missing_field.safetensors", "missing field 'data_offsets'"},
      {"st_nul_padding.safetensors", "header: invalid JSON"},
      {"st_bad_utf8.safetensors", "header: invalid JSON"},
  };
  for (const FileCase& c : cases) {
    SCOPED_TRACE(c.file);
    const std::string path = BrokenDir() + "/" + c.file;
    const std::string bytes = ReadBytes(path);
    const bool npy = std::string_view(c.file).starts_with("npy_");
    ExpectInvalid(npy ? ParseNpy(bytes, path) : ParseSafetensors(bytes, path, ""), path,
                  c.fragment);
    // The file reader refuses it too (with this message, or as neither format).
    absl::StatusOr<Tensor> f = ReadTensor(path);
    EXPECT_FALSE(f.ok());
    // (A BOOL tensor is valid safetensors: only reading it is refused.)
    if (!npy && std::string_view(c.file) != "st_bool.safetensors") {
      EXPECT_FALSE(SafetensorsNames(bytes, path).ok());
    }
  }
}

// Every prefix of every golden file fails cleanly (a truncated download).
TEST(BrokenFiles, EveryTruncationOfGoldenFilesFailsCleanly) {
  for (const char* file : {"npy_f4_fortran_v2.npy", "npy_ml_bfloat16.npy", "st_multi.safetensors",
                           "st_misaligned.safetensors"}) {
    const std::string bytes = ReadBytes(GoldenDir() + "/" + file);
    const bool npy = std::string_view(file).ends_with(".npy");
    for (size_t n = 0; n < bytes.size(); ++n) {
      const std::string_view cut(bytes.data(), n);
      absl::StatusOr<Tensor> t =
          npy ? ParseNpy(cut, file, {.dtype = "bfloat16"}) : ParseSafetensors(cut, file, "b");
      EXPECT_FALSE(t.ok()) << file << " cut at " << n;
    }
  }
}

// safetensors JSON edges (nlohmann's limits, decided in tensor_file.h).
std::string St(const std::string& header, size_t data_bytes) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i)
    out[static_cast<size_t>(i)] = static_cast<char>((header.size() >> (8 * i)) & 0xFF);
  return out + header + std::string(data_bytes, '\x01');
}

TEST(BrokenFiles, SafetensorsJsonEdges) {
  struct Case {
    const char* shape;
    const char* fragment;  // nullptr: reads.
  } cases[] = {
      {"[2]", nullptr},
      {"[-0]", "expected a non-negative integer"},
      {"[2.0]", "expected a non-negative integer"},
      {"[1e3]", "expected a non-negative integer"},
      {"[18446744073709551616]", "expected a non-negative integer"},
      {"[9223372036854775808]", "larger than 2^63-1"},
      {"[-1]", "expected a non-negative integer"},
      {"2", "shape: expected an array"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.shape);
    const std::string h =
        std::string("{\"x\":{\"dtype\":\"U8\",\"shape\":") + c.shape + ",\"data_offsets\":[0,2]}}";
    absl::StatusOr<Tensor> t = ParseSafetensors(St(h, 2), "j.safetensors", "");
    if (c.fragment == nullptr) {
      EXPECT_TRUE(t.ok()) << t.status();
    } else {
      ASSERT_FALSE(t.ok());
      EXPECT_NE(t.status().message().find(c.fragment), std::string::npos) << t.status();
    }
  }
  // As in the reference: unknown fields ignored, null __metadata__, other dtypes' tensors fine.
  const std::string h =
      "{\"__metadata__\":null,\"m\":{\"dtype\":\"BOOL\",\"shape\":[3],\"data_offsets\":[0,3]},"
      "\"x\":{\"dtype\":\"I16\",\"shape\":[1],\"data_offsets\":[3,5],\"extra\":{\"a\":[1]}}}";
  absl::StatusOr<Tensor> t = ParseSafetensors(St(h, 5), "j.safetensors", "x");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->dtype, "int16");
  EXPECT_EQ(t->Bits(0), 0x0101u);
  t = ParseSafetensors(St(h, 5), "j.safetensors", "m");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("j.safetensors:m: header: dtype BOOL is not supported"),
            std::string::npos)
      << t.status();
  // Sub-byte dtypes of the reference: sizes in bits.
  t = ParseSafetensors(St("{\"f\":{\"dtype\":\"F4\",\"shape\":[3],\"data_offsets\":[0,2]}}", 2),
                       "j.safetensors", "f");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("not a whole number of bytes"), std::string::npos)
      << t.status();
  // Trailing bytes after .npy data: read, with a note.
  std::string npy = ReadBytes(GoldenDir() + "/npy_f4_le.npy") + "xyz";
  t = ParseNpy(npy, "t.npy");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_TRUE(HasNote(*t, "3 bytes after the array's data"));
}

// ---- Writers. ----

TEST(Writers, WriteAndReadBack) {
  TempDir dir("tensor_file_test");
  absl::StatusOr<Tensor> t = MakeTensor("bfloat16", {2, 3});
  ASSERT_TRUE(t.ok()) << t.status();
  for (int64_t i = 0; i < t->size(); ++i) t->SetBits(i, 0x3F80 + static_cast<uint64_t>(i));
  const std::string npy = dir / "a.npy";
  ASSERT_TRUE(WriteNpy(*t, npy).ok());
  absl::StatusOr<Tensor> back = ReadTensor(npy, {.dtype = "bfloat16"});
  ASSERT_TRUE(back.ok()) << back.status();
  ExpectSameTensor(*back, *t);
  EXPECT_EQ(back->Bits(0), 0x3F80u);
  EXPECT_EQ(back->Bits(5), 0x3F85u);

  absl::StatusOr<Tensor> u = MakeTensor("int64", {});
  ASSERT_TRUE(u.ok());
  u->SetBits(0, 0x8000000000000001ull);
  const std::string st = dir / "b.safetensors";
  ASSERT_TRUE(WriteSafetensors({{"a", &*t}, {"u", &*u}}, {{"k", "v"}, {"a", "b"}}, st).ok());
  back = ReadTensor(st + ":u");
  ASSERT_TRUE(back.ok()) << back.status();
  ExpectSameTensor(*back, *u);
  const std::vector<std::pair<std::string, std::string>> md = {{"format", "safetensors"},
                                                               {"tensor", "u"},
                                                               {"dtype", "I64"},
                                                               {"metadata.k", "v"},
                                                               {"metadata.a", "b"}};
  EXPECT_EQ(back->metadata, md);
  const std::string bytes = ReadBytes(st);
  EXPECT_EQ((bytes.size() - 8 - 12 - 8) % 8, 0u);  // Header padded to a multiple of 8.
  EXPECT_EQ(bytes.find("{\"__metadata__\":{\"k\":\"v\",\"a\":\"b\"},\"a\":{\"dtype\":\"BF16\""),
            8u);
}

TEST(Writers, RefuseWhatTheFormatCannotHold) {
  TempDir dir("tensor_file_test");
  absl::StatusOr<Tensor> t = MakeTensor("float8_e4m3", {4});
  ASSERT_TRUE(t.ok());
  absl::StatusOr<std::string> s = SafetensorsBytes({{"x", &*t}});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("dtype float8_e4m3 has no safetensors dtype"),
            std::string::npos)
      << s.status();
  EXPECT_FALSE(SafetensorsBytes({{"x", &*t}, {"x", &*t}}).ok());
  EXPECT_FALSE(SafetensorsBytes({{"__metadata__", &*t}}).ok());
  EXPECT_FALSE(SafetensorsBytes({{"\xff", &*t}}).ok());
  // A .npy writes every dtype (NKI's float8_e4m3 as '<V1', as numpy does for ml_dtypes).
  EXPECT_NE(NpyBytes(*t).find("'descr': '<V1'"), std::string::npos);
  Tensor bad = *t;
  bad.data.pop_back();
  const std::string path = dir / "bad.npy";
  EXPECT_FALSE(WriteNpy(bad, path).ok());
  struct stat sb;
  EXPECT_NE(::stat(path.c_str(), &sb), 0);  // No partial file.
  EXPECT_FALSE(WriteNpy(*t, dir / "no/such/dir/x.npy").ok());
  // The temporary sibling is gone after a successful write.
  ASSERT_TRUE(WriteNpy(*t, path).ok());
  EXPECT_EQ(std::system(("test $(ls '" + dir.path().string() + "' | wc -l) = 1").c_str()), 0);
}

TEST(Writers, NpyDescrsMatchNumpy) {
  struct Case {
    const char* dtype;
    const char* descr;
  } cases[] = {{"float64", "<f8"},        {"float32", "<f4"},         {"float16", "<f2"},
               {"bfloat16", "<V2"},       {"float8_e4m3fn", "<V1"},   {"float8_e5m2", "<f1"},
               {"float8_e8m0fnu", "<V1"}, {"float8_e4m3fnuz", "<V1"}, {"int8", "|i1"},
               {"uint8", "|u1"},          {"int16", "<i2"},           {"uint16", "<u2"},
               {"int32", "<i4"},          {"uint32", "<u4"},          {"int64", "<i8"},
               {"tfloat32", "|V4"}};
  for (const Case& c : cases) {
    absl::StatusOr<Tensor> t = MakeTensor(c.dtype, {3});
    ASSERT_TRUE(t.ok()) << c.dtype;
    const std::string b = NpyBytes(*t);
    EXPECT_NE(b.find(std::string("'descr': '") + c.descr + "'"), std::string::npos) << c.dtype;
    EXPECT_EQ((b.size() - 3 * static_cast<size_t>(t->element_bytes)) % 64, 0u);
    absl::StatusOr<Tensor> back = ParseNpy(b, "x.npy", {.dtype = c.dtype});
    ASSERT_TRUE(back.ok()) << back.status();
    ExpectSameTensor(*back, *t);
  }
}

// ---- Tensor, MakeTensor, dtypes. ----

TEST(TensorType, BitsAndShapes) {
  EXPECT_EQ(TensorDtypeBytes("bfloat16"), 2);
  EXPECT_EQ(TensorDtypeBytes("float8_e4m3"), 1);
  EXPECT_EQ(TensorDtypeBytes("tfloat32"), 4);
  EXPECT_EQ(TensorDtypeBytes("uint32"), 4);
  EXPECT_EQ(TensorDtypeBytes("int64"), 8);
  EXPECT_EQ(TensorDtypeBytes("bool"), std::nullopt);
  EXPECT_EQ(TensorDtypeBytes("E4M3"), std::nullopt);
  absl::StatusOr<Tensor> t = MakeTensor("int16", {2, 0});
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->size(), 0);
  EXPECT_EQ(t->format, nullptr);
  t = MakeTensor("float64", {});
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->size(), 1);
  EXPECT_EQ(t->format, &Float64());
  t->SetBits(0, 0x3FF0000000000000ull);
  EXPECT_EQ(t->data[7], 0x3F);
  EXPECT_EQ(t->Bits(0), 0x3FF0000000000000ull);
  t = MakeTensor("float8_e5m2", {5});
  ASSERT_TRUE(t.ok());
  for (int i = 0; i < 5; ++i)
    t->SetBits(i, 0x10u * static_cast<unsigned>(i) + 0x1FFu);  // Truncated.
  std::vector<uint64_t> out(3);
  t->CopyBits(2, out);
  EXPECT_EQ(out, (std::vector<uint64_t>{0x1F, 0x2F, 0x3F}));
  EXPECT_FALSE(MakeTensor("bool", {1}).ok());
  EXPECT_FALSE(MakeTensor("float32", {-1}).ok());
  EXPECT_FALSE(MakeTensor("float32", {int64_t{1} << 40, int64_t{1} << 40}).ok());
  EXPECT_FALSE(MakeTensor("float32", {int64_t{1} << 39}).ok());  // Over the 2^40-byte cap.
  EXPECT_FALSE(MakeTensor("float32", std::vector<int64_t>(65, 1)).ok());
}

// Fortran order of any rank is transposed into C order (a 2x3x4 example by hand).
TEST(TensorType, FortranOrderTransposed) {
  absl::StatusOr<Tensor> c = MakeTensor("int16", {2, 3, 4});
  ASSERT_TRUE(c.ok());
  for (int64_t i = 0; i < 24; ++i) c->SetBits(i, static_cast<uint64_t>(i));
  std::string f = NpyBytes(*c);
  const size_t key = f.find("'fortran_order': False");
  f.replace(key, 22, "'fortran_order': True ");  // Same length with the space.
  // Write the data in Fortran order: element (i, j, k) at i + 2 j + 6 k.
  const size_t data = f.size() - 48;
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 3; ++j) {
      for (int k = 0; k < 4; ++k) {
        const int value = i * 12 + j * 4 + k;
        const size_t at = data + 2 * static_cast<size_t>(i + 2 * j + 6 * k);
        f[at] = static_cast<char>(value);
        f[at + 1] = 0;
      }
    }
  }
  absl::StatusOr<Tensor> t = ParseNpy(f, "f.npy");
  ASSERT_TRUE(t.ok()) << t.status();
  ExpectSameTensor(*t, *c);
}

// Shapes that cross the 32-element tiles of the transposition, ranks 2 to 5, every element
// size: element (i0, i1, ...) holds its C-order index.
TEST(TensorType, FortranOrderAnyRankAndSize) {
  const std::vector<std::vector<int64_t>> shapes = {
      {33, 65}, {1, 70}, {70, 1}, {3, 40, 5}, {2, 3, 4, 5}, {2, 1, 35, 1, 3}, {64, 64}};
  for (const char* dtype : {"uint8", "int16", "int32", "int64"}) {
    for (const std::vector<int64_t>& shape : shapes) {
      SCOPED_TRACE(std::string(dtype) + " rank " + std::to_string(shape.size()));
      absl::StatusOr<Tensor> c = MakeTensor(dtype, shape);
      ASSERT_TRUE(c.ok());
      for (int64_t i = 0; i < c->size(); ++i) c->SetBits(i, static_cast<uint64_t>(i * 7919));
      Tensor f = *c;  // The same elements in Fortran order.
      std::vector<int64_t> idx(shape.size(), 0);
      for (int64_t i = 0; i < c->size(); ++i) {
        int64_t fo = 0, stride = 1;
        for (size_t k = 0; k < shape.size(); ++k) {
          fo += idx[k] * stride;
          stride *= shape[k];
        }
        f.SetBits(fo, c->Bits(i));
        for (size_t k = shape.size(); k-- > 0;) {
          if (++idx[k] < shape[k]) break;
          idx[k] = 0;
        }
      }
      std::string bytes = NpyBytes(f);
      bytes.replace(bytes.find("'fortran_order': False"), 22, "'fortran_order': True ");
      absl::StatusOr<Tensor> t = ParseNpy(bytes, "f.npy");
      ASSERT_TRUE(t.ok()) << t.status();
      ExpectSameTensor(*t, *c);
    }
  }
}

TEST(NarrowestExactFloat, Float32AndFloat64Dumps) {
  auto f32 = [](std::vector<float> v) {
    Tensor t = *MakeTensor("float32", {static_cast<int64_t>(v.size())});
    if (!v.empty()) std::memcpy(t.data.data(), v.data(), v.size() * 4);
    return t;
  };
  const float inf = INFINITY, nan = NAN;
  EXPECT_EQ(NarrowestExactFloat(f32({1.0f, -2.5f, 0.0f, 3.0e38f * 0 + 65536.0f, inf, nan})),
            "bfloat16");
  EXPECT_EQ(NarrowestExactFloat(f32({1.0f + 0x1p-7f, 0x1p-133f})), "bfloat16");  // bf16 subnormal
  EXPECT_EQ(NarrowestExactFloat(f32({1.0f + 0x1p-10f, 65504.0f, 0x1p-24f})), "float16");
  EXPECT_EQ(NarrowestExactFloat(f32({1.0f + 0x1p-10f, 0x1p-25f})), std::nullopt);  // f16 underflow
  EXPECT_EQ(NarrowestExactFloat(f32({65520.0f})), std::nullopt);  // Past float16's max.
  EXPECT_EQ(NarrowestExactFloat(f32({1.0f + 0x1p-20f})), std::nullopt);
  EXPECT_EQ(NarrowestExactFloat(f32({0.0f, -0.0f, nan})), std::nullopt);  // No non-zero finite.
  EXPECT_EQ(NarrowestExactFloat(f32({})), std::nullopt);
  Tensor d = *MakeTensor("float64", {2});
  const double dv[2] = {1.0 + 0x1p-23, 3.0};
  std::memcpy(d.data.data(), dv, 16);
  EXPECT_EQ(NarrowestExactFloat(d), "float32");
  Tensor i = *MakeTensor("int32", {1});
  i.SetBits(0, 1);
  EXPECT_EQ(NarrowestExactFloat(i), std::nullopt);
  Tensor b = *MakeTensor("bfloat16", {1});
  b.SetBits(0, 0x3F80);
  EXPECT_EQ(NarrowestExactFloat(b), std::nullopt);
}

// The float32 bit tests against a value check done here with doubles, over a spread of
// patterns (every top half, several low halves): x fits bfloat16 / float16 exactly.
bool FitsByValue(float x, int emin, int emax, int p) {
  const double a = std::fabs(static_cast<double>(x));
  if (a == 0) return true;
  int ex;
  std::frexp(a, &ex);
  const int e = ex - 1;
  if (e > emax) return false;
  const double scaled = std::ldexp(a, -(std::max(e, emin) - (p - 1)));
  return scaled == std::floor(scaled);
}

TEST(NarrowestExactFloat, Float32BitTestsMatchValues) {
  Tensor one = *MakeTensor("float32", {1});
  Tensor two = *MakeTensor("float32", {2});
  two.SetBits(1, 0x3F802000);  // 1 + 2^-10: float16, not bfloat16.
  for (uint32_t hi = 0; hi < 0x10000; ++hi) {
    for (uint32_t lo : {0x0000u, 0x0001u, 0x1000u, 0x2000u, 0x8000u, 0xE000u, 0xFFFFu}) {
      const uint32_t b = hi << 16 | lo;
      float x;
      std::memcpy(&x, &b, 4);
      one.SetBits(0, b);
      two.SetBits(0, b);
      const bool finite_nonzero = std::isfinite(x) && x != 0;
      const bool bf16 = std::isfinite(x) && FitsByValue(x, -126, 127, 8);
      const bool f16 = std::isfinite(x) && FitsByValue(x, -14, 15, 11);
      ASSERT_EQ(NarrowestExactFloat(one), finite_nonzero
                                              ? (bf16  ? std::optional<std::string>("bfloat16")
                                                 : f16 ? std::optional<std::string>("float16")
                                                       : std::nullopt)
                                              : std::nullopt)
          << std::hex << b;
      ASSERT_EQ(NarrowestExactFloat(two),
                !std::isfinite(x) || f16 ? std::optional<std::string>("float16") : std::nullopt)
          << std::hex << b;
    }
  }
}

// ---- For the live test: our writers' output, for numpy/ml_dtypes/safetensors to read. ----

// With FPCONFORM_TENSOR_WRITE_DIR set (tensor_file_live_check.py sets it), writes every golden
// tensor with WriteNpy (and WriteSafetensors where it has a dtype) plus written.json listing
// what each file must hold; the Python side loads them with the real libraries.
TEST(LiveWriters, WriteForPython) {
  const char* out = std::getenv("FPCONFORM_TENSOR_WRITE_DIR");
  if (out == nullptr || *out == '\0') GTEST_SKIP() << "FPCONFORM_TENSOR_WRITE_DIR not set";
  const Json m = LoadManifest();
  Json written = Json::array();
  int i = 0;
  for (const Json& e : m["entries"]) {
    const std::string file = e["file"];
    const std::string tensor = e["tensor"];
    const std::string spec = GoldenDir() + "/" + file + (tensor.empty() ? "" : ":" + tensor);
    absl::StatusOr<Tensor> t = ReadTensor(spec, OptionsOf(e));
    ASSERT_TRUE(t.ok()) << t.status();
    const std::string base = std::string(out) + "/w" + std::to_string(i++);
    ASSERT_TRUE(WriteNpy(*t, base + ".npy").ok());
    written.push_back({{"file", base + ".npy"},
                       {"dtype", t->dtype},
                       {"shape", t->shape},
                       {"hex", Hex(t->data)},
                       {"from", spec}});
    absl::StatusOr<std::string> st = SafetensorsBytes({{"t", &*t}}, {{"from", file}});
    if (st.ok()) {
      ASSERT_TRUE(WriteSafetensors({{"t", &*t}}, {{"from", file}}, base + ".safetensors").ok());
      written.push_back({{"file", base + ".safetensors"},
                         {"dtype", t->dtype},
                         {"shape", t->shape},
                         {"hex", Hex(t->data)},
                         {"from", spec}});
    }
  }
  std::ofstream(std::string(out) + "/written.json") << written.dump(1) << "\n";
}

}  // namespace
}  // namespace fpconform
