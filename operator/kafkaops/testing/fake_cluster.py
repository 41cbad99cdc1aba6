"""The fake multi-broker Kafka cluster TEST DOUBLE: the public import point.

    from kafkaops.testing.fake_cluster import FakeClusterDouble, FaultDouble

    async with FakeClusterDouble(brokers=3, mode="zk", tick_interval=None) as cluster:
        ...  # point the admin client at cluster.bootstrap
        cluster.inject(FaultDouble.not_controller(count=1))
        cluster.advance(3)  # virtual time: reassignment progress, delayed leaders

The implementation lives in ``kafkaops.testing.fake`` (state, handlers,
faults, server). Run one in its own process with ``kafkaops dev-cluster``.
"""

from kafkaops.testing.fake import *  # noqa: F403
from kafkaops.testing.fake import __all__  # noqa: F401
