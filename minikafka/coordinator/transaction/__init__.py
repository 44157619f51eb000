"""The transaction coordinator (Kafka's TransactionCoordinator / TransactionStateManager)."""
