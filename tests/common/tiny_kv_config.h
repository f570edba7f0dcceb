// A two-layer Gemma4Config for KV cache tests (no weights): layer 0 sliding (window 4, one KV
// head of dim 4), layer 1 full (one KV head of dim 8), n_ctx_train 64.
#pragma once

#include "model/gemma4_config.h"

namespace gs {

inline Gemma4Config tiny_kv_config() {
  Gemma4Config c;
  c.n_layer = 2;
  c.n_embd = 8;
  c.n_ctx_train = 64;
  c.sliding_window = 4;
  c.layers.resize(2);
  c.layers[0] = {true, 2, 1, 4, 4, 8, 10000.0f, true, 0};
  c.layers[1] = {false, 2, 1, 8, 8, 8, 1e6f, false, 1};
  return c;
}

}  // namespace gs
