import pytest

from simcluster.errors import UnitError
from simcluster.units import parse_bandwidth, parse_nccl_size, parse_size, parse_size_arg, parse_time


def test_bandwidth_bits_and_bytes():
    assert parse_bandwidth("100Gbps") == pytest.approx(12.5e9)
    assert parse_bandwidth("97.3 Gb/sec") == pytest.approx(97.3e9 / 8)
    assert parse_bandwidth("900GB/s") == pytest.approx(900e9)


def test_time_and_size():
    assert parse_time("13.9us") == pytest.approx(13.9e-6)
    assert parse_time("2ms") == pytest.approx(2e-3)
    assert parse_size("16GiB") == 16 * 2**30
    assert parse_size("1.5MB") == pytest.approx(1.5e6)
    for bits in ("1Gb", "128Kb", "4 Mbit"):      # a size in bits is refused: '1Gb' read as 1.25e8 bytes misled a user
        with pytest.raises(UnitError, match="in bits"):
            parse_size(bits)
    assert parse_nccl_size("8G") == 8 * 2**30
    assert parse_size_arg("1K") == 1024 and parse_size_arg("4KiB") == 4096


@pytest.mark.parametrize("bad", ["100Gbs", "fast", "10 parsecs"])
def test_unit_typos_are_one_line_errors(bad):
    with pytest.raises(UnitError) as err:
        parse_bandwidth(bad)
    assert bad in str(err.value) and "\n" not in str(err.value)


def test_a_bare_zero_time_needs_no_unit_but_other_bare_numbers_do():
    import pytest

    from simcluster.units import UnitError, parse_time

    assert parse_time(0) == parse_time("0") == 0.0
    with pytest.raises(UnitError, match="no known time unit"):
        parse_time("5")
