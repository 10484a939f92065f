"""A SCORM 1.2 package of a lesson: the self-contained HTML file (app/export.py), which reports
to the platform through static/js/scorm.js, zipped with the imsmanifest.xml that names it as
the package's one SCO. Platforms that take packages but not iframes can host it."""

import io
import zipfile
from xml.sax.saxutils import escape

LESSON_FILE = "index.html"
MAX_TITLE = 200

MANIFEST = """<?xml version="1.0" encoding="UTF-8"?>
<manifest identifier="valuegraph-lesson" version="1.0"
          xmlns="http://www.imsproject.org/xsd/imscp_rootv1p1p2"
          xmlns:adlcp="http://www.adlnet.org/xsd/adlcp_rootv1p2"
          xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
          xsi:schemaLocation="http://www.imsproject.org/xsd/imscp_rootv1p1p2 imscp_rootv1p1p2.xsd
                              http://www.imsglobal.org/xsd/imsmd_rootv1p2p1 imsmd_rootv1p2p1.xsd
                              http://www.adlnet.org/xsd/adlcp_rootv1p2 adlcp_rootv1p2.xsd">
  <metadata>
    <schema>ADL SCORM</schema>
    <schemaversion>1.2</schemaversion>
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
    <resource identifier="valuegraph-resource" type="webcontent" adlcp:scormtype="sco" href="{lesson}">
      <file href="{lesson}"/>
    </resource>
  </resources>
</manifest>
"""


def lesson_title(expression: str, title: str | None) -> str:
    """The title given, or the program's first line; at most MAX_TITLE characters."""
    chosen = (
        title or ""
    ).strip() or f"valuegraph: {expression.strip().splitlines()[0] if expression.strip() else 'a lesson'}"
    return chosen[:MAX_TITLE]


def scorm_package(lesson_html: str, title: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as package:
        package.writestr("imsmanifest.xml", MANIFEST.format(title=escape(title), lesson=LESSON_FILE))
        package.writestr(LESSON_FILE, lesson_html)
    return buffer.getvalue()
