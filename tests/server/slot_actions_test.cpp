// llama-server's slot actions (decision 0068): POST /slots/{id}?action=save|restore|erase on the
// shakes model, served live: a restored prompt is reused as a computed one (the same greedy
// text, counted as cached), across slots and server restarts; what is refused, and that a
// refusal leaves the slot as it was.
#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "common/shakes.h"
#include "common/test_paths.h"
#include "model/synth_writer.h"
#include "server/http_server.h"
#include "server/shakes_http.h"
#include "server/slot_actions.h"

namespace gs {
namespace {

using nlohmann::json;

// The shakes engine behind a live server (test::ShakesHttp) with --slot-save-path `dir` ("" for
// none); `model` instead of the shakes target (and no drafter) when not empty.
class SlotServer {
 public:
  explicit SlotServer(const std::string& dir, bool drafter = false, const std::string& model = "",
                      GgmlType kv_type = GgmlType::F16) {
    EngineOptions o = test::shakes_engine_options(drafter, /*adaptive=*/false);
    o.kv_type = kv_type;
    if (!model.empty()) {
      o.model_path = model;
      o.drafter_path.clear();
    }
    server::ServerOptions so;
    so.slot_save_path = dir;
    shakes_.start(o, so);
  }

  httplib::Result post(const std::string& path, const std::string& body) const { return shakes_.post_body(path, body); }
  // POST /slots/{slot}?action=... with {"filename": file} (no body when file is empty).
  httplib::Result action(int slot, const std::string& action, const std::string& file = "") const {
    const std::string body = file.empty() ? "" : json{{"filename", file}}.dump();
    return post("/slots/" + std::to_string(slot) + "?action=" + action, body);
  }
  // A greedy /completion of `prompt`: the answer.
  json complete(const std::string& prompt, int n_predict = 12) const {
    auto r = post("/completion", json{{"prompt", prompt}, {"n_predict", n_predict}, {"temperature", 0}}.dump());
    EXPECT_TRUE(r);
    if (!r) return json();
    EXPECT_EQ(r->status, 200) << r->body;
    return json::parse(r->body);
  }
  Engine& engine() { return shakes_.engine(); }
  int port() const { return shakes_.http().port(); }

