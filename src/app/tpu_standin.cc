// tpu-standin: the stand-in for a JAX program on a TPU, on the emulator's workers at
// /usr/local/bin/tpu-standin. See emulator/standin/standin.h.
#include "emulator/standin/standin.h"

int main(int argc, char** argv) {
  return tpufleet::emulator::standin::StandinMain(argc, argv);
}
