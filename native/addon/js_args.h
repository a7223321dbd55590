// Checks of the binding's arguments shared by its wraps: each throws a
// TypeError or RangeError naming the argument, and returns false, when the
// value is unusable.

#ifndef OYSTER_ADDON_JS_ARGS_H_
#define OYSTER_ADDON_JS_ARGS_H_

#include <napi.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace oyster {

// 2^53 - 1: the largest integer a JavaScript number holds exactly.
constexpr double kMaxSafeInteger = 9007199254740991.0;

// Argument i as an integer in 0..max (`range` spells it out for the error).
bool IntegerArg(const Napi::CallbackInfo& info, size_t i, const char* name, double max, const char* range,
                uint64_t* out);

// Whether v is a Buffer (a Uint8Array); does not throw.
bool IsBytes(Napi::Value v);

// Argument i as a Buffer.
bool BufferArg(const Napi::CallbackInfo& info, size_t i, const char* name);

// Argument i, a string of characters up to U+00FF or undefined (empty), as
// one byte per character: how Node.js writes a header block ('latin1').
bool Latin1Arg(const Napi::CallbackInfo& info, size_t i, const char* name, std::string* out);

}  // namespace oyster

#endif  // OYSTER_ADDON_JS_ARGS_H_
