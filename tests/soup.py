"""Reading rendered pages in tests: a section's element, a tag's words."""

from bs4 import BeautifulSoup, Tag
from fastapi.testclient import TestClient


def section_element(soup: BeautifulSoup, section_id: str) -> Tag:
    """The element around the heading ``section_id`` (its section)."""
    heading = soup.find(id=section_id)
    assert isinstance(heading, Tag), section_id
    parent = heading.parent
    assert isinstance(parent, Tag)
    return parent


def text(tag: Tag) -> str:
    """The tag's text, whitespace collapsed."""
    return " ".join(tag.get_text(" ", strip=True).split())


def page_soup(client: TestClient, path: str = "/") -> BeautifulSoup:
    """The page at ``path``, which must answer 200, parsed."""
    response = client.get(path)
    assert response.status_code == 200, response.text[:500]
    return BeautifulSoup(response.text, "html.parser")
