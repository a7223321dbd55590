// PutStreamWrap is the JavaScript face of one PutStream (NativePutStream in
// src/store/native.ts), made by engine.beginStream. Its calls return
// promises; their work runs on the addon's pool one call after the other, in
// the order they were made (a Strand), so that pieces are written in order
// even when JavaScript does not wait for one append before the next.

#ifndef OYSTER_ADDON_PUT_STREAM_WRAP_H_
#define OYSTER_ADDON_PUT_STREAM_WRAP_H_

#include <napi.h>

#include <memory>

#include "addon/addon_data.h"
#include "engine/put_stream.h"
#include "util/strand.h"

namespace oyster {

class PutStreamWrap : public Napi::ObjectWrap<PutStreamWrap> {
 public:
  static Napi::Function Define(Napi::Env env);
  // A new JavaScript object for `stream`.
  static Napi::Object New(Napi::Env env, AddonData* data, std::unique_ptr<PutStream> stream);

  explicit PutStreamWrap(const Napi::CallbackInfo& info);
  // A stream collected unfinished is aborted (PutStream's destructor), on
  // the pool: aborting writes to its file. At exit, after the pool is gone,
  // it is left as a crash leaves it.
  ~PutStreamWrap() override;

 private:
  // append(pieces: Buffer[]) -> Promise<void>: PutStream::Append of the
  // pieces, held until it settles; a failed append aborts the stream.
  Napi::Value Append(const Napi::CallbackInfo& info);
  // finish() -> Promise<void>: PutStream::Finish.
  Napi::Value Finish(const Napi::CallbackInfo& info);
  // abort() -> Promise<void>: PutStream::Abort, after the calls before it.
  Napi::Value Abort(const Napi::CallbackInfo& info);

  // Throws and returns false unless New made this object.
  bool CheckStream(Napi::Env env);

  std::shared_ptr<PutStream> stream_;
  std::shared_ptr<Strand> strand_;
  std::weak_ptr<ThreadPool> pool_;
};

}  // namespace oyster

#endif  // OYSTER_ADDON_PUT_STREAM_WRAP_H_
