"""One package per paper. ``PAPERS`` is the registry the runner and the planner find them through: the
notebook name (``notebooks/<name>.ipynb``) and the module whose ``configure(**parameters)`` returns its
experiment."""

PAPERS: dict[str, str] = {
    "xsa": "attnlab.papers.xsa",
    "qk_speed": "attnlab.papers.qk_speed",
    "contribution_weights": "attnlab.papers.contribution_weights",
    "sd_routing": "attnlab.papers.sd_routing",
    "synthesis": "attnlab.papers.synthesis",
}
