// SHA-256 through OpenSSL's EVP digest interface; OpenSSL's errors become Status errors.
#include "engine/sha256.h"

#include <openssl/err.h>
#include <openssl/evp.h>

#include <algorithm>

#include <fmt/format.h>

namespace gs {

namespace {

// kInternal: `what` failed, with the reason at the head of OpenSSL's error queue (which it
// empties, so that a later failure is not given an old reason).
Status openssl_error(const char* what) {
  char reason[256] = "no reason given";
  if (const unsigned long e = ERR_get_error(); e != 0) ERR_error_string_n(e, reason, sizeof(reason));
  ERR_clear_error();
  return make_status(StatusCode::kInternal, "SHA-256: {} failed in OpenSSL ({})", what, reason);
}

}  // namespace

void Sha256::CtxFree::operator()(evp_md_ctx_st* ctx) const { EVP_MD_CTX_free(ctx); }

Result<Sha256> Sha256::create() {
  Ctx ctx(EVP_MD_CTX_new());
  if (!ctx) return openssl_error("EVP_MD_CTX_new");
  if (EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) return openssl_error("EVP_DigestInit_ex");
  return Sha256(std::move(ctx));
}

Status Sha256::update(const void* data, size_t n) {
  if (finished_) return Status(StatusCode::kInternal, "SHA-256: bytes added after the digest was finished");
  if (n > 0 && EVP_DigestUpdate(ctx_.get(), data, n) != 1) return openssl_error("EVP_DigestUpdate");
  return Status::ok_status();
}

Result<Sha256::Digest> Sha256::finish() {
  if (finished_) return Status(StatusCode::kInternal, "SHA-256: the digest was already finished");
  finished_ = true;
  Digest d{};
  unsigned int n = 0;
  if (EVP_DigestFinal_ex(ctx_.get(), d.data(), &n) != 1) return openssl_error("EVP_DigestFinal_ex");
  if (n != kBytes) return make_status(StatusCode::kInternal, "SHA-256: OpenSSL gave a digest of {} bytes", n);
  return d;
}

std::string hex_prefix(std::span<const uint8_t> digest, size_t n) {
  std::string s;
  for (size_t i = 0; i < std::min(n, digest.size()); ++i) s += fmt::format("{:02x}", digest[i]);
  return s;
}

}  // namespace gs
