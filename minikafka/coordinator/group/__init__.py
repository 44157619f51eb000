"""The classic group coordinator (Kafka's GroupMetadataManager / ClassicGroup / OffsetMetadataManager)."""
