// The CUDA probe's library part (probe.cu header): cuBLAS and cuBLASLt calls recorded as replay
// files, and the scaled cuBLASLt FP8 GEMMs written as .npy files.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <sys/stat.h>
#include <vector>

#include "conformance/cuda_probe/probe.h"

namespace fpconform::cuda_probe {

// ---------------------------------------------------------------------------------------------
// cuBLAS: 16x16 outputs, column-major, D = A*B + C; the 16 diagonal entries are recorded (each is
// the dot of row i of A and column i of B with c = C[i][i]).

bool CublasBf16(const std::string& out_dir, const Device& dev, uint64_t seed) {
  const TypeInfo& t = kTypes[kBF16];
  const int n = 16;
  std::vector<Dot> all;
  std::vector<uint32_t> dall;
  cublasHandle_t h;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) return false;
  bool ok = true;
  for (int K : {64, 256, 1024}) {
    for (int rep = 0; rep < 4 && ok; ++rep) {
      Rng rng(DeriveSeed(seed, {7, static_cast<uint64_t>(K), static_cast<uint64_t>(rep)}));
      // A: n x K column-major (lda = n); B: K x n column-major (ldb = K); C: n x n.
      std::vector<uint16_t> ha(n * K), hb(K * n);
      std::vector<float> hc(n * n);
      for (auto& x : ha) x = static_cast<uint16_t>(RandomBits(rng, t, -3, 3));
      for (auto& x : hb) x = static_cast<uint16_t>(RandomBits(rng, t, -3, 3));
      for (auto& x : hc) x = BitsFloat(RandomBits(rng, kTypes[kTF32], -2, 5));
      void *da, *db, *dc;
      ok = CUDA_OK(cudaMalloc(&da, ha.size() * 2)) && CUDA_OK(cudaMalloc(&db, hb.size() * 2)) &&
           CUDA_OK(cudaMalloc(&dc, hc.size() * 4)) &&
           CUDA_OK(cudaMemcpy(da, ha.data(), ha.size() * 2, cudaMemcpyHostToDevice)) &&
           CUDA_OK(cudaMemcpy(db, hb.data(), hb.size() * 2, cudaMemcpyHostToDevice)) &&
           CUDA_OK(cudaMemcpy(dc, hc.data(), hc.size() * 4, cudaMemcpyHostToDevice));
      const float alpha = 1, beta = 1;
      if (ok) {
        const cublasStatus_t st = cublasGemmEx(
            h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, K, &alpha, da, CUDA_R_16BF, n, db, CUDA_R_16BF, K,
            &beta, dc, CUDA_R_32F, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        if (st != CUBLAS_STATUS_SUCCESS) {
          std::fprintf(stderr, "cublasGemmEx: status %d\n", static_cast<int>(st));
          ok = false;
        }
      }
      std::vector<float> hd(n * n);
      ok = ok && CUDA_OK(cudaDeviceSynchronize()) &&
           CUDA_OK(cudaMemcpy(hd.data(), dc, hd.size() * 4, cudaMemcpyDeviceToHost));
      cudaFree(da);
      cudaFree(db);
      cudaFree(dc);
      for (int i = 0; ok && i < n; ++i) {
        Dot dot;
        dot.tag = "cublasGemmEx 16x16xK, diagonal, K = " + std::to_string(K);
        for (int kk = 0; kk < K; ++kk) {
          dot.a.push_back(ha[i + kk * n]);
          dot.b.push_back(hb[kk + i * K]);
        }
        dot.c = FloatBits(hc[i + i * n]);
        all.push_back(dot);
        dall.push_back(FloatBits(hd[i + i * n]));
      }
    }
  }
  cublasDestroy(h);
  if (!ok) return false;
  FileSpec spec;
  spec.instruction = "cublasGemmEx bf16 x bf16 -> f32, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT";
  spec.short_name = "cublas-gemmex-bf16";
  spec.a_format = spec.b_format = "bfloat16";
  spec.a_digits = 4;
  // sm_90: the preset written from the H200 recording (16x16xK, K <= 1024; cuBLAS picks its
  // kernel per shape, so other shapes or GPUs are recorded only).
  if (dev.major * 10 + dev.minor == 90) {
    spec.expect = "nvidia-h100-bf16-cublas";
  } else {
    spec.expect = "record-only";
    spec.candidates = "nvidia-a100-bf16 nvidia-h100-bf16 nvidia-h100-bf16-cublas nvidia-b200-bf16";
    spec.note = "cuBLAS picks the kernel (tile order, split-K) itself: recorded only.";
  }
  return WriteFile(out_dir, dev, spec, all, dall, seed, "not applicable (library call)");
}

namespace {

// Scales of one cuBLASLt FP8 GEMM: none (both empty), one value each
// (CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F), or one per row of op(A) and per column of B
// (OUTER_VEC_32F: "each (i, j)-th element of product of A and B is multiplied by i-th element of
// A scale and j-th element of B scale", cublasLt.h).
struct LtScales {
  std::vector<float> a, b;
  bool outer = false;
};

// What one cuBLASLt call gave: ok, or the CUDA/cuBLAS failure (a cuBLAS status, or -1 for a CUDA
// error), with unsupported = true where cuBLASLt found no algorithm or refused the scale mode (a
// property of this cuBLAS and GPU, not a probe failure).
struct LtResult {
  bool ok = false;
  bool unsupported = false;
};

// One cuBLASLt e4m3 x e4m3 -> f32 GEMM, CUBLAS_COMPUTE_32F, TN, alpha = beta = 1: A stored K x m
// column-major (column i is row i of op(A)), B K x n column-major, C and D m x n column-major
// float32. hd receives D.
LtResult LtFp8Matmul(cublasLtHandle_t lt, void* workspace, size_t ws_size, int m, int n, int K,
                     const std::vector<uint8_t>& ha, const std::vector<uint8_t>& hb,
                     const std::vector<float>& hc, bool fast, const LtScales& scales,
                     std::vector<float>* hd) {
  LtResult r;
  void *da = nullptr, *db = nullptr, *dc = nullptr, *dd = nullptr, *dsa = nullptr, *dsb = nullptr;
  const bool scaled = !scales.a.empty();
  bool ok = CUDA_OK(cudaMalloc(&da, ha.size())) && CUDA_OK(cudaMalloc(&db, hb.size())) &&
            CUDA_OK(cudaMalloc(&dc, hc.size() * 4)) && CUDA_OK(cudaMalloc(&dd, hc.size() * 4)) &&
            CUDA_OK(cudaMemcpy(da, ha.data(), ha.size(), cudaMemcpyHostToDevice)) &&
            CUDA_OK(cudaMemcpy(db, hb.data(), hb.size(), cudaMemcpyHostToDevice)) &&
            CUDA_OK(cudaMemcpy(dc, hc.data(), hc.size() * 4, cudaMemcpyHostToDevice));
  if (ok && scaled) {
    ok = CUDA_OK(cudaMalloc(&dsa, scales.a.size() * 4)) &&
         CUDA_OK(cudaMalloc(&dsb, scales.b.size() * 4)) &&
         CUDA_OK(cudaMemcpy(dsa, scales.a.data(), scales.a.size() * 4, cudaMemcpyHostToDevice)) &&
         CUDA_OK(cudaMemcpy(dsb, scales.b.data(), scales.b.size() * 4, cudaMemcpyHostToDevice));
  }
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  cublasStatus_t st = CUBLAS_STATUS_SUCCESS;
  auto chk = [&](cublasStatus_t s, const char* what) {
    if (st == CUBLAS_STATUS_SUCCESS && s != CUBLAS_STATUS_SUCCESS) {
      std::fprintf(stderr, "%s: status %d\n", what, static_cast<int>(s));
      st = s;
    }
  };
  if (ok) {
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    const int8_t fast_accum = fast ? 1 : 0;
    chk(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "MatmulDescCreate");
    chk(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta), "TRANSA");
    chk(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb), "TRANSB");
    chk(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast_accum,
                                       sizeof fast_accum), "FAST_ACCUM");
    if (scaled) {
      chk(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &dsa,
                                         sizeof dsa), "A_SCALE_POINTER");
      chk(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &dsb,
                                         sizeof dsb), "B_SCALE_POINTER");
      if (scales.outer) {
        const int32_t mode = CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
        chk(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &mode,
                                           sizeof mode), "A_SCALE_MODE");
        chk(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &mode,
                                           sizeof mode), "B_SCALE_MODE");
      }
    }
    chk(cublasLtMatrixLayoutCreate(&la, CUDA_R_8F_E4M3, K, m, K), "layout A");
    chk(cublasLtMatrixLayoutCreate(&lb, CUDA_R_8F_E4M3, K, n, K), "layout B");
    chk(cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, m, n, m), "layout C");
    cublasLtMatmulPreference_t pref = nullptr;
    chk(cublasLtMatmulPreferenceCreate(&pref), "PreferenceCreate");
    chk(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                             &ws_size, sizeof ws_size), "pref workspace");
    cublasLtMatmulHeuristicResult_t heur{};
    int found = 0;
    chk(cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, lc, pref, 1, &heur, &found),
        "AlgoGetHeuristic");
    if (st != CUBLAS_STATUS_SUCCESS || found == 0) {
      std::fprintf(stderr, "cublasLt: no fp8 algorithm found (status %d)\n", static_cast<int>(st));
      r.unsupported = true;
      if (st == CUBLAS_STATUS_SUCCESS) st = CUBLAS_STATUS_NOT_SUPPORTED;
    }
    const float alpha = 1, beta = 1;
    if (st == CUBLAS_STATUS_SUCCESS) {
      chk(cublasLtMatmul(lt, op, &alpha, da, la, db, lb, &beta, dc, lc, dd, lc, &heur.algo,
                         workspace, ws_size, 0), "cublasLtMatmul");
    }
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    ok = st == CUBLAS_STATUS_SUCCESS;
  }
  if (la) cublasLtMatrixLayoutDestroy(la);
  if (lb) cublasLtMatrixLayoutDestroy(lb);
  if (lc) cublasLtMatrixLayoutDestroy(lc);
  if (op) cublasLtMatmulDescDestroy(op);
  hd->assign(hc.size(), 0.0f);
  ok = ok && CUDA_OK(cudaDeviceSynchronize()) &&
       CUDA_OK(cudaMemcpy(hd->data(), dd, hd->size() * 4, cudaMemcpyDeviceToHost));
  for (void* p : {da, db, dc, dd, dsa, dsb}) {
    if (p) cudaFree(p);
  }
  r.ok = ok;
  return r;
}

}  // namespace

