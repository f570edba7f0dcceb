// KvCache bookkeeping: pages taken and returned, slots through the page tables, the ring,
// and errors that change nothing (context full, pool empty, rollback past the ring).
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "common/tiny_kv_config.h"
#include "runtime/kv_cache.h"

namespace gs {
namespace {

TEST(KvCache, PagesAreTakenAndReturned) {
  auto backend = create_cpu_backend(1);
  KvCacheOptions o;
  o.n_seq_max = 2;
  o.n_ctx = 32;
  o.page_size = 8;
  o.max_ubatch = 4;
  o.n_pages_full = 5;
  auto kv = KvCache::create(tiny_kv_config(), *backend, o).value();
  EXPECT_EQ(kv->pages_total(), 5);
  const int a = kv->add_sequence().value();
  const int b = kv->add_sequence().value();
  EXPECT_FALSE(kv->add_sequence().ok());
  EXPECT_EQ(kv->append(a, 4).value(), 0);
  EXPECT_EQ(kv->append(a, 4).value(), 4);
  EXPECT_EQ(kv->pages_free(), 4);
  EXPECT_EQ(kv->append(a, 1).value(), 8);
  EXPECT_EQ(kv->pages_free(), 3);
  // Slots of a's positions are distinct and inside the pool.
  const KvCacheBinding& bind = kv->binding();
  std::set<int64_t> slots;
  for (int p = 0; p < 9; ++p) slots.insert(kv_slot(bind.full_pages_host, a, p));
  EXPECT_EQ(slots.size(), 9u);
  EXPECT_EQ(kv_slot(bind.full_pages_host, a, 16), -1);  // not allocated
  // Too many in one pass; past the context; nothing changes.
  EXPECT_EQ(kv->append(b, 5).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(kv->length(b), 0);
  ASSERT_TRUE(kv->truncate(a, 8).ok());
  EXPECT_EQ(kv->pages_free(), 4);
  ASSERT_TRUE(kv->remove_sequence(a).ok());
  EXPECT_EQ(kv->pages_free(), 5);
  EXPECT_FALSE(kv->append(a, 1).ok());  // removed
}

TEST(KvCache, PoolExhaustionAndContextEnd) {
  auto backend = create_cpu_backend(1);
  KvCacheOptions o;
  o.n_seq_max = 2;
  o.n_ctx = 16;
  o.page_size = 4;
  o.max_ubatch = 4;
  o.n_pages_full = 3;
  auto kv = KvCache::create(tiny_kv_config(), *backend, o).value();
  const int a = kv->add_sequence().value();
  const int b = kv->add_sequence().value();
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(kv->append(a, 4).ok());
  EXPECT_EQ(kv->append(b, 1).status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(kv->length(b), 0);
  ASSERT_TRUE(kv->remove_sequence(a).ok());
  ASSERT_TRUE(kv->append(b, 4).ok());
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(kv->append(b, 4).ok());
  EXPECT_EQ(kv->append(b, 1).status().code(), StatusCode::kResourceExhausted);
  o.n_pages_full = 0;
  auto kv2 = KvCache::create(tiny_kv_config(), *backend, o).value();
  const int c = kv2->add_sequence().value();
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(kv2->append(c, 4).ok());
  EXPECT_EQ(kv2->append(c, 1).status().code(), StatusCode::kOutOfRange);
}

TEST(KvCache, RingSizeAndRollbackLimit) {
  auto backend = create_cpu_backend(1);
  KvCacheOptions o;
  o.n_seq_max = 1;
  o.n_ctx = 64;
  o.page_size = 2;
  o.max_ubatch = 3;
  auto kv = KvCache::create(tiny_kv_config(), *backend, o).value();
  // W + max_ubatch = 7 positions, rounded up to whole pages of 2.
  EXPECT_EQ(kv->swa_ring(), 8);
  const int s = kv->add_sequence().value();
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(kv->append(s, 3).ok());  // 30 positions
  EXPECT_EQ(kv->swa_oldest(s), 22);
  // Rolling back to 27 needs 22..26 (W + 1 before it): fine. To 26 needs 21: gone.
  EXPECT_EQ(kv->truncate(s, 26).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(kv->length(s), 30);
  ASSERT_TRUE(kv->truncate(s, 27).ok());
  EXPECT_EQ(kv->length(s), 27);
  ASSERT_TRUE(kv->truncate(s, 0).ok());  // everything: always possible
  EXPECT_EQ(kv->swa_oldest(s), 0);
  // Ring slots of position p and p + 8 coincide.
  ASSERT_TRUE(kv->append(s, 3).ok());
  const KvCacheBinding& b = kv->binding();
  EXPECT_EQ(kv_slot(b.swa_pages_host, s, 1), kv_slot(b.swa_pages_host, s, 9));
}

// append_zeros (bench --depth-fill zeros): any count, in chunks of max_ubatch; every pool
// reads zero afterwards, whatever it held; past the context it stops with kOutOfRange.
TEST(KvCache, AppendZerosReachesADepthWithoutAPass) {
  auto backend = create_cpu_backend(1);
  KvCacheOptions o;
  o.n_seq_max = 1;
  o.n_ctx = 40;
  o.page_size = 4;
  o.max_ubatch = 3;
  o.type = GgmlType::F32;
  auto kv = KvCache::create(tiny_kv_config(), *backend, o).value();
  const KvCacheBinding& b = kv->binding();
  for (const KvLayerView& l : b.layers) {  // garbage in every pool first
    const size_t n = static_cast<size_t>(l.n_slots) * l.n_head_kv * l.head_dim;
    for (size_t i = 0; i < n; ++i) static_cast<float*>(l.k)[i] = static_cast<float*>(l.v)[i] = 7.5f;
  }
  const int s = kv->add_sequence().value();
  ASSERT_TRUE(kv->append_zeros(s, 10).ok());  // more than max_ubatch at once
  EXPECT_EQ(kv->length(s), 10);
  EXPECT_EQ(kv->pages_free(), kv->pages_total() - 3);
  EXPECT_EQ(kv->swa_oldest(s), 10 > kv->swa_ring() ? 10 - kv->swa_ring() : 0);
  for (const KvLayerView& l : b.layers) {
    const size_t n = static_cast<size_t>(l.n_slots) * l.n_head_kv * l.head_dim;
    for (size_t i = 0; i < n; ++i) {
      ASSERT_EQ(static_cast<float*>(l.k)[i], 0.0f);
      ASSERT_EQ(static_cast<float*>(l.v)[i], 0.0f);
    }
  }
  ASSERT_TRUE(kv->append(s, 2).ok());  // a normal pass continues from there
  EXPECT_EQ(kv->length(s), 12);
  EXPECT_EQ(kv->append_zeros(s, 30).code(), StatusCode::kOutOfRange);
  EXPECT_LE(kv->length(s), 40);
  ASSERT_TRUE(kv->truncate(s, 0).ok());
  EXPECT_EQ(kv->pages_free(), kv->pages_total());
}

TEST(KvCache, RejectsBadOptions) {
  auto backend = create_cpu_backend(1);
  KvCacheOptions o;
  o.type = GgmlType::Q8_0;
  EXPECT_FALSE(KvCache::create(tiny_kv_config(), *backend, o).ok());
  o.type = GgmlType::F16;
  o.page_size = 0;
  EXPECT_FALSE(KvCache::create(tiny_kv_config(), *backend, o).ok());
}

// q8_0 pools (decision 0035): head rows of head_dim int8 values and head_dim / 32 f16 scales,
// 17/32 of f16's bytes; a head_dim that is not a multiple of 32 is refused, naming it.
TEST(KvCache, Q8_0PoolsAndTheirHeadDims) {
  auto backend = create_cpu_backend(1);
  Gemma4Config c = tiny_kv_config();
  c.layers[0].head_dim = 64;
  c.layers[1].head_dim = 128;
  KvCacheOptions o;
  o.n_ctx = 64;
  o.page_size = 16;
  o.max_ubatch = 8;
  o.type = GgmlType::F16;
  const double f16 = KvCache::pool_bytes(c, o);
  o.type = GgmlType::Q8_0;
  EXPECT_DOUBLE_EQ(KvCache::pool_bytes(c, o), f16 * 17 / 32);
  auto kv = KvCache::create(c, *backend, o);
  ASSERT_TRUE(kv.ok()) << kv.status().to_string();
  EXPECT_EQ(static_cast<double>((*kv)->bytes()), KvCache::pool_bytes(c, o));
  EXPECT_EQ((*kv)->binding().layers[1].type, GgmlType::Q8_0);
  const Result<std::unique_ptr<KvCache>> bad = KvCache::create(tiny_kv_config(), *backend, o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("head_dim 4"), std::string::npos) << bad.status().to_string();
  EXPECT_EQ(parse_kv_cache_type("q8_0").value(), GgmlType::Q8_0);
  EXPECT_EQ(parse_kv_cache_type("f16").value(), GgmlType::F16);
  EXPECT_FALSE(parse_kv_cache_type("q4_0").ok());
}

// `serve --ctx-size 2000000000 --parallel 256`: the host page tables (2 x 8 GB, written in
// full) came before the pools, so instead of an error the process filled memory until it
// was killed, or died of an uncaught std::bad_alloc. Too large a cache is a clean error.
TEST(KvCache, TooLargeForMemoryIsAnErrorNotACrash) {
  auto backend = create_cpu_backend(1);
  KvCacheOptions o;
  o.n_seq_max = 256;
  o.n_ctx = 2000000000;
  o.max_ubatch = 4;
  auto kv = KvCache::create(tiny_kv_config(), *backend, o);
  EXPECT_FALSE(kv.ok());
  EXPECT_EQ(kv.status().code(), StatusCode::kResourceExhausted) << kv.status().to_string();
  o.page_size = 1;  // more pages than int32 ids address
  kv = KvCache::create(tiny_kv_config(), *backend, o);
  EXPECT_EQ(kv.status().code(), StatusCode::kInvalidArgument) << kv.status().to_string();
}

// Positions copied out of one sequence and into another (as a slot file's restore does) give
// the same bytes in every pool slot, on full layers (every position) and sliding ones (the
// ring's positions, the sequence being longer than the ring), for f16, f32 and q8_0 pools.
TEST(KvCache, PositionsReadAndWrittenBackAreBitExact) {
  auto backend = create_cpu_backend(1);
  for (GgmlType type : {GgmlType::F16, GgmlType::F32, GgmlType::Q8_0}) {
    SCOPED_TRACE(ggml_type_name(type));
    Gemma4Config config = tiny_kv_config();
    if (type == GgmlType::Q8_0) {  // q8_0 head rows need head_dim % 32 == 0
      config.layers[0].head_dim = 32;
      config.layers[1].head_dim = 64;
    }
    KvCacheOptions o;
    o.n_seq_max = 2;
    o.n_ctx = 40;
    o.page_size = 8;
    o.max_ubatch = 4;
    o.type = type;
    auto kv = KvCache::create(config, *backend, o).value();
    ASSERT_EQ(kv->swa_ring(), 8);
    const int a = kv->add_sequence().value();
    const int b = kv->add_sequence().value();
    const int32_t n = 30;
    for (int32_t p = 0; p < n; p += 3) ASSERT_TRUE(kv->append(a, std::min(3, n - p)).ok());
    const KvCacheBinding& bind = kv->binding();
    // Every byte of a's stored positions a function of (layer, K or V, position, byte).
    auto pattern = [](int il, int kv_i, int32_t p, size_t i) {
      return static_cast<uint8_t>(il * 131 + kv_i * 71 + p * 17 + static_cast<int>(i) * 7 + 1);
    };
    for (int il = 0; il < 2; ++il) {
      const size_t row = kv->position_bytes(il);
      ASSERT_GT(row, 0u);
      const bool sliding = config.layers[static_cast<size_t>(il)].sliding;
      const PageTableView& pt = sliding ? bind.swa_pages_host : bind.full_pages_host;
      for (int32_t p = sliding ? kv->swa_oldest(a) : 0; p < n; ++p) {
        const int64_t slot = kv_slot(pt, a, p);
        for (size_t i = 0; i < row; ++i) {
          static_cast<uint8_t*>(bind.layers[il].k)[slot * row + i] = pattern(il, 0, p, i);
          static_cast<uint8_t*>(bind.layers[il].v)[slot * row + i] = pattern(il, 1, p, i);
        }
      }
    }
    const int32_t swa_lo = kv->swa_oldest(a);
    EXPECT_EQ(swa_lo, n - 8);
    ASSERT_TRUE(kv->restore_shape(b, n, swa_lo).ok());
    EXPECT_EQ(kv->length(b), n);
    EXPECT_EQ(kv->swa_oldest(b), swa_lo);
    ASSERT_TRUE(kv->sync().ok());
    for (int il = 0; il < 2; ++il) {
      const size_t row = kv->position_bytes(il);
      const bool sliding = config.layers[static_cast<size_t>(il)].sliding;
      const int32_t lo = sliding ? swa_lo : 0;
      std::vector<uint8_t> k(static_cast<size_t>(n - lo) * row), v(k.size());
      ASSERT_TRUE(kv->read_positions(a, il, lo, n - lo, k.data(), v.data()).ok());
      ASSERT_TRUE(kv->write_positions(b, il, lo, n - lo, k.data(), v.data()).ok());
      const PageTableView& pt = sliding ? bind.swa_pages_host : bind.full_pages_host;
      for (int32_t p = lo; p < n; ++p) {
        const int64_t sa = kv_slot(pt, a, p), sb = kv_slot(pt, b, p);
        ASSERT_NE(sa, sb);
        for (size_t i = 0; i < row; ++i) {
          ASSERT_EQ(static_cast<uint8_t*>(bind.layers[il].k)[sb * row + i], pattern(il, 0, p, i)) << il << " " << p;
          ASSERT_EQ(static_cast<uint8_t*>(bind.layers[il].v)[sb * row + i], pattern(il, 1, p, i)) << il << " " << p;
        }
      }
      if (sliding) {
        // Older sliding positions are not in the ring: refused, nothing read.
        EXPECT_EQ(kv->read_positions(a, il, lo - 1, 1, k.data(), v.data()).code(), StatusCode::kOutOfRange);
      }
      EXPECT_EQ(kv->read_positions(a, il, n - 1, 2, k.data(), v.data()).code(), StatusCode::kOutOfRange);
    }
    // The restored sequence rolls back as far as its ring allows, and no further.
    EXPECT_TRUE(kv->truncate(b, 28).ok());
    EXPECT_EQ(kv->truncate(b, 24).code(), StatusCode::kFailedPrecondition);
    // restore_shape wants an empty sequence and a sliding start the ring can hold.
    EXPECT_EQ(kv->restore_shape(a, n, swa_lo).code(), StatusCode::kInvalidArgument);
    ASSERT_TRUE(kv->truncate(b, 0).ok());
    EXPECT_EQ(kv->swa_oldest(b), 0);
    EXPECT_EQ(kv->restore_shape(b, n, n - 9).code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(kv->restore_shape(b, 41, 40).code(), StatusCode::kOutOfRange);
    EXPECT_EQ(kv->length(b), 0);
  }
}

}  // namespace
}  // namespace gs
