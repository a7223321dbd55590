#include "util/uncached_io.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "test/test_util.h"
#include "test/testharness.h"
#include "util/file_system.h"

namespace oyster {
namespace {

std::string Pattern(size_t n) {
  std::string s(n, '\0');
  uint32_t x = 12345;
  for (size_t i = 0; i < n; i++) {
    x = x * 1103515245 + 12345;
    s[i] = static_cast<char>(x >> 16);
  }
  return s;
}

std::string CreateEmpty(const std::string& name) {
  const std::string path = JoinPath(test::TmpDir(), name);
  std::unique_ptr<File> f;
  Status s = FileSystem::Default()->OpenFile(path, true, &f);
  if (!s.ok()) throw std::runtime_error(s.ToString());
  return path;
}

// Pages of the file's first n bytes that are in the page cache.
size_t ResidentPages(const std::string& path, size_t n) {
  int fd = ::open(path.c_str(), O_RDONLY);
  void* p = ::mmap(nullptr, n, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) throw std::runtime_error("mmap failed");
  size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> in((n + page - 1) / page);
  ::mincore(p, n, in.data());
  ::munmap(p, n);
  size_t resident = 0;
  for (unsigned char c : in) resident += c & 1;
  return resident;
}

}  // namespace

// Aligned and unaligned offsets and lengths, pieces larger than one system
// call moves, a partial last block: the bytes are those written, whichever
// way each range went.
TEST(UncachedIo, WritesAndReadsTheSameBytes) {
  const std::string path = CreateEmpty("copy");
  const size_t kMiB = 1 << 20;
  const std::string data = Pattern(3 * kMiB + 12345);
  // [0, 2 MiB + 8 KiB): aligned, more than one piece; then an unaligned
  // length; then an unaligned offset up to the end.
  const size_t cut1 = 2 * kMiB + 8192, cut2 = cut1 + 5000;
  ASSERT_OK(WriteUncached(path, 0, data.data(), cut1));
  ASSERT_OK(WriteUncached(path, cut1, data.data() + cut1, cut2 - cut1));
  ASSERT_OK(WriteUncached(path, cut2, data.data() + cut2, data.size() - cut2));
  ASSERT_TRUE(test::ReadFileOrThrow(path) == data);

  struct Range {
    uint64_t offset;
    size_t n;
  };
  for (Range r : std::vector<Range>{{0, data.size()}, {0, 4096}, {4096, kMiB}, {kMiB, 2 * kMiB + 1},
                                    {3 * kMiB, 100000},  // past the end: short
                                    {7, 9000}, {cut2, 4096}, {data.size() - 1, 10}, {data.size(), 10},
                                    {data.size() + 4096, 10}}) {
    std::string buf(r.n, '?');
    size_t got = 0;
    ASSERT_OK(ReadUncached(path, r.offset, r.n, &buf[0], &got));
    size_t want = r.offset >= data.size() ? 0 : std::min(r.n, data.size() - static_cast<size_t>(r.offset));
    ASSERT_EQ(got, want);
    ASSERT_TRUE(buf.compare(0, got, data, static_cast<size_t>(std::min<uint64_t>(r.offset, data.size())), got) == 0);
  }
}

TEST(UncachedIo, Errors) {
  const std::string missing = JoinPath(test::TmpDir(), "missing");
  char b[8];
  size_t got = 0;
  Status s = WriteUncached(missing, 0, b, sizeof b);
  ASSERT_STATUS(kIOError, s);
  ASSERT_EQ(s.err(), ENOENT);
  s = ReadUncached(missing, 0, sizeof b, b, &got);
  ASSERT_STATUS(kIOError, s);
  ASSERT_EQ(s.err(), ENOENT);
}

// Where the file system takes O_DIRECT, aligned writes leave nothing in the
// page cache, and reads of what is not cached do not bring it in.
TEST(UncachedIo, AlignedRangesStayOutOfTheCache) {
  const std::string path = CreateEmpty("around");
  int probe = ::open(path.c_str(), O_RDONLY | O_DIRECT);
  if (probe < 0) return;  // a file system without O_DIRECT: ordinary I/O, tested above
  ::close(probe);
  const size_t n = 4 << 20;
  const std::string data = Pattern(n);
  ASSERT_OK(WriteUncached(path, 0, data.data(), n));
  ASSERT_EQ(ResidentPages(path, n), 0u);
  std::string buf(n, '?');
  size_t got = 0;
  ASSERT_OK(ReadUncached(path, 0, n, &buf[0], &got));
  ASSERT_EQ(got, n);
  ASSERT_TRUE(buf == data);
  ASSERT_EQ(ResidentPages(path, n), 0u);
}

}  // namespace oyster
