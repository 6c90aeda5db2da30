// Makes GoogleTest print a Status as "code: message" instead of its bytes, so a failed
// EXPECT_EQ on two statuses shows what differs. Include it in tests only.
#pragma once

#include <ostream>

#include "util/status.h"

namespace tpufleet {

inline void PrintTo(const Status& status, std::ostream* os) {
  *os << status.ToString();
}

}  // namespace tpufleet
