#include "util/status.h"

#include <errno.h>

#include "test/testharness.h"
#include "util/coding.h"

namespace oyster {

TEST(Status, CodesAndText) {
  ASSERT_TRUE(Status().ok());
  ASSERT_EQ(Status::OK().ToString(), "OK");
  ASSERT_EQ(Status::NotFound("k").ToString(), "NotFound: k");
  ASSERT_EQ(Status::Corruption("bad").ToString(), "Corruption: bad");
  ASSERT_EQ(Status::NotSupported("v2").CodeName(), std::string("NotSupported"));
  ASSERT_EQ(Status::InvalidArgument("x").CodeName(), std::string("InvalidArgument"));
  ASSERT_EQ(Status::Busy("x").CodeName(), std::string("Busy"));
  ASSERT_EQ(Status::Closed("x").CodeName(), std::string("Closed"));
  ASSERT_EQ(Status::WouldBlock("x").ToString(), "WouldBlock: x");
  ASSERT_TRUE(Status::WouldBlock("").IsWouldBlock());
  const Status io = Status::IOError("write f", EIO);
  ASSERT_TRUE(io.IsIOError());
  ASSERT_EQ(io.err(), EIO);
  ASSERT_EQ(io.message(), "write f");
  ASSERT_EQ(io.ToString(), "IOError: write f (Input/output error)");
  ASSERT_EQ(Status::IOError("x", 0).ToString(), "IOError: x");
  ASSERT_TRUE(Status::Corruption("").IsCorruption());
  ASSERT_TRUE(Status::Closed("").IsClosed());
  ASSERT_TRUE(Status::NotFound("").IsNotFound());
}

TEST(Coding, LittleEndian) {
  char buf[8];
  EncodeFixed32(buf, 0x04030201u);
  ASSERT_EQ(std::string(buf, 4), std::string("\x01\x02\x03\x04", 4));
  ASSERT_EQ(DecodeFixed32(buf), 0x04030201u);
  EncodeFixed64(buf, 0x0807060504030201ull);
  ASSERT_EQ(std::string(buf, 8), std::string("\x01\x02\x03\x04\x05\x06\x07\x08", 8));
  ASSERT_EQ(DecodeFixed64(buf), 0x0807060504030201ull);
  for (uint64_t v : {0ull, 1ull, 0x80ull, 0xFFFFFFFFull, 0xFFFFFFFFFFFFFFFFull, 0x8000000000000000ull}) {
    EncodeFixed64(buf, v);
    ASSERT_EQ(DecodeFixed64(buf), v);
    EncodeFixed32(buf, static_cast<uint32_t>(v));
    ASSERT_EQ(DecodeFixed32(buf), static_cast<uint32_t>(v));
  }
}

}  // namespace oyster
