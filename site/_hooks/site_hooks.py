"""MkDocs hooks: the lab guides and student notebooks come from their single sources at build time.

- `labs/NN-name/README.md` becomes the page `labs/NN-name.md` (read, never copied into site/);
  relative links that leave the guide are rewritten to site pages (other guides, notebooks, the
  pages in site/) or to plain repo paths.
- `notebooks/NN-name.ipynb` (the Otter student notebook) is executed on the shipped reference
  results (`solutions/results/labN/`, via MPTCPLAB_LABn_RESULTS), cached under build/site-notebooks/,
  and rendered by mkdocs-jupyter. Error outputs and `Ellipsis` results or prints (the unanswered `...`
  cells), the outputs of Otter cells and of cells tagged `mlab-answers` (they show the kit's own
  answers to graded questions, e.g. Lab 3's model predictions) are dropped; the build machine's
  checkout path is cut from every output (it would reach pages and the search index). Plotly
  figures become plain divs, as wide as their column, drawn by a local plotly.min.js once the
  page has loaded, which is what keeps them from rendering blank (no renderer or CDN dependence).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import uuid
from pathlib import Path

from mkdocs.plugins import event_priority
from mkdocs.structure.files import File

REPO = Path(__file__).resolve().parents[2]
CACHE = REPO / "build" / "site-notebooks"
PLOTLY_JS = "assets/javascripts/plotly.min.js"
# An unanswered cell's result or print: `...`, `(..., ...)`, or dicts of them (`{"held": ...}`, Lab 1's Q11)
_KEY = r"(?:'[^']*'|\"[^\"]*\")\s*:\s*"
ELLIPSIS = re.compile(rf"[\s(\[{{]*(?:{_KEY})?Ellipsis(?:[\s,}}{{]*(?:{_KEY})?Ellipsis)*[\s,)\]}}]*")
LINK = re.compile(r"(!?)\[([^\]]*)\]\(([^)\s]+)([^)]*)\)")


def lab_guides() -> list[Path]:
    return sorted(p for p in (REPO / "labs").glob("[0-9][0-9]-*/README.md"))


def student_notebooks() -> list[Path]:
    return sorted((REPO / "notebooks").glob("[0-9][0-9]-*.ipynb"))


def _title(text: str, fallback: str) -> str:
    m = re.search(r"^#\s+(.+)$", text, re.M)
    return m[1].strip() if m else fallback


def on_config(config):
    labs = [{_title(p.read_text(), p.parent.name): f"labs/{p.parent.name}.md"} for p in lab_guides()]
    nbs = []
    for p in student_notebooks():
        cells = json.loads(p.read_text()).get("cells", [])
        first_md = next(("".join(c["source"]) for c in cells if c["cell_type"] == "markdown"), "")
        nbs.append({_title(first_md, p.stem): f"notebooks/{p.name}"})
    nav = list(config["nav"] or [])
    at = next((i + 1 for i, item in enumerate(nav) if isinstance(item, dict) and "Setup" in item), len(nav))
    extra = ([{"Lab guides": labs}] if labs else []) + ([{"Notebooks (reference results)": nbs}] if nbs else [])
    config["nav"] = nav[:at] + extra + nav[at:]
    config["extra_javascript"].append(PLOTLY_JS)
    return config


def _rewrite_links(text: str, guide: Path, rendered: set[str]) -> str:
    """Links inside a guide point at repo files; map them to pages, else show the path as code."""
    def sub(m: re.Match) -> str:
        bang, label, target, rest = m.groups()
        if re.match(r"^([a-z]+:|#|/)", target):
            return m[0]
        path, _, anchor = target.partition("#")
        resolved = (guide.parent / path).resolve()
        try:
            rel = resolved.relative_to(REPO).as_posix()
        except ValueError:
            return f"{label} (`{target}`)" if not bang else f"`{target}`"
        page = None
        if re.fullmatch(r"labs/\d\d-[^/]+/(README\.md)?", rel + ("/" if resolved.is_dir() else "")):
            page = f"{rel.split('/')[1]}.md"
        elif rel.startswith("notebooks/") and rel in rendered:
            page = f"../{rel}"
        elif rel.startswith("site/") and rel.endswith(".md") and resolved.is_file():  # a page of this site
            page = f"../{rel.removeprefix('site/')}"
        if page:
            return f"{bang}[{label}]({page}{'#' + anchor if anchor else ''}{rest})"
        return f"`{rel}`" if bang else f"{label} (`{rel}`)"

    return LINK.sub(sub, text)


@event_priority(50)  # before mkdocs-jupyter's on_files, so it picks up the notebooks added here
def on_files(files, config):
    rendered = {f"notebooks/{p.name}" for p in student_notebooks()}
    for guide in lab_guides():
        text = _rewrite_links(guide.read_text(), guide, rendered)
        files.append(File.generated(config, f"labs/{guide.parent.name}.md", content=text))
    for nb in student_notebooks():
        # A plain File rooted in the cache (mkdocs-jupyter's wrapper cannot read generated Files).
        root = executed(nb).parents[1]
        files.append(File(f"notebooks/{nb.name}", src_dir=str(root), dest_dir=config["site_dir"],
                          use_directory_urls=config["use_directory_urls"]))
    import plotly

    js = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    files.append(File.generated(config, PLOTLY_JS, abs_src_path=str(js)))
    return files


def fingerprint(nb: Path) -> str:
    """The cached execution's key: the notebook, this hook (clean() below shapes the cached copy),
    the reference results it reads and the kit's code and parameters it runs: every module of the
    package at any depth (a lab's own, in its package's subfolders too, and what it imports)."""
    h = hashlib.sha256(nb.read_bytes() + Path(__file__).read_bytes())
    kit = sorted(p for p in (REPO / "src" / "mptcplab").rglob("*") if p.suffix in (".py", ".toml"))
    for p in sorted((REPO / "solutions" / "results").rglob("*")) + kit:
        if p.is_file():
            h.update(p.as_posix().encode() + p.read_bytes())
    return h.hexdigest()[:16]


def executed(nb: Path) -> Path:
    """The student notebook run on the reference results, cleaned for the site (cached)."""
    out = CACHE / f"{nb.stem}-{fingerprint(nb)}" / "notebooks" / nb.name
    if out.exists():
        return out
    import nbformat
    from nbclient import NotebookClient

    node = nbformat.read(nb, as_version=4)
    saved = dict(os.environ)
    for n in range(1, 10):  # notebooks honour MPTCPLAB_LABn_RESULTS: the site shows the reference run
        ref = REPO / "solutions" / "results" / f"lab{n}"
        if ref.is_dir():
            os.environ[f"MPTCPLAB_LAB{n}_RESULTS"] = str(ref)
    try:
        NotebookClient(node, timeout=600, allow_errors=True, kernel_name="python3",
                       resources={"metadata": {"path": str(nb.parent)}}).execute()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    clean(node)
    for old in CACHE.glob(f"{nb.stem}-*/notebooks/{nb.name}"):
        old.unlink()
    out.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(node, out)
    return out


def clean(node) -> None:
    # Otter's own cells (init, checks) say nothing on a rendered page; tags would show as badges.
    node.cells = [c for c in node.cells if not (c.cell_type == "code" and
                                                ("grader.check(" in c.source or "otter.Notebook(" in c.source))]
    for cell in node.cells:
        answers = "mlab-answers" in cell.metadata.pop("tags", [])
        if cell.cell_type != "code":
            continue
        outs = []
        for o in [] if answers else cell.outputs:
            data = o.get("data", {})
            printed = o.get("text", "-") if o.output_type == "stream" else "-"  # `print(x)` of an unanswered x
            if o.output_type == "error" or ELLIPSIS.fullmatch(data.get("text/plain", "-")) or ELLIPSIS.fullmatch(printed):
                continue
            if "application/vnd.plotly.v1+json" in data:
                o.data = {"text/html": plotly_div(data["application/vnd.plotly.v1+json"])}
            outs.append(_without_paths(o))
        cell.outputs = outs


def _without_paths(node):
    """The checkout's absolute path cut from every string of an output (it is the build machine's)."""
    prefix = str(REPO) + "/"
    if isinstance(node, str):
        return node.replace(prefix, "").replace(str(REPO), ".")
    if isinstance(node, list):
        return [_without_paths(x) for x in node]
    if isinstance(node, dict):
        for k in list(node):
            node[k] = _without_paths(node[k])
    return node


def plotly_div(fig: dict) -> str:
    div = f"mlab-fig-{uuid.uuid4().hex[:10]}"
    layout = {k: v for k, v in fig.get("layout", {}).items() if k not in ("width", "autosize")}  # the column decides
    height = int(layout.get("height") or 450)
    legend = layout.setdefault("legend", {})
    if "orientation" not in legend:  # a legend beside the plot would take half of a ~570 px column
        legend.update(orientation="h", yanchor="top", y=-0.22, xanchor="left", x=0)
        height += 90
        layout["height"] = height
    payload = json.dumps({"data": fig.get("data", []), "layout": layout}).replace("</", "<\\/")
    return (f'<div id="{div}" class="mlab-plotly" style="width:100%;height:{height}px"></div>\n'
            f'<script>document.addEventListener("DOMContentLoaded", function () {{\n'
            f'  var fig = {payload};\n'
            f'  Plotly.newPlot("{div}", fig.data, fig.layout, {{responsive: true, displaylogo: false}});\n'
            f'}});</script>')
