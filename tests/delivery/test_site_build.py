"""`mkdocs build --strict` passes, and the built site leaks no solution text and no hidden test.

Secrets come from each master in solutions/: the solution-only lines of the autograder's solution
notebook (cells Otter tags `otter_assign_solution_cell`, minus what the student notebook shows
anyway) and every hidden test case in the autograder zip. Every file of the built site is scanned
as text (HTML with tags stripped, so syntax highlighting cannot hide a line). A self-test proves
the scanner does find them in the solution notebook.
"""

import ast
import html
import json
import re
import subprocess
import tempfile
from pathlib import Path

import nbformat
import pytest

from mptcplab.grading import autograder

pytestmark = pytest.mark.slow  # builds the whole site with MkDocs (about a minute)

REPO = Path(__file__).resolve().parents[2]
MIN_LEN = 16  # shorter lines ("x = 1", "return df") are too generic to call a leak


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _lines(code: str) -> set[str]:
    out = set()
    for line in code.splitlines():
        line = re.sub(r"^(>>>|\.\.\.)\s?", "", line.strip())
        line = re.sub(r"#\s*SOLUTION\s*$", "", line).strip()
        if line.startswith("#") or line.startswith('"""') or len(_norm(line)) < MIN_LEN:
            continue
        out.add(_norm(line))
    return out


def secrets_of(master: Path, build: Path) -> dict[str, set[str]]:
    ag = autograder.autograder_for(master, build)
    public = _norm("\n".join(c.source for c in nbformat.read(build / master.stem / "student" / master.name, 4).cells))
    guide = REPO / "labs" / master.stem / "README.md"
    public += _norm(guide.read_text()) if guide.exists() else ""
    sol_nb = nbformat.read(build / master.stem / "autograder" / master.name, 4)
    solution = set()
    for c in sol_nb.cells:
        if "otter_assign_solution_cell" in c.metadata.get("tags", []):
            solution |= {ln for ln in _lines(c.source) if ln not in public}
    hidden = set()
    for src in ag.tests().values():
        hidden |= {ln for code in hidden_cases(src) for ln in _lines(code) if ln not in public}
    return {"solution": solution, "hidden": hidden}


def hidden_cases(src: str) -> list[str]:
    """The code of each hidden case of one Otter test file, in either of Otter's formats: OK format
    (a `test` dict of doctest cases) or exception-based (functions decorated `@test_case(hidden=True)`)."""
    tree = ast.parse(src)
    cases = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            for deco in node.decorator_list:
                if isinstance(deco, ast.Call) and any(k.arg == "hidden" and getattr(k.value, "value", False)
                                                      for k in deco.keywords):
                    cases.append(ast.get_source_segment(src, node))
    if cases or "OK_FORMAT = False" in src:
        return cases
    g: dict = {}
    exec(src, g)
    return [case["code"] for case in g["test"]["suites"][0]["cases"] if case.get("hidden")]


def site_text(site: Path) -> str:
    parts = []
    for f in site.rglob("*"):
        if not f.is_file() or f.suffix in (".png", ".jpg", ".gz", ".woff", ".woff2", ".ico", ".svg"):
            continue
        text = f.read_text(errors="replace")
        if f.suffix == ".html":
            text = html.unescape(re.sub(r"<[^>]+>", "", text))
        elif f.suffix == ".json":
            try:
                text = json.dumps(json.loads(text), ensure_ascii=False)
                text = text.encode().decode("unicode_escape", errors="replace")
            except ValueError:
                pass
        parts.append(text)
    return _norm("\n".join(parts))


def leaks(corpus: str, secrets: dict[str, set[str]]) -> list[str]:
    return [f"{kind}: {s}" for kind, lines in secrets.items() for s in sorted(lines) if s in corpus]


@pytest.fixture(scope="module")
def all_secrets(tmp_path_factory):
    build = tmp_path_factory.mktemp("assign")
    return {m.stem: secrets_of(m, build) for m in autograder.masters()}


def test_every_guide_and_notebook_has_a_page(built):
    for guide in sorted((REPO / "labs").glob("[0-9][0-9]-*/README.md")):
        assert (built / "labs" / guide.parent.name / "index.html").exists()
    for nb in sorted((REPO / "notebooks").glob("[0-9][0-9]-*.ipynb")):
        page = (built / "notebooks" / nb.stem / "index.html").read_text()
        assert "plotly.min.js" in page
    assert (built / "assets" / "javascripts" / "plotly.min.js").stat().st_size > 1_000_000


def test_a_guide_links_to_the_sites_own_pages(built):
    """A guide's link to a page in site/ is a link in the site, anchor kept (not a plain path)."""
    page = (built / "labs" / "01-send-buffer" / "index.html").read_text()
    anchor = "the-send-buffer-why-tcp-overran-it-and-what-the-kit-sets"
    assert f'href="../../setup/uml/#{anchor}"' in page
    assert f'id="{anchor}"' in (built / "setup" / "uml" / "index.html").read_text()


