// Whether this build runs under AddressSanitizer (GCC's -fsanitize=address
// defines __SANITIZE_ADDRESS__; Clang says so through __has_feature). Our
// own allocators step aside then, so that ASan sees every block and a use
// after free is still caught.
#pragma once

namespace memshard::proxy {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif
#else
inline constexpr bool kAddressSanitizer = false;
#endif

}  // namespace memshard::proxy
