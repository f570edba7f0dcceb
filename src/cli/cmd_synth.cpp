// gemmaserve synth: placeholder until its issue lands.
#include <cstdio>

#include "commands.h"

namespace gs::cli {

CommandEntry register_synth(CLI::App& app) {
  CLI::App* sub = app.add_subcommand("synth", "(not implemented yet)");
  return {sub, [] {
            std::fprintf(stderr, "gemmaserve synth: not implemented yet\n");
            return 2;
          }};
}

}  // namespace gs::cli
