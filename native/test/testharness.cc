#include "test/testharness.h"

#include <stdlib.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

namespace oyster {
namespace test {
namespace {

struct TestCase {
  const char* suite;
  const char* name;
  internal::TestFn fn;
};

std::vector<TestCase>& Registry() {
  static std::vector<TestCase> tests;
  return tests;
}

// State of the running test.
const TestCase* current = nullptr;
std::string current_dir;

// One line per result: the TAP-like output is parsed line by line.
std::string OneLine(std::string s) {
  for (char& c : s) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return s;
}

}  // namespace

const std::string& TmpDir() {
  if (current_dir.empty()) {
    const char* base = getenv("TMPDIR");
    std::string t = (base && *base) ? base : "/tmp";
    t += "/oyster_test_";
    t += current ? std::string(current->suite) + "_" + current->name : "none";
    t += "_XXXXXX";
    std::vector<char> buf(t.begin(), t.end());
    buf.push_back('\0');
    if (mkdtemp(buf.data()) == nullptr) {
      throw internal::AssertionFailure{"mkdtemp " + t + ": " + std::strerror(errno)};
    }
    current_dir = buf.data();
  }
  return current_dir;
}

void Note(const std::string& line) { std::printf("# %s\n", OneLine(line).c_str()); }

uint64_t RandomSeed() {
  // FNV-1a of the test's name: different data per test, the same on every run.
  uint64_t h = 0xCBF29CE484222325ull;
  if (current) {
    for (const char* p : {current->suite, ".", current->name}) {
      for (; *p; p++) h = (h ^ static_cast<unsigned char>(*p)) * 0x100000001B3ull;
    }
  }
  return h;
}

namespace internal {

bool RegisterTest(const char* suite, const char* name, TestFn fn) {
  Registry().push_back(TestCase{suite, name, fn});
  return true;
}

std::string PrintString(const std::string& s) {
  std::string out = "\"";
  const size_t shown = s.size() < 48 ? s.size() : 48;
  for (size_t i = 0; i < shown; i++) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7F && c != '"' && c != '\\') {
      out += static_cast<char>(c);
    } else {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "\\x%02x", c);
      out += hex;
    }
  }
  out += "\"";
  if (shown < s.size()) out += "... (" + std::to_string(s.size()) + " bytes)";
  return out;
}

}  // namespace internal
}  // namespace test
}  // namespace oyster

int main(int argc, char** argv) {
  using oyster::test::current;
  using oyster::test::current_dir;
  using Clock = std::chrono::steady_clock;
  const std::string filter = argc > 1 ? argv[1] : "";
  // Failures must stay readable next to the engine's own output.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);

  int run = 0;
  std::vector<std::string> failed;
  const Clock::time_point start_all = Clock::now();
  for (const auto& t : oyster::test::Registry()) {
    const std::string full = std::string(t.suite) + "." + t.name;
    if (!filter.empty() && full.find(filter) == std::string::npos) continue;
    run++;
    current = &t;
    current_dir.clear();
    std::string error;
    const Clock::time_point start = Clock::now();
    try {
      t.fn();
    } catch (const oyster::test::internal::AssertionFailure& f) {
      error = f.message;
    } catch (const std::exception& e) {
      error = std::string("uncaught exception: ") + e.what();
    } catch (...) {
      error = "uncaught exception";
    }
    const long long ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
    if (error.empty()) {
      if (!current_dir.empty()) {
        std::error_code ec;
        std::filesystem::remove_all(current_dir, ec);
      }
      std::printf("ok %s (%lld ms)\n", full.c_str(), ms);
    } else {
      if (!current_dir.empty()) error += " [files kept in " + current_dir + "]";
      std::printf("not ok %s %s\n", full.c_str(), oyster::test::OneLine(error).c_str());
      failed.push_back(full);
    }
    current = nullptr;
    current_dir.clear();
  }
  const double secs = std::chrono::duration<double>(Clock::now() - start_all).count();
  std::printf("# %d test(s), %d passed, %zu failed, %.1f s\n", run, run - static_cast<int>(failed.size()),
              failed.size(), secs);
  for (const std::string& f : failed) std::printf("# failed: %s\n", f.c_str());
  if (run == 0) {
    std::printf("# no test matches \"%s\"\n", filter.c_str());
    return 1;
  }
  return failed.empty() ? 0 : 1;
}
