// The CPU backend: plain, readable, threaded; the numerical oracle for every other backend.
#pragma once

#include <memory>

#include "backend/backend.h"

namespace gs {

// n_threads <= 0: all cores.
std::unique_ptr<Backend> create_cpu_backend(int n_threads);

}  // namespace gs
