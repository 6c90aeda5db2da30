#!/usr/bin/python3
"""One sample of a TPU VM's chips taken the way Google's tpu-info takes it, for
bench/top.sh to set beside `tpufleet-agent sample --json`.

tpu-info is a Python program: it asks libtpu's runtime metrics service
(tpu.monitoring.runtime.RuntimeMetricService, gRPC on localhost:8431) for one metric per
call, through grpcio with local channel credentials (plaintext HTTP/2 to a peer on the
same host). This does the same with Debian's python3-grpcio and python3-protobuf (so it
runs with /usr/bin/python3), for the six metrics of the wire contract
(/work/shared/reference/tpu-metrics-wire.md): HBM total and used, duty cycle, HBM
bandwidth, TensorCore idle time (keyed by the device id, an int attribute) and the HLO
queue (keyed by a key-value list with device_ordinal and core_type). All six calls of a
sample go over one channel, opened once per process.

The message classes come from `protoc --python_out=STUBS` of tpufleet's
src/tpu_metrics/proto/*.proto (bench/top.sh generates them at bench time); no gRPC
plugin is needed: the method is called by its path with the messages' own
(de)serializers.

Usage: tpu_info_sample.py --stubs DIR [--port PORT] [--count N] [--interval S]
  one sample (default): prints it as JSON, chips by device id;
  --count N: takes N samples, one every S seconds (0: back to back), and prints one JSON
    line: the last sample; the loop's wall and CPU seconds (this process, all its
    threads: grpcio's too) and CPU %; per sample, the median wall time of one sample
    and the CPU seconds (the loop's / N); the peak RSS.
Exit status: 0; 3 when nothing serves on the port (UNAVAILABLE: no job holds the TPU);
1 on any other error, with the message on stderr.
"""
import argparse
import json
import resource
import sys
import time

SERVICE = "/tpu.monitoring.runtime.RuntimeMetricService/"
# libtpu's metric name -> the name of the field in the printed sample.
BY_DEVICE_ID = {
    "tpu.runtime.hbm.memory.total.bytes": "hbm_total_bytes",
    "tpu.runtime.hbm.memory.usage.bytes": "hbm_used_bytes",
    "tpu.runtime.tensorcore.dutycycle.percent": "duty_cycle_percent",
    "tpu.runtime.hbm.utilization.percent": "hbm_bandwidth_percent",
    "tpu.runtime.tensorcore.idle_duration.seconds": "idle_seconds",
}
HLO_QUEUE = "hlo.queue.size.gauge"
DEADLINE_S = 2.0


def gauge_value(gauge):
    kind = gauge.WhichOneof("value")
    return None if kind is None else getattr(gauge, kind)


def attr_value(value):
    kind = value.WhichOneof("attr")
    return None if kind is None else getattr(value, kind)


def sample(call, pb):
    """One sample: {device id: {field: value}}; the HLO queue as {core_type: size}."""
    chips = {}
    for name, field in BY_DEVICE_ID.items():
        response = call(pb.MetricRequest(metric_name=name), timeout=DEADLINE_S)
        for m in response.metric.metrics:
            device = attr_value(m.attribute.value)
            chips.setdefault(str(device), {})[field] = gauge_value(m.gauge)
    response = call(pb.MetricRequest(metric_name=HLO_QUEUE), timeout=DEADLINE_S)
    for m in response.metric.metrics:
        keys = {a.key: attr_value(a.value) for a in m.attribute.value.kvlist_attr.attributes}
        # device_ordinal is a string in newer libtpu, an int in older ones.
        chip = chips.setdefault(str(keys.get("device_ordinal")), {})
        chip.setdefault("hlo_queue", {})[str(keys.get("core_type", ""))] = gauge_value(m.gauge)
    return chips


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stubs", required=True, help="protoc --python_out directory")
    parser.add_argument("--port", type=int, default=8431)
    parser.add_argument("--count", type=int, default=0)
    parser.add_argument("--interval", type=float, default=0.0)
    args = parser.parse_args()

    sys.path.insert(0, args.stubs)
    import grpc  # noqa: E402 (after the stubs' path, as the stubs are)
    import tpu_metric_service_pb2 as pb  # noqa: E402

    channel = grpc.secure_channel(f"localhost:{args.port}", grpc.local_channel_credentials())
    call = channel.unary_unary(SERVICE + "GetRuntimeMetric",
                               request_serializer=pb.MetricRequest.SerializeToString,
                               response_deserializer=pb.MetricResponse.FromString)
    try:
        if args.count <= 0:
            print(json.dumps({"chips": sample(call, pb)}, sort_keys=True))
            return 0
        walls = []
        start_wall, start_cpu = time.monotonic(), time.process_time()
        for i in range(args.count):
            if i and args.interval > 0:
                time.sleep(max(0.0, start_wall + i * args.interval - time.monotonic()))
            w = time.monotonic()
            chips = sample(call, pb)
            walls.append(time.monotonic() - w)
        wall, cpu = time.monotonic() - start_wall, time.process_time() - start_cpu
        print(json.dumps({
            "chips": chips, "samples": args.count, "interval_s": args.interval,
            "wall_s": wall, "cpu_s": cpu, "cpu_pct": 100.0 * cpu / wall,
            "sample_wall_s": sorted(walls)[len(walls) // 2],
            "sample_cpu_s": cpu / args.count,
            "rss_max_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        }, sort_keys=True))
        return 0
    except grpc.RpcError as e:
        if e.code() == grpc.StatusCode.UNAVAILABLE:
            print(f"tpu_info_sample: nothing serves on port {args.port}: no job holds the TPU",
                  file=sys.stderr)
            return 3
        print(f"tpu_info_sample: {e.code().name}: {e.details()}", file=sys.stderr)
        return 1
    finally:
        channel.close()


if __name__ == "__main__":
    sys.exit(main())
