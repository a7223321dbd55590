// ValueReaderWrap is the JavaScript face of one ValueReader
// (NativeValueReader in src/store/native.ts), made by engineSet.openNewest
// for a value too large to be read whole. Reads return promises; their work
// runs on the addon's pool one read after the other (a Strand), as a
// ValueReader takes one call at a time.

#ifndef OYSTER_ADDON_VALUE_READER_WRAP_H_
#define OYSTER_ADDON_VALUE_READER_WRAP_H_

#include <napi.h>

#include <memory>

#include "addon/addon_data.h"
#include "engine/value_reader.h"
#include "util/strand.h"

namespace oyster {

class ValueReaderWrap : public Napi::ObjectWrap<ValueReaderWrap> {
 public:
  static Napi::Function Define(Napi::Env env);
  // A new JavaScript object for `reader`.
  static Napi::Object New(Napi::Env env, AddonData* data, std::unique_ptr<ValueReader> reader);

  explicit ValueReaderWrap(const Napi::CallbackInfo& info);

 private:
  // size: number, the value's length.
  Napi::Value Size(const Napi::CallbackInfo& info);
  // read(offset, target: Buffer) -> Promise<void>: ValueReader::Read of
  // target.length bytes at offset into target, held until it settles;
  // corruption errors carry the record's version. Rejected with
  // OYSTER_CLOSED after close.
  Napi::Value Read(const Napi::CallbackInfo& info);
  // sendTo(fd, offset, n, prefix?: string) -> Promise<number>:
  // ValueReader::SendTo of `prefix` (one byte per character, as 'latin1')
  // and then value bytes [offset, offset + n) to the socket fd
  // (non-blocking, open when called), resolved with the bytes sent, the
  // prefix's first: fewer than its length + n once the socket's buffer is
  // full. Errors as read's; OYSTER_IO_ERROR when the socket fails.
  Napi::Value SendTo(const Napi::CallbackInfo& info);
  // checkRest() -> Promise<void>: ValueReader::CheckRest, after the reads
  // and sends asked before it. Errors as read's.
  Napi::Value CheckRest(const Napi::CallbackInfo& info);
  // close(): drops the reader, and with it the blob, once the reads under
  // way are done. Idempotent.
  Napi::Value Close(const Napi::CallbackInfo& info);

  std::shared_ptr<ValueReader> reader_;
  std::shared_ptr<Strand> strand_;
  double size_ = 0;
};

}  // namespace oyster

#endif  // OYSTER_ADDON_VALUE_READER_WRAP_H_
