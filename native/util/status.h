// Status is the result of every engine operation that can fail. Errors cross
// the engine boundary as values, never as exceptions (as in LevelDB).

#ifndef OYSTER_UTIL_STATUS_H_
#define OYSTER_UTIL_STATUS_H_

#include <string>

namespace oyster {

class Status {
 public:
  enum Code {
    kOk = 0,
    kNotFound = 1,
    kCorruption = 2,
    kNotSupported = 3,
    kInvalidArgument = 4,
    kIOError = 5,
    kBusy = 6,
    kClosed = 7,
    // A read that must not wait (ReadOptions::no_wait) would have had to:
    // for the disk, or for a lock held by a writer. Retry it where waiting is fine.
    kWouldBlock = 8,
  };

  Status() = default;

  static Status OK() { return Status(); }
  static Status NotFound(const std::string& msg) { return Status(kNotFound, msg, 0); }
  static Status Corruption(const std::string& msg) { return Status(kCorruption, msg, 0); }
  static Status NotSupported(const std::string& msg) { return Status(kNotSupported, msg, 0); }
  static Status InvalidArgument(const std::string& msg) {
    return Status(kInvalidArgument, msg, 0);
  }
  // err is the errno value reported by the failed system call (0 if none).
  static Status IOError(const std::string& msg, int err) { return Status(kIOError, msg, err); }
  static Status Busy(const std::string& msg) { return Status(kBusy, msg, 0); }
  static Status Closed(const std::string& msg) { return Status(kClosed, msg, 0); }
  static Status WouldBlock(const std::string& msg) { return Status(kWouldBlock, msg, 0); }

  bool ok() const { return code_ == kOk; }
  bool IsNotFound() const { return code_ == kNotFound; }
  bool IsCorruption() const { return code_ == kCorruption; }
  bool IsIOError() const { return code_ == kIOError; }
  bool IsClosed() const { return code_ == kClosed; }
  bool IsWouldBlock() const { return code_ == kWouldBlock; }

  Code code() const { return code_; }
  int err() const { return err_; }
  const std::string& message() const { return msg_; }

  // A short stable name of the code, e.g. "Corruption".
  const char* CodeName() const;
  // "<CodeName>: <message>[ (<strerror>)]".
  std::string ToString() const;

 private:
  Status(Code code, std::string msg, int err) : code_(code), err_(err), msg_(std::move(msg)) {}

  Code code_ = kOk;
  int err_ = 0;
  std::string msg_;
};

}  // namespace oyster

#endif  // OYSTER_UTIL_STATUS_H_
