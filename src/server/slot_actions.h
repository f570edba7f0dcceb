// llama-server's slot actions, POST /slots/{id_slot}?action=save|restore|erase (decision
// 0068): a free slot's processed prompt saved to a file under --slot-save-path, restored from
// one, or dropped. The engine does the work on its own thread (Engine::slot_action).
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

#include "core/status.h"
#include "engine/engine.h"
#include "server/api_error.h"

namespace gs::server {

// Longest slot file name accepted, in bytes (a common file system's limit on a name).
inline constexpr size_t kMaxSlotFilenameBytes = 255;

// A slot file name: one plain name inside the save folder. Errors (kInvalidArgument, naming
// `filename`): empty, longer than kMaxSlotFilenameBytes, a path separator ('/' or '\'), "."
// or "..", a leading '.', a NUL or other control byte.
Status check_slot_filename(std::string_view filename);

// What an action answers: the JSON body with status 200, or an error.
struct SlotActionReply {
  bool ok = false;
  nlohmann::json body;  // ok
  ApiError error;       // !ok
};

// Runs one action. `save_dir`: --slot-save-path ("" when not given: every action is a 501,
// type not_supported_error). `id_text`: the path's {id_slot}; `action`: the query's action;
// `body`: the request body (save and restore read its "filename"). Errors: 400 (id_slot not
// a slot number or out of range, an unknown action, a bad or missing filename, a file that
// is not a slot file of this model and cache, or is corrupt or truncated), 404 (restore: no
// such file), 409 (a request is running in the slot), 503 (loading, shutting down), 500
// (the file could not be written or read).
SlotActionReply run_slot_action(Engine& engine, const std::string& save_dir, std::string_view id_text,
                                std::string_view action, std::string_view body);

}  // namespace gs::server
