"""The asyncio shell and composition root: server, connections, dispatch, handlers."""
