#include "engine/version.h"

namespace oyster {

std::string Version::ToString() const {
  return std::to_string(timestamp) + "." + std::to_string(tick()) + "@" + std::to_string(node());
}

}  // namespace oyster
