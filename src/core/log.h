// Logging through spdlog; one place to configure level and format.
#pragma once

#include <spdlog/spdlog.h>

#include <string_view>

namespace gs {

// Sends every log line to stderr; call once at program start, before any logging.
void init_logging();

// Sets the global level from a name ("trace", "debug", "info", "warn", "error", "off").
void set_log_level(std::string_view level);

}  // namespace gs

#define GS_LOG_DEBUG(...) ::spdlog::debug(__VA_ARGS__)
#define GS_LOG_INFO(...) ::spdlog::info(__VA_ARGS__)
#define GS_LOG_WARN(...) ::spdlog::warn(__VA_ARGS__)
#define GS_LOG_ERROR(...) ::spdlog::error(__VA_ARGS__)
