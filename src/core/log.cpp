// Logging setup: stderr (stdout carries program output such as `run --json`), level by name.
#include "core/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>

namespace gs {

void init_logging() { spdlog::set_default_logger(spdlog::stderr_color_mt("gemmaserve")); }

void set_log_level(std::string_view level) {
  spdlog::set_level(spdlog::level::from_str(std::string(level)));
}

}  // namespace gs
