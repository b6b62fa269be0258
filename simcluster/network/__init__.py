"""Network core: topologies (networkx), routing, max-min bandwidth sharing, flows in SimPy."""
