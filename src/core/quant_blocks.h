// Byte layouts of the ggml quantization blocks (spec §5.2; facts from ggml-common.h).
// Every multi-byte field is little-endian; half-precision fields are raw binary16 bits.
#pragma once

#include <cstdint>

namespace gs::qblock {

inline constexpr int kQK = 32;    // elements of a legacy / IQ4_NL / MXFP4 block
inline constexpr int kQK_K = 256; // elements of a K-quant / IQ4_XS super-block
inline constexpr int kKScaleBytes = 12;  // packed 6-bit scales and mins of Q4_K / Q5_K

// y = ((q & 15) - 8) * d
struct Q4_0 {
  uint16_t d;
  uint8_t qs[kQK / 2];  // low nibbles: elements 0..15, high nibbles: 16..31
};
// y = q * d + m
struct Q4_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qs[kQK / 2];
};
// y = (q5 - 16) * d, bit 4 of element j in bit j of qh
struct Q5_0 {
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};
// y = q5 * d + m
struct Q5_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};
// y = q * d
struct Q8_0 {
  uint16_t d;
  int8_t qs[kQK];
};

// 16 sub-blocks of 16; 4-bit scale (low) and min (high) per sub-block; 2-bit quants.
struct Q2_K {
  uint8_t scales[kQK_K / 16];
  uint8_t qs[kQK_K / 4];
  uint16_t d;
  uint16_t dmin;
};
// 16 sub-blocks of 16; signed 6-bit scales; 2 low bits in qs, the third bit in hmask.
struct Q3_K {
  uint8_t hmask[kQK_K / 8];
  uint8_t qs[kQK_K / 4];
  uint8_t scales[12];
  uint16_t d;
};
// 8 sub-blocks of 32; 6-bit scale and min per sub-block; 4-bit quants.
struct Q4_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[kKScaleBytes];
  uint8_t qs[kQK_K / 2];
};
// As Q4_K with a fifth bit per element in qh.
struct Q5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[kKScaleBytes];
  uint8_t qh[kQK_K / 8];
  uint8_t qs[kQK_K / 2];
};
// 16 sub-blocks of 16; int8 scales; 4 low bits in ql, 2 high bits in qh.
struct Q6_K {
  uint8_t ql[kQK_K / 2];
  uint8_t qh[kQK_K / 4];
  int8_t scales[kQK_K / 16];
  uint16_t d;
};
// Activation format of ggml's K-quant dot products; f32 scale.
struct Q8_K {
  float d;
  int8_t qs[kQK_K];
  int16_t bsums[kQK_K / 16];
};
// y = d * kIq4nlValues[q]
struct IQ4_NL {
  uint16_t d;
  uint8_t qs[kQK / 2];
};
// 8 sub-blocks of 32 with 6-bit signed scales (4 low bits in scales_l, 2 high in scales_h).
struct IQ4_XS {
  uint16_t d;
  uint16_t scales_h;
  uint8_t scales_l[kQK_K / 64];
  uint8_t qs[kQK_K / 2];
};
// E8M0 shared exponent and 16 bytes of FP4 (E2M1) codes.
struct MXFP4 {
  uint8_t e;
  uint8_t qs[kQK / 2];
};

static_assert(sizeof(Q4_0) == 18 && sizeof(Q4_1) == 20 && sizeof(Q5_0) == 22 && sizeof(Q5_1) == 24);
static_assert(sizeof(Q8_0) == 34 && sizeof(Q2_K) == 84 && sizeof(Q3_K) == 110 && sizeof(Q4_K) == 144);
static_assert(sizeof(Q5_K) == 176 && sizeof(Q6_K) == 210 && sizeof(Q8_K) == 292);
static_assert(sizeof(IQ4_NL) == 18 && sizeof(IQ4_XS) == 136 && sizeof(MXFP4) == 17);

// The non-linear 4-bit grid of IQ4_NL and IQ4_XS (spec §5.2).
inline constexpr int8_t kIq4nlValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                            1,    13,   25,  38,  53,  69,  89,  113};
// FP4 E2M1 values, doubled (ggml stores 2x and halves the E8M0 scale; spec §5.2).
inline constexpr int8_t kMxfp4Values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// Unpacks the 6-bit scale and min of sub-block j (0..7) of Q4_K / Q5_K.
inline void k_scale_min(int j, const uint8_t* s, uint8_t* sc, uint8_t* mn) {
  if (j < 4) {
    *sc = s[j] & 63;
    *mn = s[j + 4] & 63;
  } else {
    *sc = static_cast<uint8_t>((s[j + 4] & 15) | ((s[j - 4] >> 6) << 4));
    *mn = static_cast<uint8_t>((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
  }
}

// Packs eight 6-bit scales and mins into the 12-byte Q4_K / Q5_K layout (inverse of above).
inline void k_pack_scale_min(const uint8_t* sc, const uint8_t* mn, uint8_t* s) {
  for (int j = 0; j < 4; ++j) {
    s[j] = static_cast<uint8_t>((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
    s[j + 4] = static_cast<uint8_t>((mn[j] & 63) | ((mn[j + 4] >> 4) << 6));
    s[j + 8] = static_cast<uint8_t>((sc[j + 4] & 15) | ((mn[j + 4] & 15) << 4));
  }
}

}  // namespace gs::qblock
