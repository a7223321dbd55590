// Socket descriptors for the JavaScript side's own reads of a connection
// (a request body read straight from its socket, src/rest/http/socket-body.ts).
// Node owns the sockets; this only hands out a second descriptor of one, so
// that a second handle can read it while Node's own is stopped.

#ifndef OYSTER_ADDON_SOCKET_WRAP_H_
#define OYSTER_ADDON_SOCKET_WRAP_H_

#include <napi.h>

namespace oyster {

// The `socket` object of the addon's exports:
//   duplicate(fd) -> number   a new descriptor (close-on-exec) of the same open
//                             socket as fd; throws an Error with `code` (EBADF,
//                             ENOTSOCK, EMFILE) when there is none to give
Napi::Object SocketExports(Napi::Env env);

}  // namespace oyster

#endif  // OYSTER_ADDON_SOCKET_WRAP_H_
