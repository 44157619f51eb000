"""Share groups (KIP-932, issue 23), a room beside the classic, consumer and streams groups.

In progress, pure cores so far: share_partition.py, the state machine of one share-partition
(acquisition, acknowledgement, locks, delivery counts, the start offset, what is persisted);
assignor.py, Kafka's "simple" share assignor; sessions.py, the share sessions' epochs;
state_log.py, the `__share_group_state` records, and records.py, the share groups' records in
`__consumer_offsets` (types 10-15), both byte for byte as Kafka 4.3.1 writes them. Nothing
is served yet: the broker advertises no share-group API until membership, ShareFetch /
ShareAcknowledge and the persisted state are whole.
"""
