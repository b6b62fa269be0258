"""DLIO / MLPerf Storage workload YAML, read as DLIO reads it (the files under DLIO's
configs/workload/, e.g. unet3d_h100.yaml), checked strictly: an unknown section or key, or a value
of the wrong type, is one line naming the file, line and key.

Only what the storage model uses is interpreted; the rest of DLIO's schema (checkpoint, profiling,
output, ...) is accepted as known and ignored.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from simcluster import documents, strict
from simcluster.errors import ScenarioError

# The largest values a workload may give (a typo such as 1e30 samples is refused, not simulated for hours):
# records up to 64 GiB, 100 million files, batches of a million samples, 1,024 reader threads, 1 h of compute a step.
BOUNDS = {"dataset.record_length": 64 * 2**30, "dataset.record_length_stdev": 64 * 2**30,
          "dataset.num_files_train": 10**8, "dataset.num_samples_per_file": 10**6, "reader.batch_size": 10**6,
          "reader.read_threads": 1024, "reader.prefetch_size": 1024, "train.computation_time": 3600.0,
          "train.computation_time_stdev": 3600.0, "train.epochs": 10**4, "metric.au": 1.0}

# (model, accelerator) -> the emulated compute time per step (s), MLPerf Storage / DLIO workload configs
COMPUTE_TIME_S = {("unet3d", "a100"): 0.636, ("unet3d", "h100"): 0.323, ("unet3d", "v100"): 1.3604,
                  ("unet3d", "b200"): 0.162, ("bert", "v100"): 0.968,
                  ("resnet50", "a100"): 0.435, ("resnet50", "h100"): 0.224,
                  ("cosmoflow", "a100"): 0.00551, ("cosmoflow", "h100"): 0.00350, ("cosmoflow", "v100"): 0.00936}

KNOWN = {
    "model": None, "framework": None,
    "workflow": {"generate_data", "train", "checkpoint", "evaluation", "profiling", "debug", "do_eval"},
    "dataset": {"data_folder", "format", "num_files_train", "num_files_eval", "num_samples_per_file", "record_length",
                "record_length_stdev", "record_length_resize", "num_subfolders_train", "num_subfolders_eval",
                "enable_chunking", "chunk_size", "compression", "compression_level", "file_prefix", "keep_files",
                "generation_buffer_size",
                "record_length_bytes", "record_length_bytes_stdev", "record_length_bytes_resize"},
    "reader": {"data_loader", "batch_size", "batch_size_eval", "read_threads", "file_shuffle", "sample_shuffle",
               "prefetch_size", "computation_threads", "transfer_size", "preprocess_time", "preprocess_time_stdev",
               "read_type", "shuffle_size", "data_loader_classname", "data_loader_sampler", "reader_classname",
               "multiprocessing_context", "pin_memory", "odirect", "dont_use_mmap", "file_access"},
    "train": {"epochs", "computation_time", "computation_time_stdev", "total_training_steps", "seed_change_epoch", "seed"},
    "evaluation": {"eval_time", "eval_time_stdev", "epochs_between_evals", "eval_after_epoch"},
    "checkpoint": {"checkpoint_folder", "checkpoint_after_epoch", "epochs_between_checkpoints", "model_size",
                   "steps_between_checkpoints", "type", "checkpoint_mechanism_classname", "fsync", "time_between_checkpoints",
                   "num_checkpoints", "model_datatype", "optimizer_datatype", "tensor_parallelism", "pipeline_parallelism",
                   "zero_stage", "optimization_groups", "layer_parameters", "num_layers"},
    "metric": {"au"},
    "output": {"folder", "log_file", "metric"},
    "profiling": {"profiler", "iostat_devices"},
    "model_config": None, "storage": {"storage_root", "storage_type"}, "hydra": None,
}


@dataclass(frozen=True)
class DlioWorkload:
    path: str
    model: str
    format: str
    num_files: int
    samples_per_file: int
    record_bytes: float
    record_stdev_bytes: float
    batch_size: int
    read_threads: int
    prefetch: int
    computation_time_s: float
    computation_stdev_s: float
    epochs: int
    au_threshold: float      # fraction, e.g. 0.90

    def steps_per_epoch(self, accelerators: int) -> int:
        """DLIO: floor(samples / (batch x ranks))."""
        return (self.num_files * self.samples_per_file) // (self.batch_size * accelerators)


def load(path: str | Path) -> DlioWorkload:
    path = Path(path)
    doc, lines = strict.load_yaml(path, ScenarioError, what="DLIO workload (YAML)", lines=True,
                                  schema=documents.DLIO_WORKLOAD)

    def fail(key: str, message: str, hint: str | None = None):
        line = lines.get(key)
        raise ScenarioError(f"{key}: {message}" if key else message, where=f"{path}:{line}" if line else str(path), hint=hint)

    if not isinstance(doc, dict):
        fail("", "a DLIO workload is a mapping with sections dataset, reader, train, ...")
    for section, value in doc.items():
        if section not in KNOWN:
            fail(section, f"unknown section '{section}'", hint=f"DLIO sections: {', '.join(sorted(KNOWN))}")
        keys = KNOWN[section]
        if keys is not None:
            if not isinstance(value, dict):
                fail(section, "expected a mapping")
            for key in value:
                if key not in keys:
                    fail(f"{section}.{key}", f"unknown key '{key}'", hint=f"known in {section}: {', '.join(sorted(keys))}")

    def get(section: str, key: str, kind, default=None, minimum=None):
        value = (doc.get(section) or {}).get(key, default)
        if value is None:
            fail(f"{section}.{key}" if section in doc else section, f"missing key '{key}'")
        if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
            fail(f"{section}.{key}", f"expected an integer, got {strict.short(value)}")
        if kind is float and (isinstance(value, bool) or not isinstance(value, (int, float))):
            fail(f"{section}.{key}", f"expected a number, got {strict.short(value)}")
        low, high = minimum if minimum is not None else -math.inf, BOUNDS.get(f"{section}.{key}", math.inf)
        if not (low <= value <= high):  # also refuses NaN
            fail(f"{section}.{key}", f"expected a number from {low:g} to {high:g}, got {strict.short(value)}")
        return kind(value) + 0 if kind is float else kind(value)   # -0.0 -> 0.0: numpy refuses a scale of -0.0

    def _threads() -> int:
        if (doc.get("reader") or {}).get("read_threads") == 0:
            fail("reader.read_threads", "0 (batches loaded inside the training loop, no loader threads) is not simulated; "
                 f"expected 1 to {BOUNDS['reader.read_threads']}")
        return get("reader", "read_threads", int, 1, 1)

    for section in ("dataset", "reader", "train"):
        if section not in doc:
            fail("", f"missing section '{section}'")
    record = get("dataset", "record_length", float, doc.get("dataset", {}).get("record_length_bytes"), 1)
    stdev = get("dataset", "record_length_stdev", float, doc["dataset"].get("record_length_bytes_stdev", 0), 0)
    return DlioWorkload(str(path), str(doc.get("model", path.stem)), str(doc["dataset"].get("format", "npz")),
                        get("dataset", "num_files_train", int, None, 1), get("dataset", "num_samples_per_file", int, 1, 1),
                        record, stdev, get("reader", "batch_size", int, None, 1), _threads(),
                        get("reader", "prefetch_size", int, 2, 0), get("train", "computation_time", float, 0.0, 0),
                        get("train", "computation_time_stdev", float, 0.0, 0), get("train", "epochs", int, 1, 1),
                        get("metric", "au", float, 0.9, 0.01) if "metric" in doc else 0.9)
