"""The library's docstrings as the site's API reference renders them: a Griffe extension (loaded by
mkdocstrings, ``attnlab.tools.site``) that turns the reStructuredText roles the docstrings use into Markdown
and keeps angle brackets of formulas as text.

- ``:func:`~attnlab.metrics.rollout``` and every other role (``:class:``, ``:meth:``, ``:mod:``, ``:data:``,
  ``:attr:``, ``:math:``, ...) becomes a code span of its target (``rollout``: the last part where the target
  starts with ``~``, as Sphinx shows it);
- a ``<`` outside code spans becomes ``&lt;``, so that ``<o_i, a_ij v~_j>`` in a formula is shown, not taken
  for an HTML tag and swallowed.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:py:)?[a-z]+:`(~?)([^`]+)`")
_LITERAL = re.compile(r"(``.+?``)", re.DOTALL)  # a double-backtick literal: kept whole, roles in it too
_CODE = re.compile(r"(``.+?``|`[^`\n]+`)", re.DOTALL)


def _role(found: re.Match[str]) -> str:
    short, target = found.group(1), found.group(2).strip()
    shown = target.rsplit(".", 1)[-1] if short else target
    return f"`{shown}`"


def markdown_docstring(text: str) -> str:
    """``text`` (a docstring) with its reStructuredText roles (outside double-backtick literals) as Markdown
    code spans and every ``<`` outside code spans escaped."""
    literals = _LITERAL.split(text)
    text = "".join(p if i % 2 else _ROLE.sub(_role, p) for i, p in enumerate(literals))
    parts = _CODE.split(text)  # odd indices: code spans, kept as they are
    return "".join(p if i % 2 else p.replace("<", "&lt;") for i, p in enumerate(parts))


class SphinxRoles(griffe.Extension):
    """Rewrites every loaded object's docstring with :func:`markdown_docstring`."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = markdown_docstring(obj.docstring.value)
