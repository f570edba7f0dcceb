// The subcommands of the gemmaserve binary; each lives in its own cmd_<name>.cpp.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <utility>

namespace gs::cli {

// Registers a subcommand on `app`; returns it and the function that runs it (exit status).
using CommandEntry = std::pair<CLI::App*, std::function<int()>>;

CommandEntry register_serve(CLI::App& app);
CommandEntry register_run(CLI::App& app);
CommandEntry register_bench(CLI::App& app);
CommandEntry register_inspect(CLI::App& app);
CommandEntry register_synth(CLI::App& app);
CommandEntry register_tokenize(CLI::App& app);

}  // namespace gs::cli
