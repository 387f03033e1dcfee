"""The API reference's docstrings: reStructuredText roles become code spans, formulas keep their brackets."""

from attnlab.tools.docstrings import markdown_docstring


def test_roles_become_code_spans() -> None:
    text = ":func:`~attnlab.reuse.tiny_llama`, :class:`attnlab.model.GPT` and :py:meth:`Trainer.fit`"
    assert markdown_docstring(text) == "`tiny_llama`, `attnlab.model.GPT` and `Trainer.fit`"


def test_roles_inside_literals_are_examples() -> None:
    assert markdown_docstring("write ``:func:`name``` for a link") == "write ``:func:`name``` for a link"


def test_angle_brackets_outside_code_are_text() -> None:
    out = markdown_docstring("c_ij = <o_i, a_ij v~_j> / ||o_i||^2, kept in ``x<y`` and `a<b`")
    assert out == "c_ij = &lt;o_i, a_ij v~_j> / ||o_i||^2, kept in ``x<y`` and `a<b`"


def test_every_library_docstring_loses_its_roles() -> None:
    import importlib
    import pkgutil
    import re

    import attnlab

    raw = re.compile(r":[a-z]+:`")
    code = re.compile(r"``.+?``|`[^`]+`", re.DOTALL)
    for info in pkgutil.walk_packages(attnlab.__path__, "attnlab."):
        if info.name.endswith("__main__"):
            continue  # a command line, run on import
        module = importlib.import_module(info.name)
        for doc in [module.__doc__] + [getattr(v, "__doc__", None) for v in vars(module).values()]:
            if doc:
                assert not raw.search(code.sub("", markdown_docstring(doc))), info.name
