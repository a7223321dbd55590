// The power loss FaultInjectingFileSystem simulates: what of files and
// directory entries survives it, checked against the files left on disk.
// The durability tests of the engine are only as good as this model.

#include <errno.h>

#include <memory>
#include <string>
#include <vector>

#include "test/fault_file_system.h"
#include "test/test_util.h"
#include "test/testharness.h"
#include "util/file_system.h"

namespace oyster {
namespace {

using test::FaultInjectingFileSystem;
using test::FileExists;
using test::ReadFileOrThrow;

std::string PathOf(const std::string& name) { return JoinPath(test::TmpDir(), name); }

Status WriteAt(File* f, uint64_t offset, const std::string& data) {
  IoSlice slice{data.data(), data.size()};
  return f->Write(offset, &slice, 1);
}

// Creates `name` holding `data`, synced, with its directory entry synced.
void CreateDurable(FileSystem* fs, const std::string& name, const std::string& data) {
  std::unique_ptr<File> f;
  ASSERT_OK(fs->OpenFile(PathOf(name), true, &f));
  ASSERT_OK(WriteAt(f.get(), 0, data));
  ASSERT_OK(f->Sync());
  ASSERT_OK(fs->SyncDir(test::TmpDir()));
}

}  // namespace

// A file keeps what it held at its last sync: appended bytes go, bytes
// overwritten or truncated away below the synced size come back.
TEST(PowerLoss, FileContentsRevertToTheLastSync) {
  FaultInjectingFileSystem fs;
  test::WriteFileOrThrow(PathOf("old"), "written before tracking");
  ASSERT_OK(fs.TrackUnsyncedData(true));
  CreateDurable(&fs, "a", "hello");
  {
    std::unique_ptr<File> a;
    ASSERT_OK(fs.OpenFile(PathOf("a"), false, &a));
    ASSERT_OK(WriteAt(a.get(), 5, " world"));
    ASSERT_OK(WriteAt(a.get(), 0, "J"));
    ASSERT_TRUE(ReadFileOrThrow(PathOf("a")) == "Jello world");

    std::unique_ptr<File> old;
    ASSERT_OK(fs.OpenFile(PathOf("old"), false, &old));
    ASSERT_OK(old->Truncate(3));
    ASSERT_OK(WriteAt(old.get(), 1, "XYZ"));
    ASSERT_OK(old->Truncate(2));
    ASSERT_STATUS(kBusy, fs.DropUnsyncedData());  // files are still open
  }
  ASSERT_OK(fs.DropUnsyncedData());
  ASSERT_TRUE(ReadFileOrThrow(PathOf("a")) == "hello");
  ASSERT_TRUE(ReadFileOrThrow(PathOf("old")) == "written before tracking");

  // What a sync made durable stays, whatever happened before it.
  std::unique_ptr<File> a;
  ASSERT_OK(fs.OpenFile(PathOf("a"), false, &a));
  ASSERT_OK(a->Truncate(1));
  ASSERT_OK(WriteAt(a.get(), 1, "ELP"));
  ASSERT_OK(a->Sync());
  ASSERT_OK(WriteAt(a.get(), 0, "?"));
  a.reset();
  ASSERT_OK(fs.DropUnsyncedData());
  ASSERT_TRUE(ReadFileOrThrow(PathOf("a")) == "hELP");
}

// A file's synced state follows it across handles and re-opens of its path.
TEST(PowerLoss, SyncedStateFollowsTheFile) {
  FaultInjectingFileSystem fs;
  ASSERT_OK(fs.TrackUnsyncedData(true));
  CreateDurable(&fs, "f", "one");
  std::unique_ptr<File> writer, other;
  ASSERT_OK(fs.OpenFile(PathOf("f"), false, &writer));
  ASSERT_OK(WriteAt(writer.get(), 3, " two"));
  writer.reset();
  ASSERT_OK(fs.OpenFile(PathOf("f"), false, &writer));
  ASSERT_OK(fs.OpenFile(PathOf("f"), false, &other));
  ASSERT_OK(other->Sync());  // syncs the file, whichever handle wrote
  ASSERT_OK(WriteAt(writer.get(), 7, " three"));
  writer.reset();
  other.reset();
  ASSERT_OK(fs.DropUnsyncedData());
  ASSERT_TRUE(ReadFileOrThrow(PathOf("f")) == "one two");
}

// Directory entries are durable once their directory is synced: creations,
// renames and removals since then are undone.
TEST(PowerLoss, DirectoryEntriesRevertToTheLastSyncDir) {
  FaultInjectingFileSystem fs;
  const std::string dir = test::TmpDir();
  ASSERT_OK(fs.TrackUnsyncedData(true));
  CreateDurable(&fs, "moved", "moved data");
  CreateDurable(&fs, "removed", "removed data");
  CreateDurable(&fs, "replaced", "replaced data");
  CreateDurable(&fs, "kept", "kept data");

  {
    // Created and synced, but not its directory entry.
    std::unique_ptr<File> f;
    ASSERT_OK(fs.OpenFile(PathOf("created"), true, &f));
    ASSERT_OK(WriteAt(f.get(), 0, "x"));
    ASSERT_OK(f->Sync());
  }
  ASSERT_OK(fs.Rename(PathOf("moved"), PathOf("moved.new")));
  {
    // Written after its rename: a power loss brings back the synced bytes
    // under the old name.
    std::unique_ptr<File> f;
    ASSERT_OK(fs.OpenFile(PathOf("moved.new"), false, &f));
    ASSERT_OK(WriteAt(f.get(), 0, "MOVED"));
  }
  ASSERT_OK(fs.Remove(PathOf("removed")));
  {
    // As the index builder does: a new file renamed over an old one.
    std::unique_ptr<File> f;
    ASSERT_OK(fs.OpenFile(PathOf("replaced.tmp"), true, &f));
    ASSERT_OK(WriteAt(f.get(), 0, "new data"));
    ASSERT_OK(f->Sync());
  }
  ASSERT_OK(fs.Rename(PathOf("replaced.tmp"), PathOf("replaced")));
  // A new directory goes with everything in it, even what was synced there.
  ASSERT_OK(fs.CreateDir(PathOf("sub")));
  {
    std::unique_ptr<File> f;
    ASSERT_OK(fs.OpenFile(JoinPath(PathOf("sub"), "inner"), true, &f));
    ASSERT_OK(f->Sync());
    ASSERT_OK(fs.SyncDir(PathOf("sub")));
  }
  ASSERT_EQ(test::ListDir(dir), (std::vector<std::string>{"created", "kept", "moved.new", "replaced", "sub"}));

  ASSERT_OK(fs.DropUnsyncedData());
  ASSERT_EQ(test::ListDir(dir), (std::vector<std::string>{"kept", "moved", "removed", "replaced"}));
  ASSERT_TRUE(ReadFileOrThrow(PathOf("moved")) == "moved data");
  ASSERT_TRUE(ReadFileOrThrow(PathOf("removed")) == "removed data");
  ASSERT_TRUE(ReadFileOrThrow(PathOf("replaced")) == "replaced data");
  ASSERT_TRUE(ReadFileOrThrow(PathOf("kept")) == "kept data");

  // The same changes followed by SyncDir survive.
  ASSERT_OK(fs.Rename(PathOf("moved"), PathOf("moved.new")));
  ASSERT_OK(fs.Remove(PathOf("removed")));
  ASSERT_OK(fs.CreateDir(PathOf("sub")));
  ASSERT_OK(fs.SyncDir(dir + "/"));  // any spelling of the directory
  ASSERT_OK(fs.DropUnsyncedData());
  ASSERT_EQ(test::ListDir(dir), (std::vector<std::string>{"kept", "moved.new", "replaced", "sub"}));
  ASSERT_TRUE(ReadFileOrThrow(PathOf("moved.new")) == "moved data");
}

// A file moved to another directory, where only the target directory was
// synced, is found under both names.
TEST(PowerLoss, RenameAcrossDirectories) {
  FaultInjectingFileSystem fs;
  ASSERT_OK(fs.CreateDir(PathOf("to")));
  ASSERT_OK(fs.TrackUnsyncedData(true));
  CreateDurable(&fs, "f", "data");
  ASSERT_OK(fs.Rename(PathOf("f"), JoinPath(PathOf("to"), "f")));
  ASSERT_OK(fs.SyncDir(PathOf("to")));
  ASSERT_OK(fs.DropUnsyncedData());
  ASSERT_TRUE(ReadFileOrThrow(PathOf("f")) == "data");
  ASSERT_TRUE(ReadFileOrThrow(JoinPath(PathOf("to"), "f")) == "data");
}

// A removed file whose handle stays open can still be synced; a power loss
// that brings the name back brings those bytes.
TEST(PowerLoss, SyncAfterRemove) {
  FaultInjectingFileSystem fs;
  ASSERT_OK(fs.TrackUnsyncedData(true));
  CreateDurable(&fs, "f", "first");
  std::unique_ptr<File> f;
  ASSERT_OK(fs.OpenFile(PathOf("f"), false, &f));
  ASSERT_OK(fs.Remove(PathOf("f")));
  ASSERT_OK(WriteAt(f.get(), 5, " second"));
  ASSERT_OK(f->Sync());
  ASSERT_OK(WriteAt(f.get(), 12, " third"));
  f.reset();
  ASSERT_FALSE(FileExists(PathOf("f")));
  ASSERT_OK(fs.DropUnsyncedData());
  ASSERT_TRUE(ReadFileOrThrow(PathOf("f")) == "first second");
}

// After CutPower nothing changes the disk any more; reads go on, and
// DropUnsyncedData turns the power back on.
TEST(PowerLoss, CutPowerStopsEveryChange) {
  FaultInjectingFileSystem fs;
  ASSERT_STATUS(kInvalidArgument, fs.DropUnsyncedData());  // not tracking
  ASSERT_OK(fs.TrackUnsyncedData(true));
  CreateDurable(&fs, "f", "synced");
  std::unique_ptr<File> f;
  ASSERT_OK(fs.OpenFile(PathOf("f"), false, &f));
  ASSERT_STATUS(kBusy, fs.TrackUnsyncedData(false));  // a handle would escape
  ASSERT_OK(WriteAt(f.get(), 6, " unsynced"));

  fs.CutPower();
  auto eio = [](const Status& s) { return s.IsIOError() && s.err() == EIO; };
  ASSERT_TRUE(eio(WriteAt(f.get(), 0, "x")));
  ASSERT_TRUE(eio(f->Sync()));
  ASSERT_TRUE(eio(f->Truncate(0)));
  std::unique_ptr<File> g;
  ASSERT_TRUE(eio(fs.OpenFile(PathOf("g"), true, &g)));
  ASSERT_TRUE(eio(fs.Rename(PathOf("f"), PathOf("g"))));
  ASSERT_TRUE(eio(fs.Remove(PathOf("f"))));
  ASSERT_TRUE(eio(fs.SyncDir(test::TmpDir())));
  ASSERT_TRUE(eio(fs.CreateDir(PathOf("d"))));
  std::string buf(15, '\0');
  size_t n = 0;
  ASSERT_OK(f->Read(0, buf.size(), &buf[0], &n));  // still in the page cache
  ASSERT_TRUE(buf == "synced unsynced");
  ASSERT_OK(fs.OpenFile(PathOf("f"), false, &g));
  g.reset();
  f.reset();

  ASSERT_OK(fs.DropUnsyncedData());
  ASSERT_TRUE(ReadFileOrThrow(PathOf("f")) == "synced");
  ASSERT_OK(fs.OpenFile(PathOf("f"), false, &f));
  ASSERT_OK(WriteAt(f.get(), 0, "S"));
  ASSERT_OK(f->Sync());
  f.reset();
  ASSERT_OK(fs.TrackUnsyncedData(false));
  ASSERT_TRUE(ReadFileOrThrow(PathOf("f")) == "Synced");
}

}  // namespace oyster
