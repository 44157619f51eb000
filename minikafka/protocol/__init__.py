"""The wire layer: framing, the kio codec wrapper, record batch headers. Pure: no asyncio, no files."""
