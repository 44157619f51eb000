"""Client quotas (Kafka's KIP-13/124/257/599/612 quotas on one node): a room of its own.

entity.py  what AlterClientQuotas accepts and DescribeClientQuotas filters match (pure)
rate.py    Kafka's sampled rate and token bucket, time passed in (pure)
manager.py ClientQuotas: configured quotas, which one applies, the throttle time earned (pure)

The broker's doors are broker/throttling.py (every request's throttle time and the channel
mute), the two handlers, and the controller-mutation check in the topic handlers.
"""
