// Placeholder until the CPU backend lands (issue 3).
#include "backend/cpu/cpu_backend.h"

namespace gs {

std::unique_ptr<Backend> create_cpu_backend(int /*n_threads*/) { return nullptr; }

}  // namespace gs
