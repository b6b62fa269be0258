"""Component models: host CPU, NICs (RDMA offload / TCP onload), in-network aggregation switches."""
