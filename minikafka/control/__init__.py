"""The user-facing control room (issue 20): fault rules a test sets on the running broker.

Pure: the broker imports it; it imports nothing of the broker's."""
