"""The PCIe link between a GPU and its NIC: what GPUDirect RDMA traffic crosses on its way to the wire.

A link is a generation and a lane count, written `gen5x16`. Its payload rate per direction is
    rate = lanes x transfer rate x encoding x TLP efficiency x link-layer efficiency
  - transfer rate per lane (PCI-SIG base specifications): Gen3 8 GT/s, Gen4 16, Gen5 32, Gen6 64;
  - encoding: 128b/130b for Gen3-5; Gen6 sends 256-byte FLITs of which 236 bytes carry TLPs (the rest is
    the data-link payload, CRC and FEC), 236/256;
  - TLP efficiency at a 256-byte max payload: Gen3-5 a TLP carries 24 bytes besides its payload (4-dword
    header 16, STP framing token with sequence number 4, LCRC 4), 256/280; Gen6 FLIT mode 16 (the header;
    sequence and CRC are the FLIT's), 256/272 (Intel's PCIe throughput notes: 5-7 dwords of overhead per
    TLP; 256-byte posted writes reach 88.9-89.8% before DLLPs);
  - link layer: ACK / flow-control DLLPs, SKP ordered sets and read-completion turnaround, taken as 8%
    (Gen3-5) and 5% (Gen6, whose DLLPs ride in the FLIT) - the assumption that sets the result.
Gen4 x16: 26.5 GB/s, Gen5 x16: 53.0 GB/s (measured GPU peaks: 25 GB/s on an A100's Gen4 x16, the BaM
system, ZaidQureshi/bam#54; NCCL's own topology prices Gen4 x16 at 24 GB/s and Gen5 at 48, topo.cc
kvDictPciGen x width / 80). Gen6 x16: 105.5 GB/s, derived the same way and not checked against a
measurement. docs/models/fabric.md, "Hardware limits".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# generation -> (transfers/s per lane, encoding or FLIT efficiency, TLP payload efficiency, link-layer efficiency)
GENERATIONS = {
    3: (8e9, 128 / 130, 256 / 280, 0.92),
    4: (16e9, 128 / 130, 256 / 280, 0.92),
    5: (32e9, 128 / 130, 256 / 280, 0.92),
    6: (64e9, 236 / 256, 256 / 272, 0.95),
}
LANES = (1, 2, 4, 8, 16, 32)

# The GPU's own host interface as its HGX / SXM baseboard wires it (what the GPU-to-NIC path cannot exceed):
# A100 SXM4 PCIe Gen4 x16 and H100 / H200 SXM5 Gen5 x16 (NVIDIA's datasheets: 64 and 128 GB/s bidirectional);
# HGX B200 Gen5 x16 (the B200 die has a Gen6 x16 port, but the DGX / HGX B200 board's retimers, PCIe switches and
# ConnectX-7 NICs run Gen5; a machine wired at Gen6 says so with machine.nic.pcie); Volta Gen3 x16.
GPU_PCIE = {"volta": "gen3x16", "ampere": "gen4x16", "hopper": "gen5x16", "blackwell": "gen5x16"}

_FORM = re.compile(r"^\s*gen\s*([0-9]+)\s*x\s*([0-9]+)\s*$", re.IGNORECASE)


@dataclass(frozen=True, order=True)
class PcieLink:
    gen: int
    lanes: int

    @property
    def payload_Bps(self) -> float:
        """Achievable payload bytes/s in one direction (module docstring)."""
        rate, encoding, tlp, link = GENERATIONS[self.gen]
        return self.lanes * rate / 8 * encoding * tlp * link

    @property
    def label(self) -> str:
        return f"PCIe Gen{self.gen} x{self.lanes}"

    def __str__(self) -> str:
        return f"gen{self.gen}x{self.lanes}"


def parse(text) -> PcieLink:
    """'gen5x16' (also 'Gen5 x16') -> PcieLink(5, 16); ValueError naming what is accepted otherwise."""
    m = _FORM.match(text) if isinstance(text, str) else None
    if not m or int(m.group(1)) not in GENERATIONS or int(m.group(2)) not in LANES:
        raise ValueError(f"expected a PCIe link as gen<{'|'.join(map(str, GENERATIONS))}>x<{'|'.join(map(str, LANES))}>, "
                         f"e.g. gen5x16, got {str(text)[:40]!r}")
    return PcieLink(int(m.group(1)), int(m.group(2)))


def narrower(*links: PcieLink | None) -> PcieLink | None:
    """The link of lowest payload rate among those known (None: not known)."""
    known = [x for x in links if x is not None]
    return min(known, key=lambda x: x.payload_Bps) if known else None
