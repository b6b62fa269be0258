"""The host cost of DLIO v1.0's TensorFlow/TFRecord input path per step, measured on this machine (issue 42, CosmoFlow).

DLIO v1.0 (dlio_benchmark 01283ab, "Mlperf storage v1.0", reader/tf_reader.py and main.py `_train`) feeds CosmoFlow as
    list_files -> TFRecordDataset(buffer_size=transfer_size, num_parallel_reads=read_threads) -> shuffle(seed)
    -> batch(batch_size) -> map(tf.py_function(parse_example), num_parallel_calls=computation_threads) -> repeat
    -> take -> prefetch(prefetch_size)
and its step loop is `for batch in loader: (stats) sleep(computation_time); (stats); comm.barrier()`. This script builds
that pipeline (the same calls; tensorflow is not a simcluster dependency: run it in a separate environment with
tensorflow-cpu) over TFRecord files of CosmoFlow's record size kept in memory (/dev/shm, so the drive is not measured),
and times, per step, how long `next(iterator)` blocks:

- compute 0: the pipeline's own rate (samples/s one rank's host path delivers, no drive in the way);
- compute = the workload's computation_time: the wait left after the compute overlapped what it could, i.e. the
  per-step host cost that adds to every step (the model's `step_host_s`).

    /tmp/tf-venv/bin/python studies/dlio_tf_step_cost.py --out calibration/local-dlio-tf-step-2026-11-28/run.json

Deterministic inputs (seeded record contents); the times are this machine's (2 shared cores), said in the output.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

RECORD_BYTES = 2828486          # CosmoFlow's record_length (scenarios/workloads/cosmoflow_*.yaml)


def write_records(folder: Path, files: int) -> list[str]:
    import numpy as np
    import tensorflow as tf

    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    image = rng.integers(0, 255, RECORD_BYTES - 32, dtype=np.uint8).tobytes()
    names = []
    for i in range(files):
        path = folder / f"img_{i:05d}.tfrecord"
        with tf.io.TFRecordWriter(str(path)) as w:
            ex = tf.train.Example(features=tf.train.Features(feature={
                "image": tf.train.Feature(bytes_list=tf.train.BytesList(value=[image])),
                "size": tf.train.Feature(int64_list=tf.train.Int64List(value=[len(image)]))}))
            w.write(ex.SerializeToString())
        names.append(str(path))
    return names


def pipeline(files: list[str], read_threads: int, computation_threads: int, transfer_size: int, prefetch: int,
             steps: int):
    import tensorflow as tf

    resized = tf.convert_to_tensor([0] * 16, dtype=tf.uint8)

    def parse(serialized):        # DLIO v1.0 TFReader._parse_image: parse_example, return a fixed tensor
        tf.io.parse_example(serialized=serialized, features={"image": tf.io.FixedLenFeature([], tf.string),
                                                             "size": tf.io.FixedLenFeature([], tf.int64)})
        return resized

    names = tf.data.Dataset.list_files(files, shuffle=True, seed=0).shard(num_shards=1, index=0)
    ds = tf.data.TFRecordDataset(filenames=names, buffer_size=transfer_size, num_parallel_reads=read_threads)
    ds = ds.shuffle(buffer_size=1024, seed=0).batch(1, drop_remainder=True)
    ds = ds.map(lambda x: tf.py_function(func=parse, inp=[x], Tout=[tf.uint8]), num_parallel_calls=computation_threads)
    return ds.repeat().take(steps).prefetch(buffer_size=prefetch)


def measure(files, compute_s: float, steps: int, **kw) -> dict:
    waits, t_start = [], time.perf_counter()
    it = iter(pipeline(files, steps=steps, **kw))
    for _ in range(steps):
        t0 = time.perf_counter()
        next(it)
        waits.append(time.perf_counter() - t0)
        if compute_s > 0:
            time.sleep(compute_s)
    wall = time.perf_counter() - t_start
    body = waits[len(waits) // 5:]       # the first fifth is the pipeline's start (threads, first reads)
    return {"compute_s": compute_s, "steps": steps, "wall_s": wall, **kw,
            "wait_median_s": statistics.median(body), "wait_mean_s": statistics.fmean(body),
            "wait_p90_s": sorted(body)[int(0.9 * len(body))], "steps_per_s_after_start": len(body) / sum(
                w + compute_s for w in body)}


def main() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))   # simcluster/script_args.py: standard library only
    from simcluster.script_args import ArgumentParser

    parser = ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--files", type=int, default=256)
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--data", default="/dev/shm/dlio-tf-step-cost")
    args = parser.parse_args()
    import tensorflow as tf

    files = write_records(Path(args.data), args.files)
    runs = []
    for read_threads, compute_s in [(4, 0.0), (4, 0.00551), (4, 0.00350), (8, 0.0), (8, 0.00551)]:
        for prefetch in (0, 2):
            r = measure(files, compute_s, args.steps, read_threads=read_threads, computation_threads=8,
                        transfer_size=1048576, prefetch=prefetch)
            print(json.dumps({k: (round(v, 6) if isinstance(v, float) else v) for k, v in r.items()}), flush=True)
            runs.append(r)
    meta = {"tensorflow": tf.__version__, "python": platform.python_version(), "cpus": os.cpu_count(),
            "machine": platform.machine(), "cpu_model": next((line.split(":", 1)[1].strip() for line in
                                                              Path("/proc/cpuinfo").read_text().splitlines()
                                                              if line.startswith("model name")), "?"),
            "record_bytes": RECORD_BYTES, "files": args.files, "data": args.data + " (tmpfs: no drive)"}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"meta": meta, "runs": runs}, indent=1))


if __name__ == "__main__":
    main()
