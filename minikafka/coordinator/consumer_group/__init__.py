"""KIP-848 consumer groups: the consumer protocol's room beside the classic group coordinator."""
