"""Safe XML parsing for VOC annotation files: expat with every DTD refused.

XML is read with expat and a parser that refuses any DTD: a ``<!DOCTYPE`` (and with it every
entity declaration, internal or external) is an error before anything in it is expanded or
fetched, so "billion laughs" and external-entity files cannot cost memory or read files.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
import xml.parsers.expat as expat
from typing import Any

from deteval.errors import InputError
from deteval.io._text import shorten

__all__ = ["parse_xml"]

_ANNOTATION = "a VOC annotation XML file"


class _Refused(Exception):
    """Raised from inside the expat handlers to stop at a DTD construct."""


def parse_xml(raw: bytes, where: str) -> tuple[ET.Element, dict]:
    """Parse XML that may not contain a DTD; return the root element and element -> line.

    Parameters
    ----------
    raw : bytes
        The file's bytes (any encoding expat knows, declared in the XML prolog).
    where : str
        File name for messages.

    Returns
    -------
    root : xml.etree.ElementTree.Element
    lines : dict
        Line number of each element's start tag (for messages).

    Raises
    ------
    InputError
        ``<file>:<line>:<column>: malformed XML (...)``, or a DOCTYPE / entity declaration
        (refused before anything in it is expanded or fetched).

    Examples
    --------
    >>> root, _ = parse_xml(b"<annotation><object><name>cat</name></object></annotation>", "a.xml")
    >>> root.find("object/name").text
    'cat'
    >>> try:
    ...     parse_xml(b'<!DOCTYPE a [<!ENTITY x "y">]><a>&x;</a>', "bad.xml")
    ... except InputError as exc:
    ...     print(str(exc)[:59])
    bad.xml:1: refused a DOCTYPE declaration (<!DOCTYPE a ...>)
    """
    builder = ET.TreeBuilder()
    lines: dict = {}
    parser = expat.ParserCreate()
    parser.buffer_text = True

    def start(tag: str, attrs: dict) -> None:
        lines[builder.start(tag, attrs)] = parser.CurrentLineNumber

    def refuse_doctype(name: str, *_: Any) -> None:
        raise _Refused(f"a DOCTYPE declaration (<!DOCTYPE {name} ...>)")

    def refuse_entity(name: str, *_: Any) -> None:
        raise _Refused(f"an entity declaration ({name})")

    def refuse_external(*_: Any) -> int:
        raise _Refused("an external entity reference")

    parser.StartElementHandler = start
    parser.EndElementHandler = builder.end
    parser.CharacterDataHandler = builder.data
    parser.StartDoctypeDeclHandler = refuse_doctype
    parser.EntityDeclHandler = refuse_entity
    parser.UnparsedEntityDeclHandler = refuse_entity
    parser.ExternalEntityRefHandler = refuse_external
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    try:
        parser.Parse(raw, True)
    except expat.ExpatError as exc:
        raise InputError(
            f"{where}:{exc.lineno}:{exc.offset + 1}: malformed XML "
            f"({expat.ErrorString(exc.code)}); expected {_ANNOTATION}"
        ) from None
    except (LookupError, ValueError) as exc:  # an unknown or multi-byte declared encoding
        declared = re.search(rb"""encoding\s*=\s*["']([^"']{0,40})""", raw[:200])
        shown = shorten(declared.group(1).decode("ascii", "replace")) if declared else "unknown"
        raise InputError(
            f"{where}:1: XML declares the encoding {shown}, which cannot be read ({exc}); "
            f"expected UTF-8 (or another single-byte encoding): save it as UTF-8"
        ) from None
    except _Refused as exc:
        raise InputError(
            f"{where}:{parser.CurrentLineNumber}: refused {exc}: DTDs and entities "
            f"are not read (they can expand to gigabytes or read files outside the "
            f"dataset); expected plain XML without <!DOCTYPE>, found one"
        ) from None
    return builder.close(), lines
