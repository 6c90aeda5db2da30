#include "cli/emulator_row.h"

namespace tpufleet::cli {

Command EmulatorCommandRow(ExitStatus (*run)(Invocation&)) {
  return {"emulator",
          "Run a local Cloud TPU whose workers are real hosts (start, stop, status, inject, token)",
          "start [--port P] [--config FILE] [--catalog FILE] | stop | status | inject KIND [NODE] [flags] | token rotate",
          "start     starts the emulator in the background and prints its endpoint and\n"
          "          its token file (STATE/token, yours alone: every call needs the token;\n"
          "          gcloud takes it through CLOUDSDK_AUTH_ACCESS_TOKEN_FILE); a crashed\n"
          "          emulator's leftovers are cleaned first. Needs root: every worker is\n"
          "          its own network namespace with a real sshd. It serves the types of\n"
          "          the catalog (--catalog FILE over the built-in one, as everywhere).\n"
          "stop      stops it and removes every worker, namespace, process and file it made.\n"
          "status    the emulator's nodes, their workers' addresses, and active faults\n"
          "          (--json adds endpoint and token_file).\n"
          "inject    a fault, as the real service shows them:\n"
          "            stockout --zone Z [--family F] [--for D]   creates fail with code 8\n"
          "            quota --region R [--family F] [--for D]    creates get HTTP 429\n"
          "            storm --rate X [--codes 429,500,503] [--seed N] [--for D]\n"
          "            preempt NODE [--notice D]                  spot preemption\n"
          "            maintenance NODE [--notice D]              reboot on new addresses\n"
          "            cutoff NODE --worker N [--for D]           a worker off the network\n"
          "            device NODE --worker N [--device K] [--for D]  chip K (0) gone from it\n"
          "            slow --factor X [--for D]                  operations take X times longer\n"
          "            denied [--for D]                           every call gets HTTP 403\n"
          "            clear [FAULT-ID]                           end one fault, or all\n"
          "token     rotate: a new token in STATE/token; the old one gets HTTP 401 from\n"
          "          then on, as a revoked credential does.\n"
          "The state dir defaults to $TPUFLEET_EMULATOR_DIR, else\n"
          "${XDG_STATE_HOME:-~/.local/state}/tpufleet/emulator; one that another user\n"
          "made, or that others may write, is refused.",
          {{"port", "P", "start: the API's port on 127.0.0.1 (default: a free one)"},
           {"config", "FILE", "start: capacity, quota, timings and auth (YAML)"},
           {"state-dir", "DIR", "where the emulator keeps its workers' disks and its log"},
           {"zone", "ZONE", "inject stockout: the zone"},
           {"region", "REGION", "inject quota: the region"},
           {"family", "FAMILY", "inject stockout/quota: only this family (v4, v5litepod…)"},
           {"for", "DURATION", "inject: how long the fault lasts (default: until cleared)"},
           {"rate", "X", "inject storm: fraction of API calls that fail, 0 to 1"},
           {"codes", "LIST", "inject storm: HTTP codes to answer with"},
           {"seed", "N", "inject storm: seed, so the same calls fail again"},
           {"notice", "DURATION", "inject preempt/maintenance: warning before the event"},
           {"worker", "N", "inject cutoff/device: the worker's index"},
           {"device", "K", "inject device: the chip's index on the worker (default 0)"},
           {"factor", "X", "inject slow: how many times longer operations take"}},
          true,
          run};
}

}  // namespace tpufleet::cli
