// `gemmaserve bench --ops --ops-only ramp`: what a decode matvec costs beyond its bytes. One
// weight type and input width, the output width swept, one activation row; each size timed
// two ways inside a replayed step:
//   - "chain": matvecs back to back, each on its own weight copy (under PDL the next one's
//     weights start streaming while this one drains);
//   - "dependent": each matvec followed by a one-row `scale` of its input, which the next
//     matvec reads (so its operand is converted again: two small kernels, each waiting for
//     the one before, between matvecs, as in a decode step's chains).
// A least-squares line t = fixed + bytes / rate over the sweep splits each way's time into a
// fixed cost a matvec (ramp, drain and launch, in seconds) and a marginal rate (bytes/s).
#pragma once

#include <vector>

#include "backend/backend.h"
#include "bench_util.h"

namespace gs::cli {

// Adds one row per size and way, then one "fit" row per way (seconds = the fixed cost,
// gbs = the marginal rate). `copy_bw`: bytes/s of this run's copy (the percentage's limit).
Status bench_matvec_ramp(Backend& b, double copy_bw, bool quick, std::vector<BenchRow>& rows);

}  // namespace gs::cli
