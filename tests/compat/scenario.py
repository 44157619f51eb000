"""What every client program of the compatibility matrix does, said once (the programs in
clients/ implement it with their own library; run.py drives them and writes the table).

A program is called `<program> <scenario> <bootstrap> <prefix>`; it uses topics and groups named
from <prefix> only, exits 0 when the scenario held, and otherwise prints one line saying what did
not hold and exits 1. The scenarios:

- produce_consume: a 3-partition topic (created by the client's admin API where it has one, else
  auto-created); 300 keyed records produced and all read back from the start, each key on one
  partition, in order within each partition.
- group_resume: two consumers of one group on a 2-partition topic, one partition each once the group
  settles; then 100 records are produced, the two share them (each reads some) and commit; after
  both close, 50 more are produced and a new member of the group reads exactly those 50. (kcat and
  Kafka's console consumer are one member at a time: one reads the 100, the next the 50.)
- idempotent: an idempotent producer writes 200 records with acks=all; exactly 200 are read back.
- transactional: consume-transform-produce exactly once: 100 input records copied upper-cased to an
  output topic in transactions of 10 records, each committing the group's input offsets; the third
  transaction is aborted and redone. A read_committed consumer then reads exactly the 100 output
  values, and the group's committed input offset is 100.
- admin: create a topic with retention.ms=100000, describe it, change retention.ms to 200000, add
  partitions (2 -> 4), list topics and groups, delete records below offset 5 where the API has it,
  delete the topic.
"""

SCENARIOS = ("produce_consume", "group_resume", "idempotent", "transactional", "admin")
N_RECORDS = 300
