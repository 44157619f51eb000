"""Share groups (KIP-932, issue 23), a room beside the classic, consumer and streams groups.

In progress: share_partition.py, the pure state machine of one share-partition (acquisition,
acknowledgement, locks, delivery counts, the start offset, what is persisted). Nothing of it is
served yet: the broker advertises no share-group API until membership, ShareFetch /
ShareAcknowledge and the persisted state are whole.
"""
