"""No page of the built site asks the internet for anything.

Lab rooms and the Vagrant box may have no internet: a page that asks for a web font or a CDN script
there waits for a timeout, then falls back. Every page of the built site is loaded in headless
Chromium (Playwright driving the system's Chromium), served from 127.0.0.1 with the rest of the
network blocked: every host name but 127.0.0.1 resolves to nothing, and any request that leaves the
site is aborted. Every request is recorded, those of the pages' workers too (Material's search
runs in one), and the test fails on any that leaves the site and on any file of the site that is
missing. A self-test proves the recorder catches a web font, an image, a module import and a
worker's fetch.
"""

import tempfile

import pytest

playwright = pytest.importorskip("playwright.sync_api", reason="playwright not installed (pip install -e .[dev])")

# Chromium itself resolves no name but the site's: what a page asks of the internet fails at once
# instead of waiting for a network that a lab room may not have.
NO_NETWORK = "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"


def load_all(base: str, paths: list[str], chromium: list[str]) -> dict[str, list[str]]:
    """Load each page of `base` in turn; per page, the requests that left it and the local misses."""
    site = base + "/"
    found: dict[str, list[str]] = {}
    seen: list[str] = []
    current = [""]

    def note(page_path: str, what: str) -> None:
        found.setdefault(page_path, []).append(what)

    def on_request(req) -> None:
        seen.append(req.url)
        if not req.url.startswith((site, "data:", "blob:", "about:")):
            note(current[0], f"external: {req.url}")

    def on_response(resp) -> None:
        if resp.url.startswith(site) and resp.status >= 400:
            note(current[0], f"missing ({resp.status}): {resp.url}")

    with tempfile.TemporaryDirectory() as profile, playwright.sync_playwright() as pw:
        ctx = pw.chromium.launch_persistent_context(profile, executable_path=chromium[0], headless=True,
                                                    args=[*chromium[1:], NO_NETWORK])
        try:
            ctx.on("request", on_request)
            ctx.on("response", on_response)
            ctx.route(lambda url: not url.startswith(site), lambda route: route.abort("internetdisconnected"))
            page = ctx.new_page()
            for path in paths:
                current[0] = path
                page.goto(site + path, wait_until="load", timeout=60_000)
                page.wait_for_load_state("networkidle", timeout=60_000)
        finally:
            ctx.close()
    found["(every request)"] = seen
    return found


@pytest.mark.slow  # the built site (about a minute) and every page in Chromium (39 s measured on a loaded host)
def test_no_page_requests_anything_outside_the_site(built, site_url, chromium):
    pages = sorted(p.relative_to(built).as_posix() for p in built.rglob("*.html"))
    assert len(pages) > 10, pages
    found = load_all(site_url, pages, chromium)
    seen = found.pop("(every request)")
    # The recorder sees the pages' workers: Material's search worker fetches the index.
    assert any(u.endswith("/search/search_index.json") for u in seen), "search worker's fetch not seen"
    assert not found, "\n".join(f"{page}: {w}" for page, whats in found.items() for w in whats)
    print(f"{len(pages)} pages, {len(seen)} requests, all to the site itself")


SELF_TEST_PAGE = """<!doctype html><html><head>
<link rel="stylesheet" href="https://fonts.googleapis.com/css?family=Roboto">
</head><body><p>self-test</p>
<img src="http://example.com/logo.png">
<img src="missing.png">
<script>new Worker("worker.js");</script>
<script type="module">import("https://cdnjs.cloudflare.com/ajax/libs/mermaid/11.10.0/mermaid.esm.min.mjs").catch(() => {});</script>
</body></html>
"""


def test_the_recorder_catches_fonts_images_imports_and_workers(tmp_path, chromium, serve):
    (tmp_path / "index.html").write_text(SELF_TEST_PAGE)
    (tmp_path / "worker.js").write_text('fetch("https://cdn.example.org/data.json").catch(() => {});\n')
    url = serve(tmp_path)
    found = load_all(url, ["index.html"], chromium)
    got = "\n".join(found.get("index.html", []))
    for expected in ("external: https://fonts.googleapis.com/css", "external: http://example.com/logo.png",
                     "external: https://cdnjs.cloudflare.com/", "external: https://cdn.example.org/data.json",
                     "missing (404): " + url + "/missing.png"):
        assert expected in got, f"{expected!r} not caught:\n{got}"
