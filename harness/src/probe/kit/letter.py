#!/usr/bin/env python3
"""Writes letter.docx, the kit's Word document: a few paragraphs and a small table, so that a
tool that works on a paragraph or a table by index finds one. Standard library only
(zipfile); the zip has fixed dates so that the file is the same each time it is made.

    python3 letter.py   # in this directory
"""
import zipfile
from xml.sax.saxutils import escape

W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
DATE = (2026, 1, 5, 10, 0, 0)

PARAGRAPHS = [
    "Meeting notes",
    "The release moves to Thursday.",
    "Dana checks the build on Wednesday.",
]
TABLE = [["Item", "Owner"], ["Release", "Dana"], ["Build", "Sam"]]
CLOSING = "Next meeting: Friday."


def paragraph(text):
    return f"<w:p><w:r><w:t>{escape(text)}</w:t></w:r></w:p>"


def table(rows):
    grid = "".join("<w:gridCol w:w=\"2400\"/>" for _ in rows[0])
    body = "".join(
        "<w:tr>" + "".join(f"<w:tc><w:tcPr><w:tcW w:w=\"2400\" w:type=\"dxa\"/></w:tcPr>{paragraph(cell)}</w:tc>" for cell in row) + "</w:tr>"
        for row in rows
    )
    return f"<w:tbl><w:tblPr><w:tblW w:w=\"0\" w:type=\"auto\"/></w:tblPr><w:tblGrid>{grid}</w:tblGrid>{body}</w:tbl>"


DOCUMENT = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
    f'<w:document xmlns:w="{W}"><w:body>'
    + "".join(paragraph(p) for p in PARAGRAPHS)
    + table(TABLE)
    + paragraph(CLOSING)
    + "</w:body></w:document>"
)
CONTENT_TYPES = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
    '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
    '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
    '<Default Extension="xml" ContentType="application/xml"/>'
    '<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>'
    "</Types>"
)
RELS = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
    '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
    '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/>'
    "</Relationships>"
)

with zipfile.ZipFile("letter.docx", "w", zipfile.ZIP_DEFLATED) as out:
    for name, text in [("[Content_Types].xml", CONTENT_TYPES), ("_rels/.rels", RELS), ("word/document.xml", DOCUMENT)]:
        out.writestr(zipfile.ZipInfo(name, DATE), text)
