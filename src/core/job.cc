#include "core/job.h"
