"""A packet-level reference for the fabric's flow model: the same Platform and flows in ns-3 (the optional `packet`
extra, `pip install -e '.[packet]'`), compared with network/flows.py. topology.py (the fabric and per-flow routes as
arrays) and patterns.py (the traffic and the flow model's side) need no ns-3; ns3_run.py imports it; compare.py runs
both sides (ns-3 imported only when a comparison runs). docs/models/fabric.md, Packet-level reference."""
