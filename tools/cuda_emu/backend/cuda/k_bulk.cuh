// Emulator stand-in for src/backend/cuda/k_bulk.cuh (tools/cuda_emu/README.md): mbarriers
// with arrival and transaction counts, the bulk copy engine and the gpu-scope
// loads and stores, with the PTX ISA's semantics on emu.h's fibers.
//
// An mbarrier's 64 bits hold its state: bit 63 the current phase's parity, bits 48..62 the
// expected arrival count, bits 32..47 the arrivals still pending, bits 0..31 the pending
// transaction bytes (signed). A phase completes when both pending counts reach zero; a wait
// for parity p returns once the current phase's parity differs from p. Bulk copies land at
// issue ("eager": a stage overwritten while it is still read shows up) or only when a thread
// waits on their barrier ("lazy": data read before its barrier completes shows up).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "backend/cuda/k_common.cuh"
#include "emu.h"

namespace gs::cuda {

namespace mbar_detail {
inline uint32_t parity(uint64_t v) { return static_cast<uint32_t>(v >> 63); }
inline uint32_t count(uint64_t v) { return static_cast<uint32_t>((v >> 48) & 0x7fffu); }
inline uint32_t pending(uint64_t v) { return static_cast<uint32_t>((v >> 32) & 0xffffu); }
inline int32_t tx(uint64_t v) { return static_cast<int32_t>(static_cast<uint32_t>(v)); }
inline uint64_t pack(uint32_t par, uint32_t cnt, uint32_t pend, int32_t txb) {
  return (static_cast<uint64_t>(par) << 63) | (static_cast<uint64_t>(cnt) << 48) |
         (static_cast<uint64_t>(pend) << 32) | static_cast<uint32_t>(txb);
}
// Completes the phase when nothing is pending.
inline void settle(uint64_t* bar) {
  const uint64_t v = *bar;
  if (pending(v) == 0 && tx(v) == 0) *bar = pack(parity(v) ^ 1u, count(v), count(v), 0);
}
inline void add_tx(uint64_t* bar, int32_t bytes) {
  const uint64_t v = *bar;
  *bar = pack(parity(v), count(v), pending(v), tx(v) + bytes);
  settle(bar);
}
inline void land(const ::emu::State::BulkCopy& c) {
  if (::emu::st().landing_check) ::emu::st().landing_check(c.dst, c.bytes);
  std::memcpy(c.dst, c.src, c.bytes);
  add_tx(c.bar, -static_cast<int32_t>(c.bytes));
}
}  // namespace mbar_detail

inline void mbar_init(uint64_t* bar, uint32_t count) { *bar = mbar_detail::pack(0, count, count, 0); }
inline void mbar_init_fence() {}
inline void mbar_arrive(uint64_t* bar) {
  using namespace mbar_detail;
  const uint64_t v = *bar;
  if (pending(v) == 0) {
    std::fprintf(stderr, "emu: mbarrier arrival with none pending\n");
    std::abort();
  }
  *bar = pack(parity(v), count(v), pending(v) - 1, tx(v));
  settle(bar);
}
inline void mbar_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
  using namespace mbar_detail;
  const uint64_t v = *bar;
  *bar = pack(parity(v), count(v), pending(v), tx(v) + static_cast<int32_t>(bytes));
  mbar_arrive(bar);
}
inline void mbar_wait(uint64_t* bar, uint32_t par) {
  ::emu::State& s = ::emu::st();
  while (mbar_detail::parity(*bar) == par) {
    for (size_t i = 0; i < s.bulk.size();) {  // lazy copies land when their barrier is waited on
      if (s.bulk[i].bar == bar) {
        const ::emu::State::BulkCopy c = s.bulk[i];
        s.bulk.erase(s.bulk.begin() + static_cast<std::ptrdiff_t>(i));
        mbar_detail::land(c);
      } else {
        ++i;
      }
    }
    if (mbar_detail::parity(*bar) != par) break;
    ::emu::yield();
  }
}

