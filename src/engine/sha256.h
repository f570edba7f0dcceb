// SHA-256 (FIPS 180-4) through OpenSSL's EVP interface, fed in pieces as they pass: the slot
// files' checksum and model fingerprint (decision 0070). SHA-256 because it was the fastest EVP
// digest measured on hosts with the SHA extensions (decision 0070's numbers).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "core/status.h"

struct evp_md_ctx_st;  // OpenSSL's EVP_MD_CTX

namespace gs {

class Sha256 {
 public:
  static constexpr size_t kBytes = 32;
  using Digest = std::array<uint8_t, kBytes>;

  // A digest of no bytes yet. Errors: kInternal naming OpenSSL's reason (it could not make or
  // start a digest context).
  static Result<Sha256> create();

  // Adds `n` bytes at `data` (n may be 0). Errors: kInternal naming OpenSSL's reason, or
  // after finish().
  Status update(const void* data, size_t n);
  // The digest of every byte added. Once: the digest takes no more bytes after it.
  // Errors: kInternal naming OpenSSL's reason, or on a second call.
  Result<Digest> finish();

 private:
  struct CtxFree {
    void operator()(evp_md_ctx_st* ctx) const;
  };
  using Ctx = std::unique_ptr<evp_md_ctx_st, CtxFree>;
  explicit Sha256(Ctx ctx) : ctx_(std::move(ctx)) {}
  Ctx ctx_;
  bool finished_ = false;
};

// The first `n` bytes of `digest` in lowercase hex (for messages and logs).
std::string hex_prefix(std::span<const uint8_t> digest, size_t n);

}  // namespace gs
