// Turns engine Status values into JavaScript Error objects with a stable
// `code` ("OYSTER_CORRUPTION", "OYSTER_IO_ERROR", ...) and, for I/O errors,
// the errno and its symbolic name ("EIO", "ENOSPC").

#ifndef OYSTER_ADDON_JS_STATUS_H_
#define OYSTER_ADDON_JS_STATUS_H_

#include <napi.h>

#include "util/status.h"

namespace oyster {

Napi::Error StatusToError(Napi::Env env, const Status& s);

// A promise already rejected with StatusToError(s), for a call refused
// before any work starts (an object closed meanwhile).
Napi::Promise RejectedPromise(Napi::Env env, const Status& s);

}  // namespace oyster

#endif  // OYSTER_ADDON_JS_STATUS_H_