inline void bulk_g2s(void* dst, const void* src, uint32_t bytes, uint64_t* bar) {
  if ((bytes % 16) != 0 || (reinterpret_cast<uintptr_t>(dst) % 16) != 0 || (reinterpret_cast<uintptr_t>(src) % 16) != 0) {
    std::fprintf(stderr, "emu: cp.async.bulk of %u bytes, dst %p, src %p (16-byte multiples only)\n", bytes, dst, src);
    std::abort();
  }
  const ::emu::State::BulkCopy c{dst, src, bytes, bar};
  if (::emu::st().lazy) ::emu::st().bulk.push_back(c);
  else mbar_detail::land(c);
}

// cp.async.bulk.tensor.2d on the emulator's tensor maps (emu_encode_tiled in k_common.cuh):
// the box row by row, the parts outside the tensor from a zero buffer; the barrier expects the
// whole box. With the 128-byte swizzle each 16-byte chunk lands where the swizzle puts its
// shared address (its bits 4-6 XOR bits 7-9, the address an offset into the emulator's dynamic
// shared memory, as wgmma's operands read it: sm90a/k_wgmma.cuh).
inline void bulk_tensor_2d_g2s(void* dst, const void* tmap, int c0, int c1, uint64_t* bar) {
  const EmuTensorMap& m = *static_cast<const EmuTensorMap*>(tmap);
  static const uint8_t zeros[8192] = {};
  if ((reinterpret_cast<uintptr_t>(dst) % 128) != 0 || m.box0 * m.esize > sizeof zeros) {
    std::fprintf(stderr, "emu: cp.async.bulk.tensor to %p (128-byte alignment) of %u-byte rows\n", dst,
                 static_cast<unsigned>(m.box0 * m.esize));
    std::abort();
  }
  const uint32_t row_bytes = static_cast<uint32_t>(m.box0 * m.esize);
  auto* d = static_cast<uint8_t*>(dst);
  for (uint64_t j = 0; j < m.box1; ++j, d += row_bytes) {
    const uint64_t r = static_cast<uint64_t>(c1) + j;
    uint32_t in = 0;
    if (r < m.dim1 && static_cast<uint64_t>(c0) < m.dim0)
      in = static_cast<uint32_t>(std::min<uint64_t>(m.box0, m.dim0 - static_cast<uint64_t>(c0)) * m.esize);
    const auto* src = static_cast<const uint8_t*>(m.addr) + r * m.stride1 + static_cast<uint64_t>(c0) * m.esize;
    if (m.swizzle128) {
      if (d < smem || d + row_bytes > smem + sizeof(smem)) {
        std::fprintf(stderr, "emu: swizzled cp.async.bulk.tensor outside dynamic shared memory\n");
        std::abort();
      }
      for (uint32_t ch = 0; ch < row_bytes; ch += 16) {
        const auto at = static_cast<uint32_t>(d + ch - smem);
        uint8_t* to = smem + (at ^ (((at >> 7) & 7u) << 4));
        const ::emu::State::BulkCopy c{to, ch < in ? src + ch : zeros, 16, bar};
        if (::emu::st().lazy) ::emu::st().bulk.push_back(c);
        else mbar_detail::land(c);
      }
      continue;
    }
    const ::emu::State::BulkCopy parts[2] = {{d, src, in, bar}, {d + in, zeros, row_bytes - in, bar}};
    for (const auto& c : parts) {
      if (c.bytes == 0) continue;
      if (::emu::st().lazy) ::emu::st().bulk.push_back(c);
      else mbar_detail::land(c);
    }
  }
}

// L2 cache policies change nothing on the emulator.
inline uint64_t l2_evict_first_policy() { return 0; }
inline void bulk_g2s(void* dst, const void* src, uint32_t bytes, uint64_t* bar, uint64_t) { bulk_g2s(dst, src, bytes, bar); }
inline void bulk_tensor_2d_g2s(void* dst, const void* tmap, int c0, int c1, uint64_t* bar, uint64_t) {
  bulk_tensor_2d_g2s(dst, tmap, c0, c1, bar);
}

inline void tmap_prefetch(const void*) {}

inline int ld_acquire_gpu(const int* p) { return *reinterpret_cast<const volatile int*>(p); }
inline void st_release_gpu(int* p, int v) { *reinterpret_cast<volatile int*>(p) = v; }
inline uint64_t global_timer_ns() {
  static uint64_t t = 0;
  return t += 1000;
}

}  // namespace gs::cuda
