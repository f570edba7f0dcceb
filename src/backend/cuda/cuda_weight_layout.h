// The device layout of an uploaded weight: ggml blocks re-laid so that every row and every
// block starts 16-byte aligned (plain C++, shared by the host code and the kernels).
#pragma once

#include <cstddef>
#include <cstdint>

namespace gs::cuda {

// Weight formats the kernels read. Any other ggml type is converted to kF16 at upload.
enum class WFormat : int { kF32, kF16, kBF16, kQ8_0, kQ4_0, kQ4_K, kQ5_K, kQ6_K };

// Every row holds n_in_pad = n_in rounded up to 256 elements (zero padding), so the matmul
// kernels walk whole 256-element tiles. Per format, the "main" region holds n_out rows of
// main_row_bytes; formats whose ggml block is not a multiple of 16 bytes keep their f16
// block scale `d` in a separate "meta" region (one f16 per block, row after row):
//   kF32/kF16/kBF16  main: plain elements
//   kQ8_0            main: 32 int8 per block          meta: d
//   kQ4_0            main: 16 nibble bytes per block  meta: d
//   kQ4_K            main: the ggml 144-byte blocks, tile-major (below)
//   kQ5_K            main: the ggml 176-byte block as is
//   kQ6_K            main: ql[128] qh[64] scales[16]  meta: d, rows padded to 8 entries
// meta_per_row is the meta row stride in f16 entries. Every meta row starts 16-byte aligned
// (Q8_0/Q4_0: 8 entries per tile; Q6_K: padded), so the bulk-copy matvec can copy the
// scales of 8 consecutive tiles of a row as one 16-byte multiple.
//
// Tile-major (kQ4_K; decision 0022). Rows come in row groups of 16 (n_out padded with zero
// rows), a row group's bytes are its 16 rows' worth (16 main_row_bytes) as in the row-major
// layouts, but inside it the tiles follow each other: tile k (the k-th 256-element block of
// all 16 rows) is kQ4KTileBytes = 2304 bytes, laid out the way the decode matvec's lanes read
// it: 4 fragments of 512 bytes, fragment f = 2 (row / 8) + (qs byte / 64) holding at byte
// 16 lane + i (lane = 4 (row % 8) + (qs byte % 64) / 16, i = qs byte % 16) the qs bytes of
// the block, then the 16 rows' 16-byte headers (d, dmin, scales[12]) at 2048 + 16 row. So a
// stage of consecutive tiles of a row group is one contiguous copy, and each lane's loads of
// a tile are 512-byte runs over the warp (k_matvec_tiles.cuh).
struct WeightLayout {
  WFormat format = WFormat::kF32;
  int64_t n_in = 0;
  int64_t n_out = 0;
  int64_t n_in_pad = 0;
  int64_t main_row_bytes = 0;
  int64_t meta_offset = 0;   // bytes from the base to the meta region (0: none)
  int64_t meta_per_row = 0;  // f16 scales per row in the meta region
  bool tile_major = false;   // kQ4_K: the row groups' tiles as described above
  size_t total_bytes = 0;
};

constexpr int64_t kTileElems = 256;
constexpr int64_t kRowGroupRows = 16;
constexpr int64_t kQ4KTileBytes = kRowGroupRows * 144;

// Byte offset, from the start of row r's row group, of qs byte b (0..127) of the row's tile
// `tile` in the tile-major Q4_K layout, and of the row's 16-byte block header.
inline constexpr int64_t q4k_tm_qs(int64_t r, int64_t tile, int b) {
  const int64_t r16 = r % kRowGroupRows;
  return tile * kQ4KTileBytes + (2 * (r16 / 8) + b / 64) * 512 + (4 * (r16 % 8) + (b % 64) / 16) * 16 + b % 16;
}
inline constexpr int64_t q4k_tm_header(int64_t r, int64_t tile) {
  return tile * kQ4KTileBytes + 2048 + (r % kRowGroupRows) * 16;
}

inline int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

inline WeightLayout make_weight_layout(WFormat f, int64_t n_in, int64_t n_out) {
  WeightLayout L;
  L.format = f;
  L.n_in = n_in;
  L.n_out = n_out;
  L.n_in_pad = round_up(n_in, kTileElems);
  const int64_t nb32 = L.n_in_pad / 32, nb256 = L.n_in_pad / 256;
  switch (f) {
    case WFormat::kF32: L.main_row_bytes = L.n_in_pad * 4; break;
    case WFormat::kF16:
    case WFormat::kBF16: L.main_row_bytes = L.n_in_pad * 2; break;
    case WFormat::kQ8_0: L.main_row_bytes = nb32 * 32; L.meta_per_row = nb32; break;
    case WFormat::kQ4_0: L.main_row_bytes = nb32 * 16; L.meta_per_row = nb32; break;
    case WFormat::kQ4_K: L.main_row_bytes = nb256 * 144; break;
    case WFormat::kQ5_K: L.main_row_bytes = nb256 * 176; break;
    case WFormat::kQ6_K: L.main_row_bytes = nb256 * 208; L.meta_per_row = round_up(nb256, 8); break;
  }
  L.tile_major = f == WFormat::kQ4_K;
  const int64_t rows = L.tile_major ? round_up(n_out, kRowGroupRows) : n_out;
  const int64_t main_bytes = round_up(L.main_row_bytes * rows, 256);
  L.meta_offset = L.meta_per_row ? main_bytes : 0;
  L.total_bytes = static_cast<size_t>(main_bytes + round_up(L.meta_per_row * n_out * 2, 256));
  return L;
}

}  // namespace gs::cuda