bool CublasLtFp8(const std::string& out_dir, const Device& dev, uint64_t seed, bool fast) {
  const TypeInfo& t = kTypes[kE4M3];
  const int n = 16;
  cublasLtHandle_t lt;
  if (cublasLtCreate(&lt) != CUBLAS_STATUS_SUCCESS) return false;
  void* workspace = nullptr;
  const size_t ws_size = 32 << 20;
  bool ok = CUDA_OK(cudaMalloc(&workspace, ws_size));
  std::vector<Dot> all;
  std::vector<uint32_t> dall;
  for (int K : {64, 256, 1024}) {
    for (int rep = 0; rep < 4 && ok; ++rep) {
      Rng rng(DeriveSeed(seed, {8, static_cast<uint64_t>(K), static_cast<uint64_t>(rep)}));
      // TN: A stored K x n column-major (op T gives n x K), B K x n column-major, C/D n x n f32.
      std::vector<uint8_t> ha(K * n), hb(K * n);
      std::vector<float> hc(n * n), hd;
      for (auto& x : ha) x = static_cast<uint8_t>(RandomBits(rng, t, -3, 3));
      for (auto& x : hb) x = static_cast<uint8_t>(RandomBits(rng, t, -3, 3));
      for (auto& x : hc) x = BitsFloat(RandomBits(rng, kTypes[kTF32], -2, 5));
      ok = LtFp8Matmul(lt, workspace, ws_size, n, n, K, ha, hb, hc, fast, LtScales{}, &hd).ok;
      for (int i = 0; ok && i < n; ++i) {
        Dot dot;
        dot.tag = std::string("cublasLtMatmul e4m3 TN 16x16xK, diagonal, K = ") +
                  std::to_string(K);
        for (int kk = 0; kk < K; ++kk) {
          dot.a.push_back(ha[kk + i * K]);  // Column i of the stored A = row i of op(A).
          dot.b.push_back(hb[kk + i * K]);
        }
        dot.c = FloatBits(hc[i + i * n]);
        all.push_back(dot);
        dall.push_back(FloatBits(hd[i + i * n]));
      }
    }
  }
  cudaFree(workspace);
  cublasLtDestroy(lt);
  if (!ok) return false;
  FileSpec spec;
  spec.instruction = std::string("cublasLtMatmul e4m3 x e4m3 -> f32, CUBLAS_COMPUTE_32F, TN, ") +
                     (fast ? "CUBLASLT_MATMUL_DESC_FAST_ACCUM = 1" : "FAST_ACCUM = 0");
  spec.short_name = std::string("cublaslt-e4m3") + (fast ? "-fastaccum" : "");
  spec.a_format = spec.b_format = "float8_e4m3fn";
  spec.a_digits = 2;
  const std::string lt_preset =
      fast ? "nvidia-h100-fp8e4m3-cublaslt-fastaccum" : "nvidia-h100-fp8e4m3-cublaslt";
  if (dev.major * 10 + dev.minor == 90) {
    spec.expect = lt_preset;  // Written from the H200 recording (16x16xK, K <= 1024).
  } else {
    spec.expect = "record-only";
    spec.candidates = "nvidia-h100-fp8e4m3 nvidia-h100-fp8e4m3-promote128 " + lt_preset +
                      " nvidia-ada-fp8e4m3 nvidia-b200-fp8e4m3";
    spec.note = "cuBLASLt picks the kernel itself: recorded only.";
  }
  return WriteFile(out_dir, dev, spec, all, dall, seed, "not applicable (library call)");
}

