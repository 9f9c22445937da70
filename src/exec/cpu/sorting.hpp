// The scans (cumsum, cumprod) and argsort, along any axis, split over threads by line.
#pragma once

#include "exec/fusion.hpp"

namespace kiln::detail::cpu {

// Compute the scan-kind or sort-kind node `k.root` into `out` (always: there is no fallback).
void run_scan(const Kernel& k, Buffer& out);
void run_argsort(const Kernel& k, Buffer& out);

}  // namespace kiln::detail::cpu
