"""A Ray cluster of simulated envgym hosts on this machine (:func:`local_cluster`), for tests, benchmarks and
trying :class:`~envgym.vector.ray.RayEpisodePool` out: every Ray address on loopback, no dashboard, no usage
statistics. Also importable from :mod:`envgym.vector.ray`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
from collections.abc import Iterator
from typing import Any

from envgym.vector.rayhost import HOST_RESOURCE, _ray


@dataclasses.dataclass
class LocalCluster:
    """Simulated hosts on this machine (:func:`local_cluster`); ``remove_host`` / ``add_host`` change them."""

    cluster: Any
    slots: int
    cpus: float
    object_store_bytes: int
    nodes: list[Any] = dataclasses.field(default_factory=list)

    @property
    def address(self) -> str:
        return self.cluster.address

    def add_host(self, slots: int | None = None) -> Any:
        node = self.cluster.add_node(num_cpus=self.cpus, node_ip_address="127.0.0.1",
                                     object_store_memory=self.object_store_bytes,
                                     resources={HOST_RESOURCE: slots or self.slots})
        self.nodes.append(node)
        return node

    def remove_host(self, index: int = -1) -> None:
        """Kill a host's node (raylet, its workers and so its actor), as a machine that dies."""
        node = self.nodes.pop(index)
        self.cluster.remove_node(node, allow_graceful=False)


@contextlib.contextmanager
def local_cluster(hosts: int = 2, *, slots: int = 8, cpus: float = 1, object_store_mb: int = 80,
                  connect: bool = True) -> Iterator[LocalCluster]:
    """A Ray cluster of ``hosts`` simulated hosts on this machine: a head with no CPUs and no envgym slots,
    and ``hosts`` nodes offering ``slots`` each. Every address stays on loopback, no dashboard, no usage
    statistics, a small object store; a killed node is declared dead within about five seconds. With ``connect``
    this process is its driver (``ray.init``) until the block ends."""
    # Read by Ray at import, here and in every process it starts: keep loopback addresses on loopback
    # (Ray otherwise swaps 127.0.0.1 for the machine's address) and send no usage statistics.
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    ray = _ray()
    from ray._private import ray_constants
    from ray.cluster_utils import Cluster

    ray_constants.ENABLE_RAY_CLUSTER = False  # the variable above, for a Ray imported before this call
    store = object_store_mb * 1024 * 1024
    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 0, "include_dashboard": False, "node_ip_address": "127.0.0.1", "object_store_memory": store,
        # a killed node is declared dead after 5 missed 1 s checks (Ray's default is 3 x 5 s); fewer declare a
        # node that is only starved of CPU (a busy 2-core machine) dead
        "_system_config": {"health_check_period_ms": 1000, "health_check_failure_threshold": 5,
                           "health_check_initial_delay_ms": 0}})
    local = LocalCluster(cluster, slots, cpus, store)
    try:
        for _ in range(hosts):
            local.add_host()
        cluster.wait_for_nodes()
        if connect:
            ray.init(address=cluster.address, logging_level=logging.WARNING, configure_logging=False)
        yield local
    finally:
        if connect:
            ray.shutdown()
        cluster.shutdown()
