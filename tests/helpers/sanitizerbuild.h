// ACCEL_UNDER_SANITIZER: defined when this file is compiled with a sanitizer that reserves shadow
// memory and slows every access (AddressSanitizer, ThreadSanitizer, MemorySanitizer; GCC and
// clang spell it differently). Tests bound memory and time of the programs they start; those
// bounds are for the normal build, and a test widens them (saying so) under a sanitizer.
#pragma once

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define ACCEL_UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(memory_sanitizer) || __has_feature(thread_sanitizer)
#define ACCEL_UNDER_SANITIZER 1
#endif
#endif
