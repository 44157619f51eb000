"""SCRAM credentials (KIP-554): a room of its own.

credentials.py  Kafka's SCRAM mechanisms, the checks AlterUserScramCredentials applies, the stored
                and server keys derived from a salted password, and what DescribeUserScramCredentials
                answers (pure)

Kafka keeps SCRAM credentials whether or not a listener speaks SASL (kafka-configs.sh and the
admin clients manage them first, then SASL listeners authenticate against them). The broker's
doors are the two handlers and storage/scram_store.py, where the credentials persist; SASL
authentication (issue 21) reads the same table.
"""
