// Under LeakSanitizer, the leak check runs when the tests have finished, while the OpenCL
// driver's worker threads are still parked, rather than at process exit: there PoCL tears those
// threads down while LeakSanitizer stops every thread, and its tracer has crashed on that race
// ("Tracer caught signal 11", in two clean-clone runs of the ASan suite). Leaks are found the same:
// what static objects still own is reachable at either point. The check at exit is then skipped.
#include <gtest/gtest.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(leak_sanitizer)
#define KILN_TESTS_HAVE_LSAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define KILN_TESTS_HAVE_LSAN 1
#endif

#ifdef KILN_TESTS_HAVE_LSAN
#include <sanitizer/lsan_interface.h>

namespace {

class LeakCheckAtEnd final : public testing::Environment {
 public:
  void TearDown() override { __lsan_do_leak_check(); }
};

const testing::Environment* const registered =
    testing::AddGlobalTestEnvironment(new LeakCheckAtEnd);

}  // namespace
#endif
