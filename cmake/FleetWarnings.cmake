# fleet_warnings: the warning set every tpufleet target builds with.
add_library(fleet_warnings INTERFACE)
target_compile_options(fleet_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor)
if(TPUFLEET_WERROR)
  target_compile_options(fleet_warnings INTERFACE -Werror)
endif()
