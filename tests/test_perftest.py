"""perftest parser. No machine this project can reach has an RDMA device (this VM's kernel has no
RDMA support; the GPU machines' NICs are not exposed), so the only real perftest output is the
no-device run below; the tables are built from perftest's documented column layout."""

from __future__ import annotations

import pytest
from conftest import ROOT

from simcluster.errors import TraceFormatError
from simcluster.traces import perftest

BW = """---------------------------------------------------------------------------------------
                    RDMA_Write BW Test
 Dual-port       : OFF          Device         : mlx5_0
---------------------------------------------------------------------------------------
 #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
 65536      5000             97.21              97.18                0.185354
---------------------------------------------------------------------------------------
"""
LAT = """ #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec]
 2       1000          1.61           4.52         1.65                1.67             0.10            2.01                    4.52
"""


def test_bandwidth_table(tmp_path):
    p = tmp_path / "bw.txt"
    p.write_text(BW)
    t = perftest.parse(p)
    assert t.kind == "bw" and t.rows[0].size_bytes == 65536
    assert t.rows[0].values["bw_avg_Bps"] == pytest.approx(97.18e9 / 8)


def test_latency_table(tmp_path):
    p = tmp_path / "lat.txt"
    p.write_text(LAT)
    t = perftest.parse(p)
    assert t.kind == "lat" and t.rows[0].values["t_typical_s"] == pytest.approx(1.65e-6)


def test_real_no_device_run_is_a_one_line_error():
    with pytest.raises(TraceFormatError) as info:
        perftest.parse(ROOT / "tests" / "fixtures" / "perftest_no_device.txt")
    assert "no RDMA device" in info.value.one_line()


def test_truncated_table(tmp_path):
    p = tmp_path / "cut.txt"
    p.write_text(BW.split(" 65536")[0])
    with pytest.raises(TraceFormatError, match="truncated"):
        perftest.parse(p)
