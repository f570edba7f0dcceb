// POST /slots/{id_slot}?action=...: the request read and checked, the engine's answer in
// llama-server's shape (decision 0068).
#include "server/slot_actions.h"

#include <charconv>
#include <filesystem>

#include <fmt/format.h>

#include "server/json_input.h"

namespace gs::server {

namespace {

ApiError slot_error(const Status& status, std::string param = "") {
  ApiError e = api_error_from_status(status);
  switch (status.code()) {
    case StatusCode::kDataLoss:
      e = bad_request(status.message());
      break;
    case StatusCode::kFailedPrecondition:
      e.http_status = 409;
      e.type = "invalid_request_error";
      e.code = "slot_busy";
      break;
    default:
      break;
  }
  if ((e.http_status == 400 || e.http_status == 404) && e.param.empty()) e.param = std::move(param);
  return e;
}

SlotActionReply fail(ApiError e) {
  SlotActionReply r;
  r.error = std::move(e);
  return r;
}

}  // namespace

Status check_slot_filename(std::string_view name) {
  auto bad = [&](std::string_view why) {
    return make_status(StatusCode::kInvalidArgument, "filename: {}", why);
  };
  if (name.empty()) return bad("must not be empty");
  if (name.size() > kMaxSlotFilenameBytes) return bad(fmt::format("is longer than {} bytes", kMaxSlotFilenameBytes));
  if (name == "." || name == "..") return bad("must be a file name, not '.' or '..'");
  if (name.front() == '.') return bad("must not start with '.'");
  for (char c : name) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '/' || c == '\\') return bad("must be a plain file name inside --slot-save-path, without '/' or '\\'");
    if (u < 0x20 || u == 0x7f) return bad("must not hold control characters");
  }
  return {};
}

SlotActionReply run_slot_action(Engine& engine, const std::string& save_dir, std::string_view id_text,
                                std::string_view action, std::string_view body) {
  if (save_dir.empty()) {
    ApiError e;
    e.http_status = 501;
    e.type = "not_supported_error";
    e.code = "not_supported";
    e.message = "this server does not save, restore or erase slots: start it with --slot-save-path DIR";
    return fail(std::move(e));
  }
  int32_t id = -1;
  const auto [end, ec] = std::from_chars(id_text.data(), id_text.data() + id_text.size(), id);
  if (id_text.empty() || ec != std::errc() || end != id_text.data() + id_text.size() || id < 0) {
    return fail(bad_request(fmt::format("id_slot: '{}' is not a slot number", id_text.substr(0, 32)), "id_slot"));
  }
  SlotAction a;
  a.slot = id;
  if (action == "save") {
    a.kind = SlotActionKind::kSave;
  } else if (action == "restore") {
    a.kind = SlotActionKind::kRestore;
  } else if (action == "erase") {
    a.kind = SlotActionKind::kErase;
  } else {
    return fail(bad_request(fmt::format("action: '{}' is not one of save, restore, erase", action.substr(0, 32)), "action"));
  }
  std::string filename;
  if (a.kind != SlotActionKind::kErase) {
    Result<nlohmann::json> parsed = parse_json_object(body);
    if (!parsed.ok()) return fail(slot_error(parsed.status()));
    const auto it = parsed->find("filename");
    if (it == parsed->end() || !it->is_string()) {
      return fail(bad_request("filename: a string is required (a file name inside --slot-save-path)", "filename"));
    }
    filename = it->get<std::string>();
    if (Status st = check_slot_filename(filename); !st.ok()) return fail(slot_error(st, "filename"));
    a.path = (std::filesystem::path(save_dir) / filename).string();
  }
  Result<SlotActionResult> done = engine.slot_action(a);
  if (!done.ok()) {
    const bool about_slot = done.status().message().rfind("id_slot", 0) == 0;
    return fail(slot_error(done.status(), about_slot ? "id_slot" : "filename"));
  }
  SlotActionReply r;
  r.ok = true;
  switch (a.kind) {
    case SlotActionKind::kSave:
      r.body = {{"id_slot", id},
                {"filename", filename},
                {"n_saved", done->n_tokens},
                {"n_written", done->n_bytes},
                {"timings", {{"save_ms", done->ms}}}};
      break;
    case SlotActionKind::kRestore:
      r.body = {{"id_slot", id},
                {"filename", filename},
                {"n_restored", done->n_tokens},
                {"n_read", done->n_bytes},
                {"timings", {{"restore_ms", done->ms}}}};
      break;
    case SlotActionKind::kErase:
      r.body = {{"id_slot", id}, {"n_erased", done->n_tokens}};
      break;
  }
  return r;
}

}  // namespace gs::server