 private:
  test::ShakesHttp shakes_;
};

const char* const kPrompt =
    "ROMEO:\nBut soft, what light through yonder window breaks?\nIt is the east, and Juliet is the sun.\nJULIET:\n";

// The body of a 200 answer (a test failure otherwise).
json ok_body(const httplib::Result& r) {
  EXPECT_TRUE(r);
  if (!r) return json();
  EXPECT_EQ(r->status, 200) << r->body;
  return r->status == 200 ? json::parse(r->body) : json();
}

// Saves every slot as "<tag><slot>.bin" and returns the slot that held the most tokens.
int save_fullest(const SlotServer& s, const std::string& tag, int* n_saved) {
  int best = -1;
  *n_saved = -1;
  for (int slot = 0; slot < 2; ++slot) {
    const json j = ok_body(s.action(slot, "save", tag + std::to_string(slot) + ".bin"));
    if (j.is_null()) continue;
    if (j["n_saved"].get<int>() > *n_saved) {
      *n_saved = j["n_saved"].get<int>();
      best = slot;
    }
  }
  return best;
}

TEST(SlotActions, FilenamesThatAreNotPlainNamesAreRefused) {
  EXPECT_TRUE(server::check_slot_filename("prompt.bin").ok());
  EXPECT_TRUE(server::check_slot_filename("a b-c_1.bin").ok());
  for (const std::string& bad : {std::string(""), std::string("."), std::string(".."), std::string("../x.bin"),
                                std::string("a/b.bin"), std::string("/etc/passwd"), std::string("a\\b"),
                                std::string(".hidden"), std::string("a\nb"), std::string("a\0b", 3),
                                std::string(256, 'x')}) {
    const Status st = server::check_slot_filename(bad);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(st.message().find("filename"), std::string::npos) << st.message();
  }
}

TEST(SlotActionsShakes, RefusedWithoutSlotSavePath) {
  SlotServer s("");
  // The route answers other methods with 405 and a CORS preflight with 204.
  httplib::Client c("127.0.0.1", s.port());
  auto get = c.Get("/slots/0?action=erase");
  ASSERT_TRUE(get);
  EXPECT_EQ(get->status, 405);
  EXPECT_EQ(get->get_header_value("Allow"), "POST");
  httplib::Headers asked = {{"Origin", "http://example.com"}, {"Access-Control-Request-Method", "POST"}};
  auto preflight = c.Options("/slots/0", asked);
  ASSERT_TRUE(preflight);
  EXPECT_EQ(preflight->status, 204);
  EXPECT_EQ(preflight->get_header_value("Access-Control-Allow-Methods"), "POST, OPTIONS");
  for (const char* action : {"save", "restore", "erase"}) {
    auto r = s.action(0, action, "x.bin");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 501) << r->body;
    const json e = json::parse(r->body)["error"];
    EXPECT_EQ(e["type"], "not_supported_error");
    EXPECT_NE(e["message"].get<std::string>().find("--slot-save-path"), std::string::npos);
  }
}

TEST(SlotActionsShakes, EraseDropsTheSlotsPrompt) {
  const test::ScratchDir dir("slot-erase");
  SlotServer s(dir.path.string());
  const json cold = s.complete(kPrompt);
  const int n_prompt = cold["tokens_evaluated"].get<int>();
  int n_erased = 0;
  for (int slot = 0; slot < 2; ++slot) n_erased += ok_body(s.action(slot, "erase"))["n_erased"].get<int>();
  // The prompt and every generated token but the last.
  EXPECT_EQ(n_erased, n_prompt + cold["tokens_predicted"].get<int>() - 1);
  EXPECT_EQ(ok_body(s.action(0, "erase")), (json{{"id_slot", 0}, {"n_erased", 0}}));
  const json again = s.complete(kPrompt);
  EXPECT_EQ(again["tokens_cached"], 0) << again.dump();
  EXPECT_EQ(again["content"], cold["content"]);
}

// Saved, erased, restored (into the other slot too): the same greedy answer as a cold run,
// the prompt counted as cached; with and without the drafter (which reads the target's KV).
TEST(SlotActionsShakes, RestoredPromptIsReusedAndGivesTheColdAnswer) {
  for (const bool drafter : {false, true}) {
    SCOPED_TRACE(drafter ? "drafter" : "no drafter");
    const test::ScratchDir dir("slot-restore");
    SlotServer s(dir.path.string(), drafter);
    const json cold = s.complete(kPrompt);
    const int n_prompt = cold["tokens_evaluated"].get<int>();
    int n_saved = 0;
    const int slot = save_fullest(s, "a", &n_saved);
    ASSERT_GE(slot, 0);
    EXPECT_EQ(n_saved, n_prompt + cold["tokens_predicted"].get<int>() - 1);
    const std::string file = "a" + std::to_string(slot) + ".bin";
    ASSERT_TRUE(std::filesystem::exists(dir.path / file));
    const uint64_t file_bytes = std::filesystem::file_size(dir.path / file);
    for (int k = 0; k < 2; ++k) ok_body(s.action(k, "erase"));
    for (const int target : {slot, 1 - slot}) {
      SCOPED_TRACE(target == slot ? "same slot" : "other slot");
      const json r = ok_body(s.action(target, "restore", file));
      EXPECT_EQ(r["id_slot"], target);
      EXPECT_EQ(r["filename"], file);
      EXPECT_EQ(r["n_restored"], n_saved);
      EXPECT_EQ(r["n_read"].get<uint64_t>(), file_bytes);
      EXPECT_TRUE(r["timings"]["restore_ms"].is_number());
      const json warm = s.complete(kPrompt);
      EXPECT_EQ(warm["content"], cold["content"]);
      EXPECT_EQ(warm["tokens_cached"], n_prompt - 1) << warm.dump();
      for (int k = 0; k < 2; ++k) ok_body(s.action(k, "erase"));
    }
  }
}

TEST(SlotActionsShakes, RestoreAfterARestart) {
  const test::ScratchDir dir("slot-restart");
  json cold;
  int n_saved = 0;
  std::string file;
  {
    SlotServer s(dir.path.string());
    cold = s.complete(kPrompt);
    const int slot = save_fullest(s, "r", &n_saved);
    ASSERT_GE(slot, 0);
    file = "r" + std::to_string(slot) + ".bin";
  }
  SlotServer s(dir.path.string());
  EXPECT_EQ(ok_body(s.action(1, "restore", file))["n_restored"], n_saved);
  const json warm = s.complete(kPrompt);
  EXPECT_EQ(warm["content"], cold["content"]);
  EXPECT_EQ(warm["tokens_cached"], cold["tokens_evaluated"].get<int>() - 1);
}

// Bug-case 63 (a restored slot blocked the lookup of a longer cached state, which the next
// turn then prefilled again): a shorter prompt restored into one slot does not hide the longer
// conversation the other slot holds; the next turn reuses the longer one, and its answer is
// the one computed from scratch.
TEST(SlotActionsShakes, ARestoredShorterPromptDoesNotHideALongerCachedOne) {
  const test::ScratchDir dir("slot-longer");
  SlotServer s(dir.path.string());
  const json first = s.complete(kPrompt);
  int n_short = 0;
  const int held = save_fullest(s, "short", &n_short);
  ASSERT_GE(held, 0);
  // The conversation goes on in the slot that holds its beginning.
  const std::string longer = std::string(kPrompt) + first["content"].get<std::string>() +
                             "\nROMEO:\nWhat, shall this speech be spoke for our excuse?\nJULIET:\n";
  const json second = s.complete(longer);
  EXPECT_GT(second["tokens_cached"].get<int>(), 0) << second.dump();
  const int n_longer = second["tokens_evaluated"].get<int>();
  ASSERT_GT(n_longer, n_short + 10);
  // The short file restored into the other slot.
  const int other = 1 - held;
  EXPECT_EQ(ok_body(s.action(other, "restore", "short" + std::to_string(held) + ".bin"))["n_restored"], n_short);
  const std::string next =
      longer + second["content"].get<std::string>() + "\nROMEO:\nI take thee at thy word.\nJULIET:\n";
  const json third = s.complete(next);
  // More than the restored slot could give: the longer state was found.
  EXPECT_GT(third["tokens_cached"].get<int>(), n_short + 10) << third.dump();
  const json cold = ok_body(s.post(
      "/completion", json{{"prompt", next}, {"n_predict", 12}, {"temperature", 0}, {"cache_prompt", false}}.dump()));
  EXPECT_EQ(cold["tokens_cached"], 0) << cold.dump();
  EXPECT_EQ(third["content"], cold["content"]);
}

// Every refusal is a 4xx naming what is wrong, and the slot keeps its prompt.
TEST(SlotActionsShakes, BadRequestsAndFilesAreRefusedAndTheSlotIsKept) {
  const test::ScratchDir dir("slot-refusals");
  SlotServer s(dir.path.string());
  const json cold = s.complete(kPrompt);
  int n_saved = 0;
  const int slot = save_fullest(s, "g", &n_saved);
  ASSERT_GE(slot, 0);
  const std::filesystem::path good = dir.path / ("g" + std::to_string(slot) + ".bin");
  std::string bytes;
  {
    std::ifstream in(good, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  ASSERT_GT(bytes.size(), 1000u);
  auto write = [&](const std::string& name, const std::string& content) {
    std::ofstream out(dir.path / name, std::ios::binary);
    out << content;
  };
  std::string flipped = bytes;
  flipped[bytes.size() / 2] ^= 0x40;
  write("flipped.bin", flipped);
  write("truncated.bin", bytes.substr(0, bytes.size() - 100));
  write("longer.bin", bytes + "x");
  write("foreign.bin", std::string(4096, 'z'));
  write("empty.bin", "");
  std::string format1 = bytes;  // what an older gemmaserve's file starts with (decision 0070)
  format1[8] = 1;
  write("format1.bin", format1);
  auto expect = [&](const httplib::Result& r, int status, const std::string& param, const std::string& says) {
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, status) << r->body;
    const json e = json::parse(r->body)["error"];
    if (!param.empty()) {
      EXPECT_EQ(e["param"], param) << r->body;
    }
    EXPECT_NE(e["message"].get<std::string>().find(says), std::string::npos) << r->body;
  };
  for (const char* name : {"flipped.bin", "truncated.bin", "longer.bin", "foreign.bin", "empty.bin", "format1.bin"}) {
    SCOPED_TRACE(name);
    expect(s.action(slot, "restore", name), 400, "filename", name);
  }
  expect(s.action(slot, "restore", "flipped.bin"), 400, "filename", "checksum");
  expect(s.action(slot, "restore", "truncated.bin"), 400, "filename", "truncated");
  expect(s.action(slot, "restore", "foreign.bin"), 400, "filename", "not a gemmaserve slot file");
  expect(s.action(slot, "restore", "format1.bin"), 400, "filename", "written by an older gemmaserve, format 1");
  expect(s.action(slot, "restore", "format1.bin"), 400, "filename", "save the slot again");
  expect(s.action(slot, "restore", "missing.bin"), 404, "filename", "missing.bin");
  for (const std::string& bad : {std::string("../x.bin"), std::string("a/b.bin"), std::string(".."),
                                 std::string(".hidden"), std::string(300, 'x')}) {
    expect(s.action(slot, "save", bad), 400, "filename", "filename");
    expect(s.action(slot, "restore", bad), 400, "filename", "filename");
  }
  expect(s.post("/slots/0?action=save", "{}"), 400, "filename", "filename");
  expect(s.post("/slots/0?action=save", R"({"filename": 7})"), 400, "filename", "filename");
  expect(s.post("/slots/0?action=save", "not json"), 400, "", "");
  expect(s.action(slot, "explode"), 400, "action", "explode");
  expect(s.post("/slots/0", ""), 400, "action", "action");
  expect(s.action(2, "erase"), 400, "id_slot", "out of range");
  expect(s.post("/slots/abc?action=erase", ""), 400, "id_slot", "abc");
  expect(s.post("/slots/-1?action=erase", ""), 400, "id_slot", "-1");
  EXPECT_FALSE(std::filesystem::exists(dir.path.parent_path() / "x.bin"));
  // Nothing was lost: the slot still serves its prompt from its cache.
  const json warm = s.complete(kPrompt);
  EXPECT_EQ(warm["content"], cold["content"]);
  EXPECT_EQ(warm["tokens_cached"], cold["tokens_evaluated"].get<int>() - 1);
  // No temporary or half-written file was left.
  for (const auto& entry : std::filesystem::directory_iterator(dir.path)) {
    EXPECT_EQ(entry.path().string().find(".tmp."), std::string::npos) << entry.path();
  }
}

// A file saved by a server of another model (a synthetic Gemma 4 of other shapes) is refused.
TEST(SlotActionsShakes, AFileOfAnotherModelIsRefused) {
  const test::ScratchDir dir("slot-foreign");
  const std::string synth_path = (dir.path / "synth.gguf.model").string();
  auto written = synth::write_synth(synth::preset_config(synth::Preset::kTiny), synth_path, 2);
  ASSERT_TRUE(written.ok()) << written.status().to_string();
  {
    SlotServer other(dir.path.string(), /*drafter=*/false, synth_path);
    GenerationRequest req;
    req.prompt = {2, 500, 501, 502, 503, 504, 505, 506};
    req.max_tokens = 2;
    req.sampling.temperature = 0;
    test::run_request(other.engine(), req);
    int n_saved = 0;
    const int slot = save_fullest(other, "synth", &n_saved);
    ASSERT_GE(slot, 0);
    std::filesystem::rename(dir.path / ("synth" + std::to_string(slot) + ".bin"), dir.path / "other-model.bin");
  }
  SlotServer s(dir.path.string());
  auto r = s.action(0, "restore", "other-model.bin");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400) << r->body;
  EXPECT_NE(r->body.find("another model"), std::string::npos) << r->body;
}

// A file saved from an f16 cache is refused by a server whose cache is f32 (--kv-type).
TEST(SlotActionsShakes, AFileOfAnotherKvTypeIsRefused) {
  const test::ScratchDir dir("slot-kv-type");
  int n_saved = 0;
  int slot = -1;
  {
    SlotServer s(dir.path.string());
    s.complete(kPrompt);
    slot = save_fullest(s, "f16-", &n_saved);
    ASSERT_GE(slot, 0);
  }
  SlotServer s(dir.path.string(), /*drafter=*/false, "", GgmlType::F32);
  auto r = s.action(0, "restore", "f16-" + std::to_string(slot) + ".bin");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400) << r->body;
  EXPECT_NE(r->body.find("--kv-type"), std::string::npos) << r->body;
  // Its own files it restores.
  s.complete(kPrompt);
  const int own = save_fullest(s, "f32-", &n_saved);
  ASSERT_GE(own, 0);
  EXPECT_EQ(ok_body(s.action(1 - own, "restore", "f32-" + std::to_string(own) + ".bin"))["n_restored"], n_saved);
}

