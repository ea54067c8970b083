// turnstile/source_location.hpp: SourceLocation, a place in the source (file,
// function, line), for diagnostics that name where something was created.
//
// std::source_location where the standard library provides it; clang 14 with
// libstdc++ 12 has none (libstdc++ needs __builtin_source_location, which clang
// gained in 15), so there the same members come from the builtins clang has,
// evaluated at the call site like std::source_location::current(). Used by Scope
// (the [RT-5.4] message) and by the model build's Sync policy
// (model/relacy_sync.hpp), so both compilers build both.
// Thread safety: a value type; nothing shared.
#pragma once

#include <cstdint>
#include <version>
#if defined(__cpp_lib_source_location)
#include <source_location>
#endif

namespace turnstile {

// A place in the source: std::source_location where the standard library has
// it; otherwise (libstdc++ under clang 14, which lacks the builtin it needs) the
// same members filled by the compiler's __builtin_FILE/LINE/FUNCTION.
#if defined(__cpp_lib_source_location)
using SourceLocation = std::source_location;
#else
class SourceLocation {
 public:
  static constexpr SourceLocation current(const char* file = __builtin_FILE(),
                                          const char* function = __builtin_FUNCTION(),
                                          std::uint_least32_t line = __builtin_LINE()) noexcept {
    SourceLocation l;
    l.file_ = file;
    l.function_ = function;
    l.line_ = line;
    return l;
  }
  constexpr const char* file_name() const noexcept { return file_; }
  constexpr const char* function_name() const noexcept { return function_; }
  constexpr std::uint_least32_t line() const noexcept { return line_; }
  constexpr std::uint_least32_t column() const noexcept { return 0; }

 private:
  const char* file_ = "";
  const char* function_ = "";
  std::uint_least32_t line_ = 0;
};
#endif

}  // namespace turnstile
