"""Share groups (KIP-932, issue 23), a room beside the classic, consumer and streams groups.

- share_partition.py: the state machine of one share-partition (acquisition, acknowledgement,
  locks, delivery counts, the start offset, what each change leaves to persist); pure.
- assignor.py: Kafka's "simple" share assignor; sessions.py: the share sessions' epochs; pure.
- state.py / decisions.py: the group and its members as values, and the heartbeat decisions
  (records 10-15 in `__consumer_offsets`); pure. coordinator.py: their async shell, behind the
  GroupCoordinator's door.
- state_log.py: the `__share_group_state` records; share_coordinator.py: what Kafka's share
  coordinator keeps in that topic (Initialize/Read/Write/DeleteShareGroupState as method calls).
The broker's share-partition manager (broker/share_partitions.py) is the one door from the
ShareFetch and ShareAcknowledge handlers to these cores.
"""
