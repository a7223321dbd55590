// A small test harness in the style of LevelDB's (googletest is not available
// offline). Tests are registered with
//
//   TEST(Suite, Name) {
//     ASSERT_OK(DoSomething());
//     ASSERT_EQ(expected, actual) << "more context";
//   }
//
// A failed ASSERT_* throws, which ends the current test (not the process); the
// runner (testharness.cc) catches it, reports "not ok" and continues with the
// next test. ASSERT_* must therefore only be used on the test's own thread:
// other threads record what they saw and the test asserts after joining them.
//
// The binary runs every test, or those whose "Suite.Name" contains argv[1],
// and prints one line per test ("ok Suite.Name" or "not ok Suite.Name <why>"),
// which test/native/engine-tests.test.ts parses.

#ifndef OYSTER_TEST_TESTHARNESS_H_
#define OYSTER_TEST_TESTHARNESS_H_

#include <cstdint>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>

#include "util/status.h"

namespace oyster {
namespace test {

// The directory of the running test, created on first use (mkdtemp under
// $TMPDIR or /tmp). It is removed after the test if it passed and kept for
// inspection otherwise.
const std::string& TmpDir();

// A seed for the current test's random data (fixed, so runs are repeatable).
uint64_t RandomSeed();

// Prints a line of diagnostics ("# ...") between the test results.
void Note(const std::string& line);

namespace internal {

using TestFn = void (*)();
bool RegisterTest(const char* suite, const char* name, TestFn fn);

// What a failed assertion throws. Deliberately not a std::exception, so that
// code under test catching std::exception cannot swallow it.
struct AssertionFailure {
  std::string message;
};

// Collects the message of a failed assertion.
class Message {
 public:
  Message(const char* file, int line) { ss_ << file << ":" << line << ": "; }
  template <typename T>
  Message& operator<<(const T& v) {
    ss_ << v;
    return *this;
  }
  std::string str() const { return ss_.str(); }

 private:
  std::ostringstream ss_;
};

// `Thrower() = Message(...) << ...` throws once the whole message is built
// (assignment binds more loosely than <<).
struct Thrower {
  [[noreturn]] void operator=(const Message& m) const { throw AssertionFailure{m.str()}; }
};

// Prints a value for a failure message: integers (also 1-byte ones) as
// numbers, strings quoted and shortened, anything without operator<< as "?".
template <typename T, typename = void>
struct Streamable : std::false_type {};
template <typename T>
struct Streamable<T, std::void_t<decltype(std::declval<std::ostream&>() << std::declval<const T&>())>>
    : std::true_type {};

std::string PrintString(const std::string& s);

template <typename T>
std::string Print(const T& v) {
  std::ostringstream ss;
  if constexpr (std::is_same_v<T, bool>) {
    ss << (v ? "true" : "false");
  } else if constexpr (std::is_integral_v<T>) {
    if constexpr (std::is_signed_v<T>) {
      ss << static_cast<long long>(v);
    } else {
      ss << static_cast<unsigned long long>(v);
    }
  } else if constexpr (std::is_enum_v<T>) {
    ss << static_cast<long long>(v);
  } else if constexpr (std::is_convertible_v<const T&, std::string>) {
    return PrintString(std::string(v));
  } else if constexpr (Streamable<T>::value) {
    ss << v;
  } else {
    ss << "?";
  }
  return ss.str();
}

// Integers are compared by value whatever their signedness, so that
// ASSERT_EQ(v.size(), 3) neither warns nor surprises.
template <typename A, typename B>
bool Equal(const A& a, const B& b) {
  if constexpr (std::is_integral_v<A> && std::is_integral_v<B> && !std::is_same_v<A, bool> &&
                !std::is_same_v<B, bool> && std::is_signed_v<A> != std::is_signed_v<B>) {
    if constexpr (std::is_signed_v<A>) {
      return a >= 0 && static_cast<std::make_unsigned_t<A>>(a) == b;
    } else {
      return b >= 0 && a == static_cast<std::make_unsigned_t<B>>(b);
    }
  } else {
    return a == b;
  }
}

template <typename A, typename B>
bool Less(const A& a, const B& b) {
  if constexpr (std::is_integral_v<A> && std::is_integral_v<B> && std::is_signed_v<A> != std::is_signed_v<B>) {
    if constexpr (std::is_signed_v<A>) {
      return a < 0 || static_cast<std::make_unsigned_t<A>>(a) < b;
    } else {
      return b >= 0 && a < static_cast<std::make_unsigned_t<B>>(b);
    }
  } else {
    return a < b;
  }
}

struct CheckResult {
  bool ok;
  std::string message;  // only set when !ok
};

template <typename A, typename B>
CheckResult Compare(bool ok, const char* op, const A& a, const B& b, const char* ea, const char* eb) {
  if (ok) return CheckResult{true, std::string()};
  return CheckResult{false, std::string("expected ") + ea + " " + op + " " + eb + ", got " + Print(a) +
                                " vs " + Print(b)};
}

template <typename A, typename B>
CheckResult CheckEq(const A& a, const B& b, const char* ea, const char* eb) {
  return Compare(Equal(a, b), "==", a, b, ea, eb);
}
template <typename A, typename B>
CheckResult CheckNe(const A& a, const B& b, const char* ea, const char* eb) {
  return Compare(!Equal(a, b), "!=", a, b, ea, eb);
}
template <typename A, typename B>
CheckResult CheckLt(const A& a, const B& b, const char* ea, const char* eb) {
  return Compare(Less(a, b), "<", a, b, ea, eb);
}
template <typename A, typename B>
CheckResult CheckLe(const A& a, const B& b, const char* ea, const char* eb) {
  return Compare(!Less(b, a), "<=", a, b, ea, eb);
}
template <typename A, typename B>
CheckResult CheckGt(const A& a, const B& b, const char* ea, const char* eb) {
  return Compare(Less(b, a), ">", a, b, ea, eb);
}
template <typename A, typename B>
CheckResult CheckGe(const A& a, const B& b, const char* ea, const char* eb) {
  return Compare(!Less(a, b), ">=", a, b, ea, eb);
}

}  // namespace internal
}  // namespace test
}  // namespace oyster

