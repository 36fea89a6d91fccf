// GAMUT_TEST_UNDER_ASAN: defined in an AddressSanitizer build (tests that size stacks by it).
// Tests that limit the address space (RLIMIT_AS, `ulimit -v`) cannot run under AddressSanitizer:
// its shadow memory reserves terabytes of address space up front. .ci/run's sanitized build
// skips them (the plain build runs them).
#pragma once
#include <gtest/gtest.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GAMUT_TEST_UNDER_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define GAMUT_TEST_UNDER_ASAN 1
#endif

#ifdef GAMUT_TEST_UNDER_ASAN
#define SKIP_UNDER_ASAN() GTEST_SKIP() << "an address-space limit and AddressSanitizer's shadow memory do not mix"
#else
#define SKIP_UNDER_ASAN() (void)0
#endif
