// The CPU backend: plain, readable, threaded; the numerical oracle for every other backend.
#pragma once

#include <memory>

#include "backend/backend.h"

namespace gs {

// n_threads <= 0: all cores. Weights are used in place (the host bytes given to
// upload_weight must outlive the backend); every op runs at once on the calling thread and
// the backend's worker threads.
std::unique_ptr<Backend> create_cpu_backend(int n_threads);

}  // namespace gs
