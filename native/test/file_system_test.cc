#include "util/file_system.h"

#include <errno.h>

#include <string>
#include <vector>

#include "test/test_util.h"
#include "test/testharness.h"

namespace oyster {

TEST(FileSystem, JoinAndParent) {
  ASSERT_EQ(JoinPath("a/b", "c"), "a/b/c");
  ASSERT_EQ(JoinPath("a/b/", "c"), "a/b/c");
  ASSERT_EQ(JoinPath("", "c"), "c");
  ASSERT_EQ(JoinPath("/", "c"), "/c");
  ASSERT_EQ(ParentDir("a/b/c"), "a/b");
  ASSERT_EQ(ParentDir("a/b/c/"), "a/b");
  ASSERT_EQ(ParentDir("c"), ".");
  ASSERT_EQ(ParentDir("/c"), "/");
  ASSERT_EQ(ParentDir("/"), "/");
}

TEST(FileSystem, FileOperations) {
  FileSystem* fs = FileSystem::Default();
  const std::string path = JoinPath(test::TmpDir(), "f");
  std::unique_ptr<File> f;
  ASSERT_STATUS(kIOError, fs->OpenFile(path, false, &f));  // does not exist
  ASSERT_OK(fs->OpenFile(path, true, &f));
  ASSERT_EQ(f->path(), path);
  std::unique_ptr<File> again;
  Status s = fs->OpenFile(path, true, &again);
  ASSERT_STATUS(kIOError, s);
  ASSERT_EQ(s.err(), EEXIST);  // the index builder relies on it

  // Many slices, empty ones among them, more than one pwritev takes.
  std::vector<std::string> parts;
  std::vector<IoSlice> slices;
  std::string all;
  for (int i = 0; i < 3000; i++) parts.push_back(std::string(i % 5, static_cast<char>('a' + i % 26)));
  for (const std::string& p : parts) {
    slices.push_back(IoSlice{p.data(), p.size()});
    all += p;
  }
  ASSERT_OK(f->Write(10, slices.data(), static_cast<int>(slices.size())));
  uint64_t size = 0;
  ASSERT_OK(f->Size(&size));
  ASSERT_EQ(size, 10 + all.size());
  std::string buf(all.size() + 100, '?');
  size_t n = 0;
  ASSERT_OK(f->Read(10, buf.size(), &buf[0], &n));
  ASSERT_EQ(n, all.size());  // short only at the end of the file
  ASSERT_TRUE(buf.substr(0, n) == all);
  ASSERT_OK(f->Read(0, 10, &buf[0], &n));
  ASSERT_TRUE(buf.substr(0, 10) == std::string(10, '\0'));  // the hole reads as zeros
  ASSERT_OK(f->Read(size + 5, 10, &buf[0], &n));
  ASSERT_EQ(n, 0u);
  ASSERT_OK(f->Sync());
  ASSERT_OK(f->Truncate(12));
  ASSERT_OK(f->Size(&size));
  ASSERT_EQ(size, 12u);
  ASSERT_OK(f->Write(12, nullptr, 0));

  ASSERT_OK(fs->Rename(path, path + "2"));
  std::vector<std::string> names;
  ASSERT_OK(fs->ListDir(test::TmpDir(), &names));
  ASSERT_EQ(names, std::vector<std::string>{"f2"});
  ASSERT_OK(fs->Remove(path + "2"));
  ASSERT_STATUS(kIOError, fs->Remove(path + "2"));
  ASSERT_OK(fs->ListDir(test::TmpDir(), &names));
  ASSERT_EQ(names.size(), 0u);
}

TEST(FileSystem, Directories) {
  FileSystem* fs = FileSystem::Default();
  const std::string dir = JoinPath(test::TmpDir(), "d");
  ASSERT_OK(fs->CreateDir(dir));
  ASSERT_OK(fs->CreateDir(dir));  // already there
  ASSERT_OK(fs->SyncDir(dir));
  ASSERT_STATUS(kIOError, fs->CreateDir(JoinPath(dir, "x/y")));  // one level only
  test::WriteFileOrThrow(JoinPath(dir, "file"), "x");
  ASSERT_STATUS(kIOError, fs->CreateDir(JoinPath(dir, "file")));  // a file is in the way
  std::vector<std::string> names;
  ASSERT_STATUS(kIOError, fs->ListDir(JoinPath(dir, "missing"), &names));
}

TEST(FileSystem, DirectoryLock) {
  FileSystem* fs = FileSystem::Default();
  std::unique_ptr<DirLock> a, b;
  ASSERT_OK(fs->LockDir(test::TmpDir(), &a));
  ASSERT_STATUS(kBusy, fs->LockDir(test::TmpDir(), &b));
  a.reset();
  ASSERT_OK(fs->LockDir(test::TmpDir(), &b));
  ASSERT_STATUS(kIOError, fs->LockDir(JoinPath(test::TmpDir(), "missing"), &a));
}

}  // namespace oyster
