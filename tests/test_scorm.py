"""The SCORM 1.2 package: a zip holding imsmanifest.xml and the self-contained lesson."""

import io
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
    assert 'data-scorm="true"' in lesson and "LMSInitialize" in lesson and "a = 2; b = 3; L = a * b + a" in lesson


async def test_the_title_defaults_to_the_program_and_errors_are_placed(client):
    answer = await client.get("/export/scorm", params={"expression": "x = 3\ny = x * x"})
    manifest = ET.fromstring(zipfile.ZipFile(io.BytesIO(answer.content)).read("imsmanifest.xml"))
    assert manifest.find("cp:organizations/cp:organization/cp:title", NS).text == "valuegraph: x = 3"
    bad = await client.post("/export/scorm", json={"expression": "a = (2"})
    assert bad.status_code == 400 and bad.json()["detail"]["column"] == 5
    long_title = await client.get("/export/scorm", params={"expression": "1", "title": "t" * 201})
    assert long_title.status_code == 422


async def test_the_plain_html_export_does_not_report_to_a_platform(client):
    answer = await client.post("/export/html", json={"expression": PROGRAM})
    assert 'data-scorm="true"' not in answer.text
