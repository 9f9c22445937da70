// The graph lock. An evaluation changes nodes that other graphs share: the executor fills in and
// releases results, and an evaluated node becomes a leaf (its op and inputs change). Building a
// node reads those fields of its inputs, and walking a graph reads the inputs. An evaluation
// holds the lock exclusively; building and walking hold it shared, so one thread may build on a
// node, or differentiate through it, while another thread evaluates it, as flint.h promises.
//
// The read lock is re-entrant: a builder called while its thread holds either lock already
// (gradients() builds the backward graph under one read lock) does not lock again.
#pragma once

namespace kiln::detail {

class GraphReadLock {
 public:
  GraphReadLock();
  ~GraphReadLock();
  GraphReadLock(const GraphReadLock&) = delete;
  GraphReadLock& operator=(const GraphReadLock&) = delete;

 private:
  bool locked_;
};

// Throws internal_error where this thread holds the lock already: waiting would deadlock.
class GraphWriteLock {
 public:
  GraphWriteLock();
  ~GraphWriteLock();
  GraphWriteLock(const GraphWriteLock&) = delete;
  GraphWriteLock& operator=(const GraphWriteLock&) = delete;
};

}  // namespace kiln::detail
