"""Reader for EPUB books: chapters in spine order, read straight from the zip (no AGPL libraries)."""

from __future__ import annotations

import posixpath
import zipfile
import zlib
from collections.abc import Iterator
from urllib.parse import unquote
from xml.etree import ElementTree

from ..blocks import Block, BlockBuilder
from ..errors import IngestError
from ..textdecode import TextDecoder, sniff_markup_encoding
from ..zipsafe import damaged, open_zip, read_member, verify_member
from .base import ReadContext, Reader, Source
from .html import markup_blocks

_LABEL = "EPUB"
_CONTAINER = "META-INF/container.xml"
_ENCRYPTION = "META-INF/encryption.xml"
_PACKAGE_MEDIA_TYPE = "application/oebps-package+xml"
_CHAPTER_MEDIA_TYPES = {"application/xhtml+xml", "text/html", "application/xml", "text/x-oeb1-document"}
_SMALL_XML_LIMIT = 8 << 20
_READ_BYTES = 256 << 10


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


class EpubReader(Reader):
    """Each spine document is a 'chapter': ``page`` is its 1-based spine position, lines restart per chapter."""

    kind = "epub"
    page_label = "chapter"

    def __init__(self, source: Source) -> None:
        super().__init__(source)
        with open_zip(source.path, self.name, _LABEL) as archive:
            package_path = self._package_path(archive)
            chapters = self._spine(archive, package_path)
            present = set(archive.namelist())
            self._missing = [path for path in chapters if path not in present]
            self.chapters = [path for path in chapters if path in present]
            if not self.chapters:
                raise IngestError(f"'{self.name}' has no readable chapters")
            self._check_drm(archive)
            for path in self.chapters:
                verify_member(archive, path, self.name, _LABEL)
            self._sizes = [archive.getinfo(path).compress_size for path in self.chapters]
        self.pages = len(self.chapters)

    def _xml(self, archive: zipfile.ZipFile, member: str) -> ElementTree.Element:
        data = read_member(archive, member, self.name, _LABEL, _SMALL_XML_LIMIT)
        try:
            return ElementTree.fromstring(data)
        except ElementTree.ParseError:
            raise IngestError(f"'{self.name}' is damaged: '{member}' is not valid XML") from None

    def _resolve(self, base: str, href: str) -> str:
        target = unquote(href.split("#", 1)[0]).replace("\\", "/")
        resolved = posixpath.normpath(posixpath.join(base, target))
        if "://" in target or target.startswith("/") or resolved == ".." or resolved.startswith("../"):
            raise IngestError(
                f"'{self.name}' refers to a file outside the book ('{href}'), "
                "a sign of a malicious file; it was not opened"
            )
        return resolved

    def _package_path(self, archive: zipfile.ZipFile) -> str:
        for element in self._xml(archive, _CONTAINER).iter():
            if _local(element.tag) == "rootfile" and element.get("full-path"):
                if element.get("media-type", _PACKAGE_MEDIA_TYPE) == _PACKAGE_MEDIA_TYPE:
                    return self._resolve("", element.get("full-path"))
        raise IngestError(f"'{self.name}' is not a valid EPUB: it does not say where its contents are")

    def _spine(self, archive: zipfile.ZipFile, package_path: str) -> list[str]:
        package = self._xml(archive, package_path)
        base = posixpath.dirname(package_path)
        manifest: dict[str, tuple[str, str]] = {}
        spine: list[str] = []
        for element in package.iter():
            name = _local(element.tag)
            if name == "item" and element.get("id") and element.get("href"):
                manifest[element.get("id")] = (element.get("href"), element.get("media-type", ""))
            elif name == "itemref" and element.get("idref"):
                spine.append(element.get("idref"))
        chapters = []
        for idref in spine:
            if idref not in manifest:
                continue
            href, media_type = manifest[idref]
            path = self._resolve(base, href)
            if media_type in _CHAPTER_MEDIA_TYPES or path.lower().endswith((".xhtml", ".html", ".htm")):
                chapters.append(path)
        return chapters

    def _check_drm(self, archive: zipfile.ZipFile) -> None:
        if _ENCRYPTION not in archive.namelist():
            return
        encrypted = set()
        for element in self._xml(archive, _ENCRYPTION).iter():
            if _local(element.tag) == "CipherReference" and element.get("URI"):
                encrypted.add(self._resolve("", element.get("URI")))
        # Font obfuscation also lists files here; only encrypted chapters mean DRM.
        if encrypted.intersection(self.chapters):
            raise IngestError(
                f"'{self.name}' is DRM-protected (its chapters are encrypted); only DRM-free EPUBs can be read"
            )

    def blocks(self, ctx: ReadContext) -> Iterator[Block]:
        builder = BlockBuilder()
        total = max(1, sum(self._sizes))
        done_compressed = 0
        invalid_bytes = 0
        with open_zip(self.source.path, self.name, _LABEL) as archive:
            for number, (path, size) in enumerate(zip(self.chapters, self._sizes, strict=True), 1):
                try:
                    with archive.open(path) as handle:
                        first = handle.read(_READ_BYTES)
                        decoder = TextDecoder(sniff_markup_encoding(first))
                        yield from markup_blocks(
                            _decoded(handle, first, decoder),
                            builder,
                            name=self.name,
                            page=number,
                            bytes_done=lambda: ctx.raw.bytes_done,
                            include_title=False,
                        )
                except (zipfile.BadZipFile, zlib.error, EOFError, OSError):
                    raise damaged(self.name, _LABEL) from None
                invalid_bytes += decoder.invalid_bytes
                done_compressed += size
                done = self.source.size_bytes * done_compressed // total
                ctx.raw.advance_to(done)
                block = builder.take(done)
                if block is not None:
                    yield block
        if self._missing:
            ctx.warn(f"{len(self._missing)} chapter file(s) listed in the book are missing and were skipped")
        if invalid_bytes:
            ctx.warn(f"{invalid_bytes:,} invalid bytes replaced")


def _decoded(handle, first: bytes, decoder: TextDecoder) -> Iterator[str]:
    yield decoder.decode(first)
    while data := handle.read(_READ_BYTES):
        yield decoder.decode(data)
    yield decoder.decode(b"", final=True)
