"""Every relative link in README.md and docs/*.md leads somewhere (issue 44
moved most of the README into docs/, one file a subject, and the pages
link to each other by file and heading). A link to a repository file must
name one that exists, inside the checkout; a link with an anchor
(`docs/models.md#on-the-cpu`, `#settings`) must name a heading of that
Markdown file, as GitHub makes anchors from headings: lower case, spaces
to `-`, punctuation but `-` and `_` dropped, `-1`, `-2`... for repeats.
Links in code (indented or fenced blocks, `code spans`) are text, not
links; links to other sites are not followed (no network here)."""
import glob
import os
import re
import sys

sys.path.insert(0, os.path.dirname(__file__))
from clitest import check, failures  # noqa: E402

SRC = os.path.realpath(os.environ.get("SCULPT_SOURCE_DIR",
                                      os.path.join(os.path.dirname(__file__), "..", "..")))


def prose_lines(text):
    """(line number, line, line with code spans blanked) outside code blocks."""
    fence, prev_blank, in_indented = None, True, False
    for n, line in enumerate(text.split("\n"), 1):
        m = re.match(r"^ {0,3}(`{3,}|~{3,})", line)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            continue
        if m:
            fence = m.group(1)
            continue
        # An indented code block starts after a blank line; a list item's
        # indented continuation does not (it follows text).
        if line.startswith("    ") and (prev_blank or in_indented):
            in_indented = True
            continue
        in_indented = False
        prev_blank = not line.strip()
        yield n, line, re.sub(r"(`+).+?\1", lambda s: "\0" * len(s.group(0)), line)


def slugify(heading):
    """GitHub's anchor for a heading's text."""
    heading = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    heading = heading.strip().lower()
    heading = re.sub(r"[^\w\- ]", "", heading)
    return heading.replace(" ", "-")


def anchors(path):
    """The anchors GitHub gives the headings of a Markdown file."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    seen, out = {}, set()
    for _, line, _ in prose_lines(text):
        m = re.match(r"^ {0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$", line)
        if not m:
            continue
        slug = slugify(m.group(1))
        k = seen.get(slug, 0)
        seen[slug] = k + 1
        out.add(slug if k == 0 else "%s-%d" % (slug, k))
    return out


LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
pages = [os.path.join(SRC, "README.md")] + sorted(glob.glob(os.path.join(SRC, "docs", "*.md")))
anchor_cache = {}
links = 0


def check_link(page, n, target):
    """One relative link of a page: its file exists inside the checkout,
    and its anchor is a heading of that file."""
    where = "%s:%d: (%s)" % (os.path.relpath(page, SRC), n, target)
    path, _, anchor = target.partition("#")
    dest = os.path.realpath(os.path.join(os.path.dirname(page), path)) if path else page
    if dest != SRC and not dest.startswith(SRC + os.sep):
        return check(False, "%s leads out of the repository" % where)
    if not os.path.exists(dest):
        return check(False, "%s: no such file %s" % (where, os.path.relpath(dest, SRC)))
    if not anchor:
        return
    if not dest.endswith(".md"):
        return check(False, "%s: an anchor into a file that is not Markdown" % where)
    if dest not in anchor_cache:
        anchor_cache[dest] = anchors(dest)
    check(anchor in anchor_cache[dest], "%s: %s has no heading with the anchor #%s (it has: %s)"
          % (where, os.path.relpath(dest, SRC), anchor, " ".join(sorted(anchor_cache[dest]))))


check(os.path.exists(pages[0]), "README.md is missing")
for page in pages:
    if not os.path.exists(page):
        continue
    with open(page, encoding="utf-8") as f:
        text = f.read()
    for n, line, blanked in prose_lines(text):
        for m in LINK.finditer(line):
            if blanked[m.start()] == "\0":
                continue  # it starts inside a code span: text, not a link
            target = m.group(1)
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):
                continue  # another site (http:, https:, mailto:)
            links += 1
            check_link(page, n, target)

check(links >= 20, "only %d relative links found in README.md and docs/: the parser is broken"
      % links)
print("%d pages, %d relative links checked" % (len(pages), links))
sys.exit(1 if failures else 0)
