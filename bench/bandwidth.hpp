// Memory bandwidth measured in the same run as the workloads, for their memory-bound times.
#pragma once

namespace bench {

// Bytes per second of a plain streaming loop, dst[i] = src[i] + 1 over two arrays far larger
// than the caches (bytes moved counted as one read and one write per element), split over
// `threads` threads: the fastest of several passes.
double stream_bandwidth(int threads, bool quick);

}  // namespace bench
