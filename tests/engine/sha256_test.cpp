// engine/sha256.h: OpenSSL's SHA-256 fed in pieces (decision 0070).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "engine/sha256.h"

namespace gs {
namespace {

std::string hex(const Sha256::Digest& d) { return hex_prefix(d, d.size()); }

Sha256::Digest digest_in_pieces(const std::string& s, size_t piece) {
  Sha256 d = Sha256::create().value();
  for (size_t i = 0; i < s.size(); i += piece) EXPECT_TRUE(d.update(s.data() + i, std::min(piece, s.size() - i)).ok());
  return d.finish().value();
}

// FIPS 180-4's examples, whole and in pieces of any size (the digest of the bytes, not of
// how they were fed).
TEST(Sha256, KnownDigestsWholeAndInPieces) {
  EXPECT_EQ(hex(digest_in_pieces("", 1)), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(hex(digest_in_pieces("abc", 3)), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const std::string two_blocks = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  for (const size_t piece : {1, 7, 63, 64, 65, 1000}) {
    EXPECT_EQ(hex(digest_in_pieces(two_blocks, piece)),
              "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        << piece;
  }
  EXPECT_EQ(hex_prefix(digest_in_pieces("abc", 3), 4), "ba7816bf");
}

// A finished digest takes no more bytes and gives no second value: errors, not a crash.
TEST(Sha256, UseAfterFinishIsAnError) {
  Sha256 d = Sha256::create().value();
  ASSERT_TRUE(d.update("x", 1).ok());
  ASSERT_TRUE(d.finish().ok());
  EXPECT_EQ(d.update("y", 1).code(), StatusCode::kInternal);
  EXPECT_EQ(d.finish().status().code(), StatusCode::kInternal);
}

}  // namespace
}  // namespace gs