// The longest allowed file name (255 bytes) saves and restores (its temporary file's name was
// "<name>.tmp.<pid>", past NAME_MAX: a 500 for a name the route had accepted; decision 0069).
TEST(SlotActionsShakes, TheLongestAllowedFilenameSavesAndRestores) {
  const test::ScratchDir dir("slot-longname");
  SlotServer s(dir.path.string());
  const json cold = s.complete(kPrompt);
  const std::string stem(250, 'n');  // then the slot's digit and ".bin": 255 bytes
  ASSERT_EQ(stem.size() + 5, server::kMaxSlotFilenameBytes);
  int n_saved = 0;
  const int slot = save_fullest(s, stem, &n_saved);
  ASSERT_GE(slot, 0);
  for (int k = 0; k < 2; ++k) ok_body(s.action(k, "erase"));
  EXPECT_EQ(ok_body(s.action(1 - slot, "restore", stem + std::to_string(slot) + ".bin"))["n_restored"], n_saved);
  const json warm = s.complete(kPrompt);
  EXPECT_EQ(warm["content"], cold["content"]);
  EXPECT_EQ(warm["tokens_cached"], cold["tokens_evaluated"].get<int>() - 1);
}

// A slot that holds a running request is refused (409) and the request goes on.
TEST(SlotActionsShakes, ABusySlotIsRefused) {
  const test::ScratchDir dir("slot-busy");
  SlotServer s(dir.path.string());
  auto tok = test::shakes_tokenizer();
  GenerationRequest req;
  req.prompt = tok->encode(kPrompt, /*add_special=*/true, /*parse_special=*/true);
  req.max_tokens = 900;
  req.ignore_eog = true;
  auto stream = s.engine().submit(req);
  ASSERT_TRUE(stream.ok());
  StreamEvent ev;
  ASSERT_TRUE((*stream)->next(&ev, std::chrono::seconds(60)));  // it runs: it holds a slot
  int n_busy = 0;
  for (int slot = 0; slot < 2; ++slot) {
    const EngineMetrics m = s.engine().metrics();
    if (!m.slots[static_cast<size_t>(slot)].processing) continue;
    ++n_busy;
    for (const char* action : {"save", "erase", "restore"}) {
      auto r = s.action(slot, action, "busy.bin");
      ASSERT_TRUE(r);
      EXPECT_EQ(r->status, 409) << action << " " << r->body;
      EXPECT_NE(r->body.find("processing"), std::string::npos) << r->body;
    }
  }
  EXPECT_EQ(n_busy, 1);
  EXPECT_FALSE(std::filesystem::exists(dir.path / "busy.bin"));
  (*stream)->cancel();
  while ((*stream)->next(&ev, std::chrono::seconds(60)) && ev.kind == StreamEvent::Kind::kTokens) {
  }
  EXPECT_EQ(ev.kind, StreamEvent::Kind::kDone);
}

}  // namespace
}  // namespace gs
