"""Everything kept under the data home: the store, the loaded models and the app's own files of each document."""

from __future__ import annotations

from pathlib import Path

from infinipot.app.library.documents import DocumentFiles
from infinipot.app.library.models import ModelShelf
from infinipot.app.library.retrieval_heads import RetrievalHeadsShelf
from infinipot.storage.paths import data_home
from infinipot.storage.store import Store


class Library:
    def __init__(self, home: Path | None = None, device: str = "auto", dtype: str = "auto") -> None:
        self.home = home or data_home()
        self.store = Store(self.home)
        self.models = ModelShelf(self.home, device, dtype)
        self.files = DocumentFiles(self.home)
        self.heads = RetrievalHeadsShelf(self.home)
