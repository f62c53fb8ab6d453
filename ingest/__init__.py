"""Ingest: turns PDFs, Word files, EPUBs, HTML, text and logs of any size into located token streams.

doc = open_document(path)
stream = doc.token_stream(tokenizer, chunk_tokens=2048, progress=callback)
for ids in stream: ...
stream.location_map.save(path); stream.fingerprint; stream.warnings
"""

from .document import Document, open_document
from .errors import IngestError
from .location import Location, Segment
from .locmap import TokenLocationMap
from .rawbytes import file_bytes, file_fingerprint
from .tokenstream import Progress, TokenStream

__all__ = [
    "Document",
    "IngestError",
    "Location",
    "Progress",
    "Segment",
    "TokenLocationMap",
    "TokenStream",
    "file_bytes",
    "file_fingerprint",
    "open_document",
]
