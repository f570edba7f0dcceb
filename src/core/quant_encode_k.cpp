// Quantizers of the K-quant super-blocks Q2_K, Q3_K, Q4_K, Q5_K, Q6_K: the joint scale
// search of quant_search_k.h, then packing into the layouts of quant_blocks.h.
#include <cstring>

#include "core/quant_blocks.h"
#include "core/quant_impl.h"
#include "core/quant_search_k.h"

namespace gs::quant_detail {

using namespace qblock;

void quant_q2_k(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<Q2_K*>(dst);
  for (int64_t i = 0; i < n / kQK_K; ++i, ++b, src += kQK_K) {
    KAffineCode c;
    search_k_affine(src, {16, 16, 3, 15}, &c);
    b->d = c.d;
    b->dmin = c.dmin;
    for (int j = 0; j < 16; ++j) b->scales[j] = static_cast<uint8_t>(c.sc[j] | (c.mn[j] << 4));
    std::memset(b->qs, 0, sizeof(b->qs));
    // Element e = 128h + 32j + 16part + l sits in qs[32h + 16part + l] at bit 2j.
    for (int e = 0; e < kQK_K; ++e) {
      const int h = e / 128, j = (e % 128) / 32, rest = e % 32;
      b->qs[32 * h + rest] |= static_cast<uint8_t>(c.q[e] << (2 * j));
    }
  }
}

void quant_q3_k(const float* src, void* dst, int64_t n) {
  const UniformLevels levels{-4, 3};
  auto* b = static_cast<Q3_K*>(dst);
  for (int64_t i = 0; i < n / kQK_K; ++i, ++b, src += kQK_K) {
    KSymmetricCode c;
    search_k_symmetric(src, {16, 16, -32, 31}, levels, &c);
    b->d = c.d;
    std::memset(b->scales, 0, sizeof(b->scales));
    for (int s = 0; s < 16; ++s) {
      const int u = c.sc[s] + 32;  // stored with a +32 bias
      if (s < 8) {
        b->scales[s] |= static_cast<uint8_t>(u & 15);
      } else {
        b->scales[s - 8] |= static_cast<uint8_t>((u & 15) << 4);
      }
      b->scales[8 + s % 4] |= static_cast<uint8_t>((u >> 4) << (2 * (s / 4)));
    }
    std::memset(b->qs, 0, sizeof(b->qs));
    std::memset(b->hmask, 0, sizeof(b->hmask));
    // Level index u = v + 4 in 0..7: two low bits in qs, bit 2 in hmask (set: no -4).
    for (int e = 0; e < kQK_K; ++e) {
      const int h = e / 128, j = (e % 128) / 32, rest = e % 32;
      const int u = c.idx[e];
      b->qs[32 * h + rest] |= static_cast<uint8_t>((u & 3) << (2 * j));
      if (u & 4) b->hmask[rest] |= static_cast<uint8_t>(1u << (4 * h + j));
    }
  }
}

namespace {

// Shared by Q4_K and Q5_K: 8 sub-blocks of 32 with 6-bit scales and mins.
void encode_q45_k(const float* x, int nmax, uint16_t* d, uint16_t* dmin, uint8_t* scales, uint8_t* q) {
  KAffineCode c;
  search_k_affine(x, {8, 32, nmax, 63}, &c);
  *d = c.d;
  *dmin = c.dmin;
  k_pack_scale_min(c.sc, c.mn, scales);
  std::memcpy(q, c.q, kQK_K);
}

}  // namespace

void quant_q4_k(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<Q4_K*>(dst);
  for (int64_t i = 0; i < n / kQK_K; ++i, ++b, src += kQK_K) {
    uint8_t q[kQK_K];
    encode_q45_k(src, 15, &b->d, &b->dmin, b->scales, q);
    // Chunk c of 64: low nibbles are elements 64c..64c+31, high nibbles 64c+32..64c+63.
    for (int c = 0; c < 4; ++c) {
      for (int l = 0; l < 32; ++l) b->qs[32 * c + l] = static_cast<uint8_t>(q[64 * c + l] | (q[64 * c + 32 + l] << 4));
    }
  }
}

void quant_q5_k(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<Q5_K*>(dst);
  for (int64_t i = 0; i < n / kQK_K; ++i, ++b, src += kQK_K) {
    uint8_t q[kQK_K];
    encode_q45_k(src, 31, &b->d, &b->dmin, b->scales, q);
    std::memset(b->qh, 0, sizeof(b->qh));
    for (int c = 0; c < 4; ++c) {
      for (int l = 0; l < 32; ++l) {
        const uint8_t lo = q[64 * c + l], hi = q[64 * c + 32 + l];
        b->qs[32 * c + l] = static_cast<uint8_t>((lo & 15) | ((hi & 15) << 4));
        b->qh[l] |= static_cast<uint8_t>(((lo >> 4) << (2 * c)) | ((hi >> 4) << (2 * c + 1)));
      }
    }
  }
}

void quant_q6_k(const float* src, void* dst, int64_t n) {
  const UniformLevels levels{-32, 31};
  auto* b = static_cast<Q6_K*>(dst);
  for (int64_t i = 0; i < n / kQK_K; ++i, ++b, src += kQK_K) {
    KSymmetricCode c;
    search_k_symmetric(src, {16, 16, -128, 127}, levels, &c);
    b->d = c.d;
    std::memcpy(b->scales, c.sc, 16);
    std::memset(b->qh, 0, sizeof(b->qh));
    // Half h, l in 0..31: elements 128h + l + 32k (k = 0..3) share ql/qh bytes.
    for (int h = 0; h < 2; ++h) {
      for (int l = 0; l < 32; ++l) {
        const uint8_t* u = c.idx + 128 * h + l;  // level index = v + 32, in 0..63
        b->ql[64 * h + l] = static_cast<uint8_t>((u[0] & 15) | ((u[64] & 15) << 4));
        b->ql[64 * h + l + 32] = static_cast<uint8_t>((u[32] & 15) | ((u[96] & 15) << 4));
        b->qh[32 * h + l] = static_cast<uint8_t>((u[0] >> 4) | ((u[32] >> 4) << 2) | ((u[64] >> 4) << 4) | ((u[96] >> 4) << 6));
      }
    }
  }
}

}  // namespace gs::quant_detail