// ---------------------------------------------------------------------------------------------
// Scaled cuBLASLt FP8 GEMMs with C, written as tensor files for `fpconform audit matmul` (the
// replay format has no scales): the recording that settles `epilogue.c = "after_scale"` of the
// cuBLASLt presets (accumulation/models/SOURCES.md): is D = fl32(fl32(s_a s_b) acc + C) one
// rounding, fl32(fl32(s_a s_b acc) + C) two, or something else. check_scaled.sh audits them.

namespace {

// A .npy file (format version 1.0): descr '<V1' (numpy's own descr for an ml_dtypes float8 array;
// the audit takes the format from --a-dtype) or '<f4', in Fortran (column-major) order where the
// data are column-major.
bool WriteNpy(const std::string& path, const char* descr, bool fortran,
              const std::vector<int>& shape, const void* data, size_t bytes) {
  std::string dims;  // As numpy writes it: "(64,)", "(64, 256)".
  for (size_t i = 0; i < shape.size(); ++i) dims += (i ? ", " : "") + std::to_string(shape[i]);
  if (shape.size() == 1) dims += ",";
  std::string header = std::string("{'descr': '") + descr + "', 'fortran_order': " +
                       (fortran ? "True" : "False") + ", 'shape': (" + dims + "), }";
  const size_t unpadded = 10 + header.size() + 1;  // Magic, version, length, header, '\n'.
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    return false;
  }
  const uint16_t len = static_cast<uint16_t>(header.size());
  const unsigned char magic[8] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  bool ok = std::fwrite(magic, 1, 8, f) == 8 && std::fwrite(&len, 2, 1, f) == 1 &&
            std::fwrite(header.data(), 1, header.size(), f) == header.size() &&
            std::fwrite(data, 1, bytes, f) == bytes;
  ok = std::fclose(f) == 0 && ok;
  if (!ok) std::fprintf(stderr, "cannot write %s\n", path.c_str());
  return ok;
}

