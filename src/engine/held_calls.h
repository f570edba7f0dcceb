// Which planned calls the engine holds from the model's own opener (decisions 0065, 0067): one
// test for the runner that builds the constraint, the scheduler that tracks the open call, and
// the plan that tells the output parser a cut call header is no content.
#pragma once

#include "engine/engine.h"

namespace gs {

// True where `calls` is on with both markup tokens and the openers a call may begin with: from
// each <|tool_call> the model writes, the call's text is held to one of `calls.openers` and its
// arguments' grammar (tool_choice auto's lazy calls, the calls instead of a structured value,
// the calls after a forced one).
inline bool calls_held_from_opener(const ForcedCalls& calls) {
  return calls.on && calls.open_token >= 0 && calls.close_token >= 0 && !calls.openers.empty();
}

}  // namespace gs
