"""The scenarios tests/fuzzing.py puts a mutated card into (a NIC, GPU, aggregation switch, NVLS or training card
under test), as format strings: {card} the mutated file, {ddp} a DDP card."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

NIC_SCENARIO = f"""name: nic card under test
machine:
  card: {ROOT / "models" / "collective" / "h200x4-nvlink.yaml"}
  gpus_per_node: 4
  nodes: 4
  nic: {{{{card: '{{card}}', per_node: 4}}}}
  fabric: {{{{kind: leaf-spine, oversubscription: 2}}}}
jobs:
  - {{{{kind: qperf, tests: [tcp_bw, tcp_lat, rc_bw, rc_lat]}}}}
  - {{{{kind: collective_sweep, op: all_reduce, min_size: 1M, max_size: 1G, factor: 32}}}}
"""


MACHINE_4X4 = f"""  card: {ROOT / "models" / "collective" / "h200x4-nvlink.yaml"}
  gpus_per_node: 4
  nodes: 4
  nic: {{{{card: {ROOT / "models" / "nic" / "roce-400g.yaml"}, per_node: 4}}}}
  fabric: {{{{kind: leaf-spine}}}}
"""
GPU_SCENARIO = "name: gpu card under test\nmachine:\n" + MACHINE_4X4 + """  gpu: {{card: '{card}'}}
jobs:
  - kind: llm_training
    model: {{layers: 8, hidden: 1024, ffn: 4096, heads: 16, kv_heads: 8, vocab: 32000, seq: 2048}}
    parallel: {{tp: 4, pp: 2, dp: 2}}
    global_batch: 16
    micro_batch: 1
"""
SWITCH_SCENARIO = "name: switch card under test\nmachine:\n" + MACHINE_4X4 + """  aggregation: {{card: '{card}'}}
jobs:
  - {{kind: collective_sweep, op: all_reduce, min_size: 1M, max_size: 1G, factor: 32}}
"""
NVLS_SCENARIO = "name: nvls card under test\nmachine:\n" + MACHINE_4X4.replace("gpus_per_node: 4", "gpus_per_node: 8") + \
    """  nvls: {{card: '{card}'}}
jobs:
  - {{kind: collective_sweep, op: all_reduce, min_size: 1M, max_size: 1G, factor: 32}}
"""
TRAINING_SCENARIO = "name: training card under test\nmachine:\n" + MACHINE_4X4 + """jobs:
  - {{kind: training, workload: '{card}', ddp: {ddp}}}
"""
