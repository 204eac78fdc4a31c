"""The guides a user reads: the rule book, the HTTP API, checking a table's record.

Markdown files shipped with the package (ledger/web/guides/*.md), rendered to pages at
/docs/<guide>. The rule book's sections and numbered rules get anchors (`#rule-6`,
`#rule-6.3`), so an error that names a rule links to its text (`rule_url`) and quotes it
(`rule_text`): the rule a refusal cites is readable by the person refused.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.token import Token
from markupsafe import Markup

GUIDES = {
    "rules": "The rule book",
    "http": "The HTTP API",
    "hash-chain": "Checking a table's record",
}
LABELS = {"rules": "Rules", "http": "HTTP API", "hash-chain": "Checking a record"}  # the menu
_SECTION = re.compile(r"^(\d+)\.\s")


def source(guide: str) -> str:
    return resources.files("ledger.web").joinpath(f"guides/{guide}.md").read_text("utf-8")


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


_CODE = re.compile(r"[a-z][a-z0-9_]*")
PROBLEM_TYPES = "problem-types"  # the HTTP guide's section that explains every `code`


def _anchor_codes(tokens: list[Token], start: int) -> list[str]:
    """In a list item of the problem types, the codes it opens with (`a`, `b`: ...) become
    `<code id="problem-a">`: each code's own anchor, which its problems' `type` names."""
    inline = next(t for t in tokens[start:] if t.type == "inline")
    codes: list[str] = []
    for n, child in enumerate(inline.children or []):
        if child.type == "text" and ":" in child.content:
            break
        if child.type == "code_inline" and _CODE.fullmatch(child.content):
            codes.append(child.content)
            html = Token("html_inline", "", 0)
            html.content = f'<code id="problem-{child.content}">{child.content}</code>'
            inline.children[n] = html  # type: ignore[index]
    return codes


@cache
def render(guide: str) -> tuple[Markup, dict[str, str]]:
    """The guide as HTML, and the plain text of each numbered rule (the rule book) or the
    codes the problem types explain (the HTTP guide: code -> "")."""
    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    tokens = md.parse(source(guide))
    section: str | None = None
    heading = ""
    depth = 0  # nesting of lists: only a section's top-level numbered items are rules
    texts: dict[str, str] = {}
    open_items: list[tuple[str, int]] = []  # (rule id, index of its first inline token)
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open":
            title = tokens[i + 1].content
            m = _SECTION.match(title) if tok.tag == "h2" else None
            if tok.tag == "h2":
                section = m.group(1) if m else None
                heading = _slug(title)
            tok.attrSet("id", f"rule-{m.group(1)}" if m and guide == "rules" else _slug(title))
            if m and guide == "rules":
                texts[m.group(1)] = title[m.end():]
        elif tok.type in ("ordered_list_open", "bullet_list_open"):
            depth += 1
        elif tok.type in ("ordered_list_close", "bullet_list_close"):
            depth -= 1
        elif (tok.type == "list_item_open" and guide == "rules" and section is not None
              and depth == 1 and tok.info):
            rid = f"{section}.{tok.info}"
            tok.attrSet("id", f"rule-{rid}")
            open_items.append((rid, i))
        elif tok.type == "list_item_open" and guide == "http" and heading == PROBLEM_TYPES:
            texts.update(dict.fromkeys(_anchor_codes(tokens, i), ""))
    for rid, start in open_items:
        words = []
        for tok in tokens[start + 1:]:
            if tok.type == "list_item_close" and tok.level == tokens[start].level:
                break
            if tok.type == "inline":
                words.append(re.sub(r"[*`]", "", tok.content))
        texts[rid] = " ".join(" ".join(words).split())
    html = md.renderer.render(tokens, md.options, {})
    return Markup(html), texts  # noqa: S704 - markdown-it escapes (html: False)


def rule(number: str) -> dict[str, Any]:
    """`rule_url` and, when the rule book numbers it, `rule_text` for a rule like "6.3"."""
    out: dict[str, Any] = {"rule_url": f"/docs/rules#rule-{number}"}
    text = render("rules")[1].get(number)
    if text:
        out["rule_text"] = text
    return out


def problem_type(code: str, rule: str | None = None) -> str:
    """Where a problem's `type` points, as a path: its rule in the rule book when it cites
    one, else the code's entry among the HTTP guide's problem types (that section when a
    code has no entry of its own)."""
    if rule is not None:
        return f"/docs/rules#rule-{rule}"
    if code in render("http")[1]:
        return f"/docs/http#problem-{code}"
    return f"/docs/http#{PROBLEM_TYPES}"
