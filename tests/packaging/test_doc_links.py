"""Every relative link of the README and of docs/*.md leads to a file of the repository, and an anchor
to a heading of that file (issue 41: the README is a map into docs/, so a moved or renamed page must
not leave it pointing at nothing)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")  # [text](target) and ![alt](target)
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text())
    return {slug(m.group(1)) for m in re.finditer(r"^#{1,6} (.+)$", text, re.MULTILINE)}


def relative_links(page: Path) -> list[str]:
    text = FENCE.sub("", page.read_text())  # a shell block's `$(...)` is no link
    return [t for t in LINK.findall(text) if not re.match(r"[a-z][a-z0-9+.-]*:", t)]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_leads_somewhere(page: Path) -> None:
    broken = []
    for target in relative_links(page):
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists() or not dest.resolve().is_relative_to(REPO):
            broken.append(f"{target}: no file {dest.relative_to(REPO) if dest.is_relative_to(REPO) else dest}")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: no heading #{anchor} in {dest.relative_to(REPO)}")
    assert not broken, f"{page.relative_to(REPO)}: " + "; ".join(broken)


def test_the_readme_links_each_topic_page() -> None:
    """The README is the map: every page of docs/ is reachable from it."""
    linked = {Path(t.partition("#")[0]).name for t in relative_links(REPO / "README.md")}
    missing = [p.name for p in PAGES[1:] if p.name not in linked]
    assert not missing, f"README.md links none of: {', '.join(missing)}"


def test_slug_as_github_makes_it() -> None:
    assert slug("Why is my job not running? `pykueue explain`") == "why-is-my-job-not-running-pykueue-explain"
    assert slug("Install on a cluster") == "install-on-a-cluster"
