// A byte range of a text (offset and length), shared by the chat renderer and the tokenizer.
#pragma once

#include <cstddef>

namespace gs::text {

struct TextSpan {
  size_t offset = 0;
  size_t length = 0;
};

}  // namespace gs::text