#define OYSTER_TEST_CONCAT2_(a, b) a##b
#define OYSTER_TEST_CONCAT_(a, b) OYSTER_TEST_CONCAT2_(a, b)

#define TEST(suite, name)                                                                     \
  static void OYSTER_TEST_CONCAT_(Test_##suite##_, name)();                                   \
  [[maybe_unused]] static const bool OYSTER_TEST_CONCAT_(test_registered_##suite##_, name) = \
      ::oyster::test::internal::RegisterTest(#suite, #name, &OYSTER_TEST_CONCAT_(Test_##suite##_, name)); \
  static void OYSTER_TEST_CONCAT_(Test_##suite##_, name)()

// Ends the test; more context can be streamed: FAIL() << "x is " << x;
#define FAIL() \
  ::oyster::test::internal::Thrower() = ::oyster::test::internal::Message(__FILE__, __LINE__)

// The switch makes each macro a single statement that still accepts a
// streamed message. (GCC's -Wdangling-else still asks for braces when one is
// the body of an unbraced if.)
#define OYSTER_TEST_CHECK_(check, a, b)                                                      \
  switch (0)                                                                                 \
  case 0:                                                                                    \
  default:                                                                                   \
    if (const ::oyster::test::internal::CheckResult oyster_test_r_ =                         \
            ::oyster::test::internal::check((a), (b), #a, #b);                               \
        oyster_test_r_.ok) {                                                                 \
    } else                                                                                   \
      FAIL() << oyster_test_r_.message << " "

#define ASSERT_EQ(a, b) OYSTER_TEST_CHECK_(CheckEq, a, b)
#define ASSERT_NE(a, b) OYSTER_TEST_CHECK_(CheckNe, a, b)
#define ASSERT_LT(a, b) OYSTER_TEST_CHECK_(CheckLt, a, b)
#define ASSERT_LE(a, b) OYSTER_TEST_CHECK_(CheckLe, a, b)
#define ASSERT_GT(a, b) OYSTER_TEST_CHECK_(CheckGt, a, b)
#define ASSERT_GE(a, b) OYSTER_TEST_CHECK_(CheckGe, a, b)

#define ASSERT_TRUE(c) \
  switch (0)           \
  case 0:              \
  default:             \
    if (c) {           \
    } else             \
      FAIL() << "expected true: " #c " "

#define ASSERT_FALSE(c) \
  switch (0)            \
  case 0:               \
  default:              \
    if (!(c)) {         \
    } else              \
      FAIL() << "expected false: " #c " "

#define ASSERT_OK(expr)                                                              \
  switch (0)                                                                         \
  case 0:                                                                            \
  default:                                                                           \
    if (const ::oyster::Status oyster_test_s_ = (expr); oyster_test_s_.ok()) {       \
    } else                                                                           \
      FAIL() << #expr " failed: " << oyster_test_s_.ToString() << " "

// The status must have the given Status::Code, e.g. ASSERT_STATUS(kCorruption, s).
#define ASSERT_STATUS(status_code, expr)                                                        \
  switch (0)                                                                             \
  case 0:                                                                                \
  default:                                                                               \
    if (const ::oyster::Status oyster_test_s_ = (expr);                                  \
        oyster_test_s_.code() == ::oyster::Status::status_code) {                        \
    } else                                                                               \
      FAIL() << #expr " is " << oyster_test_s_.ToString() << ", expected " #status_code " "

#endif  // OYSTER_TEST_TESTHARNESS_H_
