// Logging setup: stderr, level chosen by name.
#include "core/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>

namespace gs {

void set_log_level(std::string_view level) {
  spdlog::set_level(spdlog::level::from_str(std::string(level)));
}

}  // namespace gs
