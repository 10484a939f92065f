"""The SCORM packages, 1.2 and 2004 4th edition: a zip holding imsmanifest.xml and the
self-contained lesson, every file readable by all, naming no file it does not hold."""

import io
import json
import re
import xml.etree.ElementTree as ET
import zipfile

import pytest

pytestmark = pytest.mark.anyio
NS = {"cp": "http://www.imsproject.org/xsd/imscp_rootv1p1p2", "adlcp": "http://www.adlnet.org/xsd/adlcp_rootv1p2"}
PROGRAM = "a = 2; b = 3; L = a * b + a"


async def test_the_package_holds_a_manifest_naming_the_lesson_as_its_sco(client):
    answer = await client.post("/export/scorm?title=Chain%20rule%20%3C1%3E", json={"expression": PROGRAM})
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "application/zip"
    assert 'filename="valuegraph-scorm.zip"' in answer.headers["content-disposition"]
    package = zipfile.ZipFile(io.BytesIO(answer.content))
    assert sorted(package.namelist()) == ["imsmanifest.xml", "index.html"]
    manifest = ET.fromstring(package.read("imsmanifest.xml"))
    assert manifest.find("cp:metadata/cp:schemaversion", NS).text == "1.2"
    assert manifest.find("cp:metadata/cp:schema", NS).text == "ADL SCORM"
    organization = manifest.find("cp:organizations/cp:organization", NS)
    assert organization.find("cp:title", NS).text == "Chain rule <1>"  # escaped in the XML, read back whole
    item = organization.find("cp:item", NS)
    resource = manifest.find("cp:resources/cp:resource", NS)
    assert item.get("identifierref") == resource.get("identifier")
    assert resource.get(f"{{{NS['adlcp']}}}scormtype") == "sco" and resource.get("href") == "index.html"
    lesson = package.read("index.html").decode()
    assert 'data-scorm="1.2"' in lesson and "LMSInitialize" in lesson and "a = 2; b = 3; L = a * b + a" in lesson


async def test_the_title_defaults_to_the_program_and_errors_are_placed(client):
    answer = await client.get("/export/scorm", params={"expression": "x = 3\ny = x * x"})
    manifest = ET.fromstring(zipfile.ZipFile(io.BytesIO(answer.content)).read("imsmanifest.xml"))
    assert manifest.find("cp:organizations/cp:organization/cp:title", NS).text == "valuegraph: x = 3"
    bad = await client.post("/export/scorm", json={"expression": "a = (2"})
    assert bad.status_code == 400 and bad.json()["detail"]["column"] == 5
    long_title = await client.get("/export/scorm", params={"expression": "1", "title": "t" * 201})
    assert long_title.status_code == 422


@pytest.mark.parametrize(
    ("query", "program", "title"),
    [
        ("", "a = 2  # \ud800 a lone surrogate\nL = a * a", "valuegraph: a = 2  # \ufffd a lone surrogate"),
        ("?title=x%00y%01z%EF%BF%BE", "a = 2; L = a * a", "x\ufffdy\ufffdz\ufffd"),
        ("", "a = 2  # x\x01y\nL = a * a", "valuegraph: a = 2  # x\ufffdy"),
    ],
)
async def test_a_title_holds_only_characters_xml_can_hold(client, query, program, title):
    body = json.dumps({"expression": program})  # a lone surrogate as JSON writes it: \\ud800
    answer = await client.post("/export/scorm" + query, content=body, headers={"content-type": "application/json"})
    assert answer.status_code == 200, answer.text[:200]
    package = zipfile.ZipFile(io.BytesIO(answer.content))
    manifest = ET.fromstring(package.read("imsmanifest.xml"))  # well-formed XML
    assert manifest.find("cp:organizations/cp:organization/cp:title", NS).text == title
    assert f"<title>{title}</title>" in package.read("index.html").decode()


async def test_the_plain_html_export_does_not_report_to_a_platform(client):
    answer = await client.post("/export/html", json={"expression": PROGRAM})
    assert "data-scorm" not in answer.text


NS_2004 = {"cp": "http://www.imsglobal.org/xsd/imscp_v1p1", "adlcp": "http://www.adlnet.org/xsd/adlcp_v1p3"}


async def test_the_2004_package_names_its_edition_and_its_sco(client):
    answer = await client.get("/export/scorm", params={"expression": PROGRAM, "edition": "2004", "title": "Chain"})
    assert answer.status_code == 200
    package = zipfile.ZipFile(io.BytesIO(answer.content))
    manifest = ET.fromstring(package.read("imsmanifest.xml"))
    assert manifest.find("cp:metadata/cp:schemaversion", NS_2004).text == "2004 4th Edition"
    assert manifest.find("cp:organizations/cp:organization/cp:title", NS_2004).text == "Chain"
    resource = manifest.find("cp:resources/cp:resource", NS_2004)
    assert resource.get(f"{{{NS_2004['adlcp']}}}scormType") == "sco" and resource.get("href") == "index.html"
    assert 'data-scorm="2004"' in package.read("index.html").decode()
    assert (await client.get("/export/scorm", params={"expression": "1", "edition": "1.3"})).status_code == 422


@pytest.mark.parametrize("edition", ["1.2", "2004"])
async def test_every_file_is_readable_by_all_and_every_file_named_is_held(client, edition):
    answer = await client.get("/export/scorm", params={"expression": PROGRAM, "edition": edition})
    package = zipfile.ZipFile(io.BytesIO(answer.content))
    for info in package.infolist():
        assert (info.external_attr >> 16) & 0o777 == 0o644, info.filename
    text = package.read("imsmanifest.xml").decode()
    named = set(re.findall(r"[\w./-]+\.(?:xsd|html|xml)\b", re.sub(r"https?://\S+", "", text)))
    assert named <= set(package.namelist()), named - set(package.namelist())
    assert "schemaLocation" not in text


async def test_the_html_export_takes_a_title(client):
    answer = await client.get("/export/html", params={"expression": PROGRAM, "title": "Chain rule <1>"})
    assert "<title>Chain rule &lt;1&gt;</title>" in answer.text
    posted = await client.post("/export/html?title=Lesson%202", json={"expression": PROGRAM})
    assert "<title>Lesson 2</title>" in posted.text
    assert "<title>valuegraph</title>" in (await client.post("/export/html", json={"expression": PROGRAM})).text
    assert (await client.get("/export/html", params={"expression": "1", "title": "t" * 201})).status_code == 422
