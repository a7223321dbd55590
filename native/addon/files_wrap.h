// Whole-file operations on the addon's thread pool, through FileSystem, for
// the JavaScript side's own file copies (anti-entropy refilling an empty
// disk with a peer's closed partition files). The addon owns all blob and
// index file I/O, so that the event loop never waits for a disk: these are
// the few operations such a copy needs, each a thin call of FileSystem or
// File, opening the file anew every time.

#ifndef OYSTER_ADDON_FILES_WRAP_H_
#define OYSTER_ADDON_FILES_WRAP_H_

#include <napi.h>

namespace oyster {

// The `files` object of the addon's exports; every function returns a
// promise, rejected with StatusToError's errors:
//   read(path, offset, target) -> number   bytes read into target, target.length of them but
//                                          fewer at the end of the file; target must not be
//                                          used until the promise settles
//   write(path, offset, data, create)      all of data at offset; create: the file must not exist yet
//   sync(path)                             fdatasync
//   syncDir(dir)                           fsync of the directory
//   createDir(dir)                         one level; fine if it exists as a directory
//   rename(from, to)                       rename(2): atomically replaces a file `to`, or an empty
//                                          directory `to` when `from` is one; fails otherwise
//                                          (ENOTEMPTY/EEXIST, EISDIR, ENOTDIR; EXDEV across file systems)
//   remove(path)                           unlink(2): files only
//   list(dir) -> string[]                  names, without "." and ".."
Napi::Object FilesExports(Napi::Env env);

}  // namespace oyster

#endif  // OYSTER_ADDON_FILES_WRAP_H_
