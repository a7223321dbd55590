// The JavaScript face of the offline tools in native/tools (`oyster blob
// check|info|recover`). Every call runs on the addon's thread pool and
// returns { promise, progress }, where progress() answers { done, total }
// bytes at once, so that a progress bar can follow long work.

#ifndef OYSTER_ADDON_TOOLS_WRAP_H_
#define OYSTER_ADDON_TOOLS_WRAP_H_

#include <napi.h>

namespace oyster {

// The `tools` object of the addon's exports:
//   checkPartition(dir, { keySize?, scan?, only? }) -> task of PartitionReport
//   recoverPartition(dir, { keySize?, outDir?, only? }) -> task of PartitionRecovery
Napi::Object ToolsExports(Napi::Env env);

}  // namespace oyster

#endif  // OYSTER_ADDON_TOOLS_WRAP_H_
