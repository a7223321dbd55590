// ReadOnlyFile opens a file for reading only. The offline tools inspect blob
// and index files through it, so that a check cannot change what it looks at
// and works on read-only copies, snapshots and media.

#ifndef OYSTER_TOOLS_READ_ONLY_FILE_H_
#define OYSTER_TOOLS_READ_ONLY_FILE_H_

#include <memory>
#include <string>

#include "util/file_system.h"
#include "util/status.h"

namespace oyster {

// Opens `path` with O_RDONLY; Write, Sync and Truncate of the result fail
// with NotSupported.
Status OpenReadOnlyFile(const std::string& path, std::unique_ptr<File>* file);

}  // namespace oyster

#endif  // OYSTER_TOOLS_READ_ONLY_FILE_H_
