// TempDir moved to util/testing (every module's tests use it); this name stays for the
// tests that include it from here.
#pragma once

#include "util/testing/temp_dir.h"
