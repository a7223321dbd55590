#include "util/status.h"

#include <cstring>

namespace oyster {

const char* Status::CodeName() const {
  switch (code_) {
    case kOk: return "OK";
    case kNotFound: return "NotFound";
    case kCorruption: return "Corruption";
    case kNotSupported: return "NotSupported";
    case kInvalidArgument: return "InvalidArgument";
    case kIOError: return "IOError";
    case kBusy: return "Busy";
    case kClosed: return "Closed";
    case kWouldBlock: return "WouldBlock";
  }
  return "Unknown";
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string s = CodeName();
  s += ": ";
  s += msg_;
  if (err_ != 0) {
    s += " (";
    s += std::strerror(err_);
    s += ")";
  }
  return s;
}

}  // namespace oyster
