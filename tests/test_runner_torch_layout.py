"""The torch.distributed fallback sizes its buffers as nccl-tests does (src/*.cu GetCollByteCount)."""

from simcluster.runner.torch_collectives import element_counts, parse_size


def test_all_gather_counts_follow_nccl_tests_alignment():
    assert element_counts("all_gather", 32, 2, 4) == (4, 8, 4)
    assert element_counts("all_gather", 8, 2, 4)[2] == 0  # skipped: no aligned element per rank
    assert element_counts("reduce_scatter", 1024, 2, 4) == (256, 128, 128)
    assert element_counts("all_reduce", 1024, 2, 4) == (256, 256, 256)


def test_size_suffixes():
    assert parse_size("8G") == 8 * 2**30 and parse_size("1K") == 1024