// A float32 in [1, 4) with a full 24-bit significand: a scale whose products round.
float RandomScale(Rng& rng) {
  return BitsFloat(0x3f800000u + static_cast<uint32_t>(rng.Next() % (2u << 23)));
}

}  // namespace

// Records, for scale modes tensor (one value each) and row/column (OUTER_VEC_32F), FAST_ACCUM 0
// and 1, K = 256 and 1024, one 64 x 64 output: OUT_DIR/lt_scaled/<case>/{a,b,c,d,scale_a,
// scale_b}.npy and a line per case in OUT_DIR/lt_scaled/cases.txt ("<case> <preset>"). A mode this
// cuBLAS or GPU does not offer is said and skipped. With dry_run (no GPU), D is the scaled
// product plus C computed in long double from the same column-major buffers the GPU would get,
// rounded to float32 (no model of any GPU): auditing it against the preset must explain
// every element (within bound), which checks the files' layout; it is no recording.
bool CublasLtFp8Scaled(const std::string& out_dir, const Device& dev, uint64_t seed,
                       bool dry_run) {
  const TypeInfo& t = kTypes[kE4M3];
  const int m = 64, n = 64;
  const std::string dir = out_dir + "/lt_scaled";
  mkdir(dir.c_str(), 0755);
  cublasLtHandle_t lt = nullptr;
  void* workspace = nullptr;
  const size_t ws_size = 32 << 20;
  if (!dry_run && (cublasLtCreate(&lt) != CUBLAS_STATUS_SUCCESS ||
                   !CUDA_OK(cudaMalloc(&workspace, ws_size)))) {
    return false;
  }
  std::string cases;
  bool ok = true;
  for (int outer = 0; outer <= 1 && ok; ++outer) {
    for (int fast = 0; fast <= 1 && ok; ++fast) {
      for (int K : {256, 1024}) {
        Rng rng(DeriveSeed(seed, {9, static_cast<uint64_t>(outer), static_cast<uint64_t>(fast),
                                  static_cast<uint64_t>(K)}));
        std::vector<uint8_t> ha(static_cast<size_t>(K) * m), hb(static_cast<size_t>(K) * n);
        std::vector<float> hc(m * n), hd;
        for (auto& x : ha) x = static_cast<uint8_t>(RandomBits(rng, t, -3, 3));
        for (auto& x : hb) x = static_cast<uint8_t>(RandomBits(rng, t, -3, 3));
        for (auto& x : hc) x = BitsFloat(RandomBits(rng, kTypes[kTF32], -2, 5));
        LtScales scales;
        scales.outer = outer == 1;
        scales.a.resize(outer ? m : 1);
        scales.b.resize(outer ? n : 1);
        for (auto& x : scales.a) x = RandomScale(rng);
        for (auto& x : scales.b) x = RandomScale(rng);
        const std::string name = std::string(outer ? "rowcol" : "tensor") +
                                 (fast ? "-fastaccum" : "") + "-k" + std::to_string(K);
        if (dry_run) {
          hd.resize(hc.size());
          for (int j = 0; j < n; ++j) {
            for (int i = 0; i < m; ++i) {
              double acc = 0;  // Exact: these products are multiples of 2^-12 below 2^8.
              for (int k = 0; k < K; ++k) {
                acc += DecodeBits(t, ha[k + static_cast<size_t>(i) * K]) *
                       DecodeBits(t, hb[k + static_cast<size_t>(j) * K]);
              }
              const long double s = static_cast<long double>(scales.a[outer ? i : 0]) *
                                    scales.b[outer ? j : 0];
              hd[i + j * m] = static_cast<float>(s * acc + hc[i + j * m]);
            }
          }
        } else {
          const LtResult r =
              LtFp8Matmul(lt, workspace, ws_size, m, n, K, ha, hb, hc, fast, scales, &hd);
          if (r.unsupported) {
            std::printf("cublasLt scaled %s: not offered by this cuBLAS/GPU (skipped)\n",
                        name.c_str());
            continue;
          }
          if (!r.ok) {
            ok = false;
            break;
          }
        }
        const std::string c = dir + "/" + name;
        mkdir(c.c_str(), 0755);
        // op(A) row-major (m, K) is the stored A's bytes; B, C and D are column-major.
        ok = WriteNpy(c + "/a.npy", "<V1", false, {m, K}, ha.data(), ha.size()) &&
             WriteNpy(c + "/b.npy", "<V1", true, {K, n}, hb.data(), hb.size()) &&
             WriteNpy(c + "/c.npy", "<f4", true, {m, n}, hc.data(), hc.size() * 4) &&
             WriteNpy(c + "/d.npy", "<f4", true, {m, n}, hd.data(), hd.size() * 4) &&
             WriteNpy(c + "/scale_a.npy", "<f4", false, {static_cast<int>(scales.a.size())},
                      scales.a.data(), scales.a.size() * 4) &&
             WriteNpy(c + "/scale_b.npy", "<f4", false, {static_cast<int>(scales.b.size())},
                      scales.b.data(), scales.b.size() * 4);
        cases += name + (fast ? " nvidia-h100-fp8e4m3-cublaslt-fastaccum\n"
                              : " nvidia-h100-fp8e4m3-cublaslt\n");
        std::printf("wrote %s (%dx%dx%d, %s)\n", c.c_str(), m, n, K,
                    dry_run ? "dry run: D computed on the host, no GPU" : dev.name.c_str());
      }
    }
  }
  if (workspace) cudaFree(workspace);
  if (lt) cublasLtDestroy(lt);
  FILE* f = std::fopen((dir + "/cases.txt").c_str(), "w");
  if (!f) return false;
  std::fprintf(f, "# <case> <preset>: cuBLASLt e4m3 TN, alpha = beta = 1, %s, seed %llu\n",
               dry_run ? "DRY RUN (D computed on the host, no GPU)" : dev.name.c_str(),
               static_cast<unsigned long long>(seed));
  std::fputs(cases.c_str(), f);
  return std::fclose(f) == 0 && ok;
}

}  // namespace fpconform::cuda_probe
