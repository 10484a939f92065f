"""A SCORM package of a lesson, in either edition a platform takes: 1.2 (the default) or 2004 4th
edition (edition=2004). The package is the self-contained HTML file (app/export/standalone.py),
which reports to the platform through static/js/scorm.js, zipped with the imsmanifest.xml that
names it as the package's one SCO. Platforms that take packages but not iframes can host it.

The manifest names no schema files: a package that named them would have to hold them (ADL's,
not ours to ship), and platforms read the manifest without them. Every file is stored readable
by all (0644), as a platform that unpacks it onto a web server needs."""

import io
import re
import zipfile
from xml.sax.saxutils import escape

LESSON_FILE = "index.html"
MAX_TITLE = 200
EDITIONS = ("1.2", "2004")
FILE_MODE = 0o644  # rw-r--r--
STORED_AT = (2026, 1, 1, 0, 0, 0)  # one date for every file: the same lesson makes the same zip

# Per edition: the manifest's namespaces, its schema version and the name of the SCO attribute.
_EDITION = {
    "1.2": (
        'xmlns="http://www.imsproject.org/xsd/imscp_rootv1p1p2" xmlns:adlcp="http://www.adlnet.org/xsd/adlcp_rootv1p2"',
        "1.2",
        "adlcp:scormtype",
    ),
    "2004": (
        'xmlns="http://www.imsglobal.org/xsd/imscp_v1p1" xmlns:adlcp="http://www.adlnet.org/xsd/adlcp_v1p3"',
        "2004 4th Edition",
        "adlcp:scormType",
    ),
}

MANIFEST = """<?xml version="1.0" encoding="UTF-8"?>
<manifest identifier="valuegraph-lesson" version="1.0" {namespaces}>
  <metadata>
    <schema>ADL SCORM</schema>
    <schemaversion>{version}</schemaversion>
  </metadata>
  <organizations default="valuegraph-organization">
    <organization identifier="valuegraph-organization">
      <title>{title}</title>
      <item identifier="valuegraph-item" identifierref="valuegraph-resource" isvisible="true">
        <title>{title}</title>
      </item>
    </organization>
  </organizations>
  <resources>
    <resource identifier="valuegraph-resource" type="webcontent" {sco}="sco" href="{lesson}">
      <file href="{lesson}"/>
    </resource>
  </resources>
</manifest>
"""


# What XML 1.0 cannot hold (control characters, lone surrogates, U+FFFE and U+FFFF): a title's copy in the
# manifest and in the lesson's HTML holds U+FFFD in their place.
NOT_IN_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def lesson_title(expression: str, title: str | None) -> str:
    """The title given, or the program's first line; at most MAX_TITLE characters, each one XML can hold."""
    chosen = (
        title or ""
    ).strip() or f"valuegraph: {expression.strip().splitlines()[0] if expression.strip() else 'a lesson'}"
    return NOT_IN_XML.sub("\ufffd", chosen[:MAX_TITLE])


def manifest(title: str, edition: str = "1.2") -> str:
    namespaces, version, sco = _EDITION[edition]
    return MANIFEST.format(namespaces=namespaces, version=version, sco=sco, title=escape(title), lesson=LESSON_FILE)


def scorm_package(lesson_html: bytes | str, title: str, edition: str = "1.2") -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as package:
        for name, text in (("imsmanifest.xml", manifest(title, edition)), (LESSON_FILE, lesson_html)):
            info = zipfile.ZipInfo(name, date_time=STORED_AT)
            info.external_attr = (0o100000 | FILE_MODE) << 16  # a regular file, rw-r--r--
            info.compress_type = zipfile.ZIP_DEFLATED
            package.writestr(info, text)
    return buffer.getvalue()