def test_no_solution_or_hidden_test_in_the_site(built, all_secrets):
    corpus = site_text(built)
    found = {lab: leaks(corpus, s) for lab, s in all_secrets.items()}
    assert not any(found.values()), found


def test_scanner_finds_secrets_in_the_solution_notebook(all_secrets, tmp_path):
    """The leak scan can fail: the autograder's solution notebook, rendered to text, trips it."""
    if not all_secrets:
        pytest.skip("no master notebooks yet")
    for lab, secrets in all_secrets.items():
        sol = REPO / "build" / "assign" / lab / "autograder" / f"{lab}.ipynb"
        sol = sol if sol.exists() else next((tmp_path.parent).rglob(f"autograder/{lab}.ipynb"))
        corpus = _norm(json.dumps(json.loads(sol.read_text()), ensure_ascii=False).encode().decode("unicode_escape"))
        if secrets["solution"] or secrets["hidden"]:
            assert leaks(corpus, secrets), lab


def test_figures_draw_in_a_headless_browser(built, site_url, chromium):
    pages = sorted((built / "notebooks").glob("*/index.html"))
    if not pages:
        pytest.skip("no student notebooks yet")
    for page in pages:
        with tempfile.TemporaryDirectory() as profile:
            url = f"{site_url}/notebooks/{page.parent.name}/"
            dom = subprocess.run([*chromium, f"--user-data-dir={profile}",
                                  "--virtual-time-budget=15000", "--dump-dom", url],
                                 capture_output=True, text=True, timeout=180).stdout
        divs = dom.count('class="mlab-plotly')
        drawn = dom.count('class="mlab-plotly js-plotly-plot')
        assert divs and drawn == divs, f"{url}: {drawn} of {divs} Plotly figures drawn"
        # Drawn as wide as the text column (Material's is at most ~770 px in a 1280 px window;
        # the default headless window is 800 px), never at a fixed 900 or 1300 px.
        widths = [int(w) for w in re.findall(r'<svg class="main-svg"[^>]*? width="(\d+)"', dom)]
        assert widths and max(widths) <= 800, f"{url}: figure widths {sorted(set(widths))}"


def test_no_build_paths_in_the_site(built):
    """Pages and the search index must not carry the build machine's checkout path."""
    found = [str(f.relative_to(built)) for f in built.rglob("*") if f.is_file() and f.suffix in (".html", ".json", ".js", ".xml")
             and str(REPO) in f.read_text(errors="replace")]
    assert not found, found


def test_no_graded_answers_or_ellipsis_in_notebook_pages(built):
    """Lab 3's Q5 asks for each run's model predictions: no page may carry them (they used to sit in
    the Plotly data of the model figures); unanswered cells show no `Ellipsis` result."""
    import pandas as pd

    runs = pd.read_csv(REPO / "solutions" / "results" / "lab3" / "runs.csv")
    answers = {repr(float(v)) for col in ("model1", "model2") for v in runs[col].dropna()}
    for page in (built / "notebooks").glob("*/index.html"):
        text = page.read_text()
        assert not [a for a in answers if a in text], page
        assert "Ellipsis" not in html.unescape(re.sub(r"<[^>]+>", "", text)), page


def test_an_unanswered_cells_result_is_recognised_in_every_shape():
    """`...`, tuples of them and dicts of them (Lab 1's Q11 asks for {"schedulers": ..., "held": ...})
    are left out of a notebook page; a result with any real value is kept."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("site_hooks", REPO / "site" / "_hooks" / "site_hooks.py")
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    unanswered = ["Ellipsis", "(Ellipsis, Ellipsis)", "[Ellipsis]",
                  "({'schedulers': Ellipsis, 'held': Ellipsis}, {'schedulers': Ellipsis, 'held': Ellipsis})"]
    answered = ["{'schedulers': 3145728, 'held': Ellipsis}", "12.5", "'Ellipsis'"]
    assert all(hooks.ELLIPSIS.fullmatch(t) for t in unanswered)
    assert not any(hooks.ELLIPSIS.fullmatch(t) for t in answered)


def test_the_cached_notebooks_key_covers_every_lab_module(tmp_path, monkeypatch):
    """A change to any module a notebook runs, deep in a lab's package or in the kit it imports,
    executes the notebook again for the site (the key once covered only src/mptcplab/labs/*.py)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("site_hooks", REPO / "site" / "_hooks" / "site_hooks.py")
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    files = ["src/mptcplab/labs/lab9/analysis.py", "src/mptcplab/labs/lab9/cc/loader.py",
             "src/mptcplab/labs/lab9/experiment.toml", "src/mptcplab/judge/stats.py"]
    for rel in files:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x = 1\n")
    nb = tmp_path / "09-lab.ipynb"
    nb.write_text("{}")
    monkeypatch.setattr(hooks, "REPO", tmp_path)
    keys = {hooks.fingerprint(nb)}
    for rel in files:
        (tmp_path / rel).write_text("x = 2\n")
        keys.add(hooks.fingerprint(nb))
    assert len(keys) == len(files) + 1
