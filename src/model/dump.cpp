// The directory dump of named intermediates.
#include "model/dump.h"

#include <cstdio>
#include <filesystem>
#include <memory>

#include "core/log.h"

namespace gs {

Result<DumpFn> make_dir_dump(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return make_status(StatusCode::kIo, "cannot create dump directory {}: {}", dir, ec.message());
  auto counter = std::make_shared<int64_t>(0);
  return DumpFn([dir, counter](const DumpTensor& t) {
    const std::string file = fmt::format("{:06d}-{}-{}.f32", (*counter)++, t.layer, t.name);
    std::FILE* f = std::fopen((dir + "/" + file).c_str(), "wb");
    if (!f) {
      GS_LOG_WARN("dump: cannot write {}/{}", dir, file);
      return;
    }
    std::fwrite(t.data, sizeof(float), static_cast<size_t>(t.rows * t.cols), f);
    std::fclose(f);
    if (std::FILE* idx = std::fopen((dir + "/index.txt").c_str(), "a")) {
      std::fprintf(idx, "%s %.*s %d %lld %lld\n", file.c_str(), static_cast<int>(t.name.size()), t.name.data(), t.layer,
                   static_cast<long long>(t.rows), static_cast<long long>(t.cols));
      std::fclose(idx);
    }
  });
}

}  // namespace gs
