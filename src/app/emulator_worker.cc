// tpufleet-emulator-worker: the init process of one emulated TPU worker VM. The
// emulator's worker hosts start it as PID 1 of the worker's namespaces; it is not meant
// to be run by hand. See emulator/hosts/worker_init.h.
#include "emulator/hosts/worker_init.h"

int main(int argc, char** argv) {
  return tpufleet::emulator::hosts::WorkerInitMain(argc, argv);
}
