// Invariant checks: a failed GS_CHECK is a bug in gemmaserve, never a reaction to input.
#pragma once

#include <cstdio>
#include <cstdlib>

#define GS_CHECK(cond)                                                                   \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      std::fprintf(stderr, "gemmaserve: check failed at %s:%d: %s\n", __FILE__, __LINE__, \
                   #cond);                                                               \
      std::abort();                                                                      \
    }                                                                                    \
  } while (0)

#define GS_CHECK_MSG(cond, msg)                                                              \
  do {                                                                                       \
    if (!(cond)) {                                                                           \
      std::fprintf(stderr, "gemmaserve: check failed at %s:%d: %s (%s)\n", __FILE__, __LINE__, \
                   #cond, msg);                                                              \
      std::abort();                                                                          \
    }                                                                                        \
  } while (0)
